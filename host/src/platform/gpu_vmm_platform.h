// SPDX-License-Identifier: MIT
// The Platform of a GPU with driver virtual-memory management (CUDA, HIP), written once
// over a GpuDriverApi table: reservations, physical allocations shared as POSIX file
// descriptors, mappings with device access, synchronous copies and fills, host-mapped and
// plain device allocations.
#ifndef CCO_HOST_PLATFORM_GPU_VMM_PLATFORM_H_
#define CCO_HOST_PLATFORM_GPU_VMM_PLATFORM_H_

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "platform/gpu_driver_api.h"
#include "platform/platform.h"

namespace cco {
namespace gpu {

class GpuVmmPlatform : public Platform {
 public:
  // `api` is fully resolved and the driver initialised (it sees at least one device).
  explicit GpuVmmPlatform(const GpuDriverApi& api) : api_(api) {}

  ccoPlatform_t kind() const override { return api_.kind; }
  const char* name() const override { return api_.platformName; }

  Status CurrentDevice(int* device) override;
  Status GetDeviceInfo(int device, DeviceInfo* info) override;
  Status DeviceCount(int* count) override;
  Status BusId(int device, std::string* busId) override;

  Status Reserve(int device, size_t size, size_t alignment, uint64_t* va) override;
  Status Release(int device, uint64_t va, size_t size) override;

  Status Create(int device, size_t size, MemHandle* handle) override;
  Status Destroy(int device, MemHandle handle) override;
  Status Export(int device, MemHandle handle, int* fd) override;
  Status Import(int device, int fd, size_t size, MemHandle* handle) override;

  Status Reference(int device, MemHandle handle, MemHandle* reference, bool* owned) override;
  Status Map(int device, uint64_t va, size_t size, MemHandle handle, size_t offset) override;
  // Learned once per process by trying it (the drivers' documentation and behaviour have
  // differed across versions): a mapping of a handle's second granule.
  bool MapsAtOffset(int device) override;
  Status Unmap(int device, uint64_t va, size_t size) override;

  Status Memset(int device, uint64_t va, int value, size_t size) override;
  Status CopyToDevice(int device, uint64_t dst, const void* src, size_t size) override;
  Status CopyFromDevice(int device, void* dst, uint64_t src, size_t size) override;
  // A stream write of the word on the control stream (made by the communicator's creation,
  // which zeroes its resources through it), not a copy from pageable memory: the GDA proxy
  // marks failed rings so while kernels run, and a stream write into pinned memory does not
  // wait for a kernel another thread of the process waits for (tools/perf/blocking_call_probe.cu;
  // into device memory, as here, the probe has not measured it).
  Status WriteDeviceWord(int device, uint64_t address, uint64_t value) override;

  Status HostMappedAlloc(int device, size_t size, void** host, uint64_t* deviceAddress) override;
  Status HostMappedFree(int device, void* host) override;
  Status HostRegister(int device, void* host, size_t size, uint64_t* deviceAddress) override;
  Status HostUnregister(int device, void* host) override;

  Status StreamCreate(int device, uint64_t* stream) override;
  Status StreamDestroy(int device, uint64_t stream) override;
  Status CopyOnStream(int device, uint64_t stream, uint64_t dst, uint64_t src, size_t size) override;
  Status CopiesOnStream(int device, uint64_t stream, const uint64_t* dsts, const uint64_t* srcs, const uint64_t* sizes,
                        int count) override;
  Status CopiesThenWrites(int device, uint64_t stream, const uint64_t* dsts, const uint64_t* srcs,
                          const uint64_t* sizes, int copies, const uint64_t* addresses, const uint64_t* values,
                          int writes) override;
  Status StreamWriteValue64(int device, uint64_t stream, uint64_t address, uint64_t value) override;
  Status StreamWriteValues64(int device, uint64_t stream, const uint64_t* addresses, const uint64_t* values,
                             int count) override;
  Status StreamSynchronize(int device, uint64_t stream) override;
  Status ExportDmaBuf(int device, uint64_t va, size_t size, int* fd, uint64_t* offset) override;

  Status DeviceAlloc(int device, size_t size, uint64_t* va) override;
  Status DeviceFree(int device, uint64_t va) override;

 private:
  // A reservation the driver placed without the requested alignment, redone larger so an
  // aligned start fits inside: what has to be given back on Release.
  struct PaddedReservation {
    uint64_t base;
    size_t size;
  };

  // The failure of driver entry `call` with result `result` on `arguments`.
  template <class Fn>
  Status Failed(const DriverEntry<Fn>& call, DriverResult result, const std::string& arguments) const {
    return DriverCallFailed(call.name, arguments, api_.describeError(result));
  }

  // `device` bound to the calling thread for one scope, the caller's binding given back at
  // its end (every method runs inside one).
  class DeviceScope;
  // An ordinal this process's driver knows.
  Status CheckOrdinal(int device);
  Status ReserveAligned(size_t size, size_t alignment, uint64_t* va);

  bool ProbeOffsetMapping(int device);
  // The device's address of host memory the driver maps (allocated or registered); the caller
  // has its device bound.
  Status DeviceAddressOf(void* host, size_t size, uint64_t* deviceAddress);
  // Runs `work(stream)` on the device's control stream and waits for that stream alone.
  // Fills and uploads go there, never to the legacy default stream and never followed by a
  // context-wide synchronize: either would wait for every kernel of the process, including
  // one of another rank (ranks as threads) that waits for this rank's call to return.
  template <class Work> Status OnControlStream(int device, const char* what, Work work);
  // Whether api_.copiesAsync can take these copies in one call, and that call (with the writes
  // behind them; none for CopiesOnStream).
  bool CopiesGoAsOne(const uint64_t* sizes, int count) const;
  Status CopiesAsOne(int device, uint64_t stream, const uint64_t* dsts, const uint64_t* srcs, const uint64_t* sizes,
                     int copies, const uint64_t* addresses, const uint64_t* values, int writes);
  // The device's scratch for prepared copies (api_.prepareStreamCopies), made on first use.
  Status CopyScratch(int device, uint64_t* va);

  const GpuDriverApi api_;
  std::once_flag offsetProbe_;
  bool mapsAtOffset_ = false;
  std::mutex controlMutex_;  // held across one piece of control work: the stream is shared
  // By device and by whose work it is (the proxy's runs in a context of its own,
  // platform/proxy_scope.h, and a stream belongs to the context it was made in): made on
  // first use, kept for the process.
  std::map<std::pair<int, bool>, void*> controlStreams_;
  std::mutex paddedMutex_;
  std::map<uint64_t, PaddedReservation> padded_;  // by the aligned address handed out
  std::mutex deviceAllocMu_;
  std::map<uint64_t, size_t> deviceAllocs_;  // DeviceAlloc's mappings: their sizes, by address
  std::mutex scratchMu_;
  std::map<int, uint64_t> copyScratch_;  // by device, kept for the process
};

}  // namespace gpu
}  // namespace cco

#endif  // CCO_HOST_PLATFORM_GPU_VMM_PLATFORM_H_
