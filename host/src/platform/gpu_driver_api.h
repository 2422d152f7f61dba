// SPDX-License-Identifier: MIT
// The GPU driver calls the virtual-memory platform is built from, as a table of entry
// points. CUDA and HIP fill it from their libraries (cuda_platform.cc, hip_platform.cc);
// GpuVmmPlatform holds every piece of logic on top of it. The table speaks CUDA's shapes
// (addresses and allocation handles as 64-bit integers, results as int with 0 = success):
// the CUDA entries are the driver's own functions and HIP adapts its spelling to them.
//
// No CUDA or HIP header is included anywhere: the few driver types are declared here, with
// the layouts of cuda.h (HIP mirrors them for these calls), checked by static_asserts.
#ifndef CCO_HOST_PLATFORM_GPU_DRIVER_API_H_
#define CCO_HOST_PLATFORM_GPU_DRIVER_API_H_

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "cco/cco.h"
#include "common/status.h"

namespace cco {
namespace gpu {

using DriverResult = int;  // CUresult / hipError_t
constexpr DriverResult kDriverSuccess = 0;

using DeviceAddress = uint64_t;     // CUdeviceptr / hipDeviceptr_t
using AllocationHandle = uint64_t;  // CUmemGenericAllocationHandle / hipMemGenericAllocationHandle_t

// CUmemLocation / hipMemLocation.
struct MemLocation {
  int type;
  int id;
};

// CUmemAllocationProp / hipMemAllocationProp.
struct MemAllocationProp {
  int type;
  int requestedHandleTypes;
  MemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};

// CUmemAccessDesc / hipMemAccessDesc.
struct MemAccessDesc {
  MemLocation location;
  int flags;
};

// The driver reads these structs by their cuda.h layout; a mismatch would be silent
// memory corruption, so pin every offset.
static_assert(sizeof(MemLocation) == 8, "CUmemLocation is 8 bytes");
static_assert(sizeof(MemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");
static_assert(offsetof(MemAllocationProp, requestedHandleTypes) == 4, "CUmemAllocationProp layout");
static_assert(offsetof(MemAllocationProp, location) == 8, "CUmemAllocationProp layout");
static_assert(offsetof(MemAllocationProp, win32HandleMetaData) == 16, "CUmemAllocationProp layout");
static_assert(offsetof(MemAllocationProp, allocFlags) == 24, "CUmemAllocationProp layout");
static_assert(sizeof(MemAccessDesc) == 12, "CUmemAccessDesc is 12 bytes");
static_assert(offsetof(MemAccessDesc, flags) == 8, "CUmemAccessDesc layout");

// Enum values shared by cuda.h and HIP's headers.
constexpr int kMemAllocationTypePinned = 1;           // CU_MEM_ALLOCATION_TYPE_PINNED
constexpr int kMemHandleTypePosixFileDescriptor = 1;  // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
constexpr int kMemLocationTypeDevice = 1;             // CU_MEM_LOCATION_TYPE_DEVICE
constexpr int kMemAccessProtReadWrite = 3;            // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
constexpr int kMemAllocGranularityMinimum = 0;        // CU_MEM_ALLOC_GRANULARITY_MINIMUM
constexpr unsigned kHostAllocPortable = 1;            // CU_MEMHOSTALLOC_PORTABLE, hipHostMallocPortable
constexpr unsigned kHostRegisterPortable = 1;         // CU_MEMHOSTREGISTER_PORTABLE, hipHostRegisterPortable
constexpr unsigned kHostRegisterDeviceMap = 2;        // CU_MEMHOSTREGISTER_DEVICEMAP, hipHostRegisterMapped
constexpr unsigned kHostAllocDeviceMap = 2;           // CU_MEMHOSTALLOC_DEVICEMAP, hipHostMallocMapped
constexpr unsigned kStreamNonBlocking = 1;            // CU_STREAM_NON_BLOCKING, hipStreamNonBlocking

// One driver function and the name error messages give it (the symbol it came from).
template <class Fn> struct DriverEntry {
  Fn fn = nullptr;
  const char* name = "";
};

struct GpuDriverApi {
  ccoPlatform_t kind = ccoPlatformCuda;
  const char* platformName = "";  // "cuda", "hip"

  // How the driver spells a result: "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string (*describeError)(DriverResult result) = nullptr;

  // Device binding is where the two drivers differ in kind (CUDA: a primary context per
  // device, current per thread; HIP: hipSetDevice per thread), so it is a pair of hooks with
  // their own error messages rather than raw calls. The library binds a device only for
  // the duration of one of its own calls and gives the caller's binding back afterwards:
  // a library call must never change which device the caller's next kernel launches on.
  // Saves the calling thread's binding in *saved (opaque) and makes `device` current.
  Status (*enterDevice)(int device, uint64_t* saved) = nullptr;
  // Gives back the binding enterDevice saved.
  void (*leaveDevice)(uint64_t saved) = nullptr;
  // The calling thread's device as the driver sees it (0 when none is chosen yet); binds
  // nothing.
  Status (*currentDevice)(int* device) = nullptr;

  DriverEntry<DriverResult (*)(int* count)> deviceCount;
  DriverEntry<DriverResult (*)(char* busId, int length, int device)> pciBusId;
  DriverEntry<DriverResult (*)(size_t* bytes, int device)> totalMemory;
  DriverEntry<DriverResult (*)(size_t* granularity, const MemAllocationProp* prop, int option)> allocationGranularity;

  DriverEntry<DriverResult (*)(DeviceAddress* va, size_t size, size_t alignment, DeviceAddress hint,
                               unsigned long long flags)>
      addressReserve;
  DriverEntry<DriverResult (*)(DeviceAddress va, size_t size)> addressFree;

  DriverEntry<DriverResult (*)(AllocationHandle* handle, size_t size, const MemAllocationProp* prop,
                               unsigned long long flags)>
      memCreate;
  DriverEntry<DriverResult (*)(AllocationHandle handle)> memRelease;
  // The POSIX-file-descriptor flavour only: HIP and CUDA pass the descriptor differently,
  // so each adapts it.
  DriverEntry<DriverResult (*)(int* fd, AllocationHandle handle)> exportFd;
  DriverEntry<DriverResult (*)(AllocationHandle* handle, int fd)> importFd;

  DriverEntry<DriverResult (*)(DeviceAddress va, size_t size, size_t offset, AllocationHandle handle,
                               unsigned long long flags)>
      memMap;
  DriverEntry<DriverResult (*)(DeviceAddress va, size_t size)> memUnmap;
  DriverEntry<DriverResult (*)(DeviceAddress va, size_t size, const MemAccessDesc* desc, size_t count)> memSetAccess;

  DriverEntry<DriverResult (*)(DeviceAddress va, unsigned char value, size_t size)> memsetD8;
  DriverEntry<DriverResult (*)(DeviceAddress va, unsigned char value, size_t size, void* stream)> memsetD8Async;
  DriverEntry<DriverResult (*)(void* dst, DeviceAddress src, size_t size)> copyDtoH;
  // Waits for the calling thread's device to finish its work (cuCtxSynchronize).
  DriverEntry<DriverResult (*)()> synchronize;

  DriverEntry<DriverResult (*)(void** host, size_t size, unsigned flags)> hostAlloc;
  DriverEntry<DriverResult (*)(void* host)> hostFree;
  DriverEntry<DriverResult (*)(DeviceAddress* device, void* host, unsigned flags)> hostDevicePointer;
  // cuMemHostRegister_v2 / hipHostRegister and their undoing. Optional: fn is null where the
  // driver lacks them (Platform::HostRegister is then unsupported).
  DriverEntry<DriverResult (*)(void* host, size_t size, unsigned flags)> hostRegister;
  DriverEntry<DriverResult (*)(void* host)> hostUnregister;

  DriverEntry<DriverResult (*)(void** stream, unsigned flags)> streamCreate;
  DriverEntry<DriverResult (*)(void* stream)> streamDestroy;
  DriverEntry<DriverResult (*)(DeviceAddress dst, DeviceAddress src, size_t size, void* stream)> copyAsync;
  // cuStreamWriteValue64's shape: (stream, address, value, flags).
  DriverEntry<DriverResult (*)(void* stream, DeviceAddress address, uint64_t value, unsigned flags)> streamWriteValue64;
  // 64-bit writes in one submission, in order, each as streamWriteValue64 with flags 0 (an
  // adapter over cuStreamBatchMemOp). Optional: fn is null where the driver lacks it, and the
  // writes go one by one.
  DriverEntry<DriverResult (*)(void* stream, const DeviceAddress* addresses, const uint64_t* values, unsigned count)>
      streamWriteValues64;
  // Copies in few submissions, in no order among themselves, then `writes` 64-bit writes
  // behind all of them, in order, as streamWriteValues64's (CUDA: launches of prepared graphs,
  // cuda_copy_graphs.h, or copies queued by several threads, cuda_copy_lanes.h). Optional: fn
  // is null where the driver lacks it or it is not wanted (CCO_COPY_GRAPHS, CCO_COPY_LANES), and
  // the copies go one by one.
  DriverEntry<DriverResult (*)(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs,
                               const uint64_t* sizes, unsigned count, const DeviceAddress* addresses,
                               const uint64_t* values, unsigned writes)>
      copiesAsync;
  // What copiesAsync needs made for a stream before its first run, made where the stream is,
  // and freed before the stream is destroyed (both null: nothing). scratch: device memory of the
  // kind the runs copy, where copiesTakeScratch says the preparation works within some
  // (cuda_copy_graphs.h); else 0, and none is allocated (the lanes, cuda_copy_lanes.h).
  DriverResult (*prepareStreamCopies)(void* stream, DeviceAddress scratch) = nullptr;
  void (*forgetStreamCopies)(void* stream) = nullptr;
  bool copiesTakeScratch = false;
  DriverEntry<DriverResult (*)(void* stream)> streamSynchronize;
  // cuMemGetHandleForAddressRange / hipMemGetHandleForAddressRange (handle type 1: a
  // dma-buf fd). Optional: fn is null where the driver lacks it.
  DriverEntry<DriverResult (*)(void* handle, DeviceAddress va, size_t size, int type, unsigned long long flags)>
      rangeHandle;
};

// "cuMemCreate(size=4096, device=1) failed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
inline Status DriverCallFailed(const char* call, const std::string& arguments, const std::string& error) {
  return PlatformError(Fmt(call, "(", arguments, ") failed: ", error));
}

}  // namespace gpu
}  // namespace cco

#endif  // CCO_HOST_PLATFORM_GPU_DRIVER_API_H_
