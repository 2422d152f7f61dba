// SPDX-License-Identifier: MIT
#include "platform/gpu_vmm_platform.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "platform/proxy_scope.h"

namespace cco {
namespace gpu {

namespace {

bool IsPowerOfTwo(size_t value) { return value != 0 && (value & (value - 1)) == 0; }

// Addresses and handles read best in hex: "0x7f3a00000000".
std::string Hex(uint64_t value) {
  char text[2 + 16 + 1];
  snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// A word the GPU writes whole must be 8-byte aligned: `call` names who was given `address`.
Status AlignedWord(const char* call, uint64_t address) {
  if (address % sizeof(uint64_t) == 0) return Status::Ok();
  return InvalidArgument(Fmt(call, ": address ", Hex(address), " is not 8-byte aligned"));
}

// The driver's allocation properties for memory on `device` that can travel between
// processes as a POSIX file descriptor.
MemAllocationProp ShareableDeviceMemory(int device) {
  MemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));  // the driver requires every unused field to be zero
  prop.type = kMemAllocationTypePinned;
  prop.requestedHandleTypes = kMemHandleTypePosixFileDescriptor;
  prop.location.type = kMemLocationTypeDevice;
  prop.location.id = device;
  return prop;
}

// Closes a descriptor this platform owns on every path out of the scope.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

// --- devices ---------------------------------------------------------------------------

class GpuVmmPlatform::DeviceScope {
 public:
  DeviceScope(GpuVmmPlatform* platform, int device) : api_(platform->api_) {
    status_ = platform->CheckOrdinal(device);
    if (status_.ok()) status_ = api_.enterDevice(device, &saved_);
    entered_ = status_.ok();
  }
  ~DeviceScope() {
    if (entered_) api_.leaveDevice(saved_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  const Status& status() const { return status_; }

 private:
  const GpuDriverApi& api_;
  Status status_;
  uint64_t saved_ = 0;
  bool entered_ = false;
};

// Binds `device` for the rest of the enclosing scope, or returns why it cannot.
#define CCO_BIND_DEVICE_FOR_SCOPE(device)    \
  DeviceScope device_scope_(this, (device)); \
  CCO_RETURN_IF_ERROR(device_scope_.status())

Status GpuVmmPlatform::CheckOrdinal(int device) {
  int count = 0;
  CCO_RETURN_IF_ERROR(DeviceCount(&count));
  if (device < 0 || device >= count) {
    return InvalidArgument(
        Fmt(api_.platformName, " device ", device, " does not exist (this process sees ", count, ")"));
  }
  return Status::Ok();
}

Status GpuVmmPlatform::CurrentDevice(int* device) {
  if (device == nullptr) return InvalidArgument("CurrentDevice: device is null");
  int current = 0;
  CCO_RETURN_IF_ERROR(api_.currentDevice(&current));
  CCO_RETURN_IF_ERROR(CheckOrdinal(current));
  *device = current;
  return Status::Ok();
}

Status GpuVmmPlatform::DeviceCount(int* count) {
  if (count == nullptr) return InvalidArgument("DeviceCount: count is null");
  DriverResult result = api_.deviceCount.fn(count);
  if (result != kDriverSuccess) return Failed(api_.deviceCount, result, "");
  return Status::Ok();
}

Status GpuVmmPlatform::BusId(int device, std::string* busId) {
  if (busId == nullptr) return InvalidArgument("BusId: busId is null");
  CCO_RETURN_IF_ERROR(CheckOrdinal(device));
  // A device query: it needs no context, and binding one here would create a context on
  // every GPU of the machine (hundreds of milliseconds each).
  char text[64] = {};
  DriverResult result = api_.pciBusId.fn(text, sizeof(text), device);
  if (result != kDriverSuccess) return Failed(api_.pciBusId, result, Fmt("device=", device));
  *busId = text;
  return Status::Ok();
}

Status GpuVmmPlatform::GetDeviceInfo(int device, DeviceInfo* info) {
  if (info == nullptr) return InvalidArgument("GetDeviceInfo: info is null");
  CCO_BIND_DEVICE_FOR_SCOPE(device);

  std::string busId;
  CCO_RETURN_IF_ERROR(BusId(device, &busId));

  size_t totalMemory = 0;
  DriverResult result = api_.totalMemory.fn(&totalMemory, device);
  if (result != kDriverSuccess) return Failed(api_.totalMemory, result, Fmt("device=", device));

  // The minimum granularity, not the recommended one: it is what Create and Map require,
  // and every rank's slice of the symmetric heap is sized in it.
  const MemAllocationProp prop = ShareableDeviceMemory(device);
  size_t granularity = 0;
  result = api_.allocationGranularity.fn(&granularity, &prop, kMemAllocGranularityMinimum);
  if (result != kDriverSuccess) {
    return Failed(api_.allocationGranularity, result, Fmt("device=", device, ", minimum, posix fd"));
  }

  info->ordinal = device;
  info->pciBusId = busId;
  info->totalMemory = totalMemory;
  info->granularity = granularity;
  return Status::Ok();
}

// --- virtual address space -------------------------------------------------------------

Status GpuVmmPlatform::Reserve(int device, size_t size, size_t alignment, uint64_t* va) {
  if (va == nullptr) return InvalidArgument("Reserve: va is null");
  if (size == 0) return InvalidArgument("Reserve: size is 0");
  if (alignment != 0 && !IsPowerOfTwo(alignment)) {
    return InvalidArgument(Fmt("Reserve: alignment ", alignment, " is not a power of two"));
  }
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  return ReserveAligned(size, alignment, va);
}

Status GpuVmmPlatform::ReserveAligned(size_t size, size_t alignment, uint64_t* va) {
  DeviceAddress start = 0;
  DriverResult result = api_.addressReserve.fn(&start, size, alignment, 0, 0);
  if (result != kDriverSuccess) {
    return Failed(api_.addressReserve, result, Fmt("size=", size, ", alignment=", alignment));
  }
  if (alignment == 0 || start % alignment == 0) {
    *va = start;
    return Status::Ok();
  }

  // Some driver versions treat a large alignment as a hint. Reserve enough to hold an
  // aligned range instead, and remember the real reservation for Release.
  result = api_.addressFree.fn(start, size);
  if (result != kDriverSuccess) {
    return Failed(api_.addressFree, result, Fmt("va=", Hex(start), ", size=", size));
  }
  if (size > SIZE_MAX - alignment) {
    return InvalidArgument(Fmt("Reserve: size ", size, " plus alignment ", alignment, " overflows"));
  }
  const size_t paddedSize = size + alignment;
  DeviceAddress base = 0;
  result = api_.addressReserve.fn(&base, paddedSize, 0, 0, 0);
  if (result != kDriverSuccess) {
    return Failed(api_.addressReserve, result,
                  Fmt("size=", paddedSize, " (", size, " padded to align to ", alignment, ")"));
  }
  const uint64_t aligned = (base + alignment - 1) & ~static_cast<uint64_t>(alignment - 1);
  {
    std::lock_guard<std::mutex> lock(paddedMutex_);
    padded_[aligned] = PaddedReservation{base, paddedSize};
  }
  *va = aligned;
  return Status::Ok();
}

Status GpuVmmPlatform::Release(int device, uint64_t va, size_t size) {
  if (va == 0 || size == 0) return InvalidArgument("Release: va or size is 0");
  CCO_BIND_DEVICE_FOR_SCOPE(device);

  uint64_t base = va;
  size_t reservedSize = size;
  bool wasPadded = false;
  {
    std::lock_guard<std::mutex> lock(paddedMutex_);
    auto it = padded_.find(va);
    if (it != padded_.end()) {
      base = it->second.base;
      reservedSize = it->second.size;
      padded_.erase(it);
      wasPadded = true;
    }
  }
  DriverResult result = api_.addressFree.fn(base, reservedSize);
  if (result != kDriverSuccess) {
    if (wasPadded) {
      // Still reserved: keep the record so that a retry frees the right range.
      std::lock_guard<std::mutex> lock(paddedMutex_);
      padded_[va] = PaddedReservation{base, reservedSize};
    }
    return Failed(api_.addressFree, result, Fmt("va=", Hex(base), ", size=", reservedSize));
  }
  return Status::Ok();
}

// --- physical memory -------------------------------------------------------------------

Status GpuVmmPlatform::Create(int device, size_t size, MemHandle* handle) {
  if (handle == nullptr) return InvalidArgument("Create: handle is null");
  if (size == 0) return InvalidArgument("Create: size is 0");
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  const MemAllocationProp prop = ShareableDeviceMemory(device);
  AllocationHandle created = 0;
  DriverResult result = api_.memCreate.fn(&created, size, &prop, 0);
  if (result != kDriverSuccess) {
    return Failed(api_.memCreate, result, Fmt("size=", size, ", device=", device, ", posix fd"));
  }
  *handle = created;
  return Status::Ok();
}

Status GpuVmmPlatform::Destroy(int device, MemHandle handle) {
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result = api_.memRelease.fn(handle);
  if (result != kDriverSuccess) return Failed(api_.memRelease, result, Fmt("handle=", Hex(handle)));
  return Status::Ok();
}

Status GpuVmmPlatform::Export(int device, MemHandle handle, int* fd) {
  if (fd == nullptr) return InvalidArgument("Export: fd is null");
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  int exported = -1;
  DriverResult result = api_.exportFd.fn(&exported, handle);
  if (result != kDriverSuccess) {
    return Failed(api_.exportFd, result, Fmt("handle=", Hex(handle), ", posix fd"));
  }
  *fd = exported;
  return Status::Ok();
}

Status GpuVmmPlatform::Import(int device, int fd, size_t size, MemHandle* handle) {
  if (fd < 0) return InvalidArgument(Fmt("Import: fd ", fd, " is not a descriptor"));
  // The descriptor is ours from here on, whatever happens: the driver holds its own
  // reference to the memory once the import succeeds.
  FdCloser closer(fd);
  if (handle == nullptr) return InvalidArgument("Import: handle is null");
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  AllocationHandle imported = 0;
  DriverResult result = api_.importFd.fn(&imported, fd);
  if (result != kDriverSuccess) {
    return Failed(api_.importFd, result, Fmt("fd=", fd, ", size=", size, ", posix fd"));
  }
  *handle = imported;
  return Status::Ok();
}

Status GpuVmmPlatform::Reference(int device, MemHandle handle, MemHandle* reference, bool* owned) {
  int fd = -1;
  CCO_RETURN_IF_ERROR(Export(device, handle, &fd));
  // Import closes the descriptor: the reference costs no file descriptor once made.
  CCO_RETURN_IF_ERROR(Import(device, fd, 0, reference));
  *owned = true;
  return Status::Ok();
}

// --- mappings --------------------------------------------------------------------------

Status GpuVmmPlatform::Map(int device, uint64_t va, size_t size, MemHandle handle, size_t offset) {
  if (va == 0 || size == 0) return InvalidArgument("Map: va or size is 0");
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result = api_.memMap.fn(va, size, offset, handle, 0);
  if (result != kDriverSuccess) {
    return Failed(api_.memMap, result,
                  Fmt("va=", Hex(va), ", size=", size, ", offset=", offset, ", handle=", Hex(handle)));
  }
  // A mapping is unusable until access is granted; a range left mapped without it would
  // only fault later, so undo the map on failure.
  MemAccessDesc access;
  memset(&access, 0, sizeof(access));
  access.location.type = kMemLocationTypeDevice;
  access.location.id = device;
  access.flags = kMemAccessProtReadWrite;
  result = api_.memSetAccess.fn(va, size, &access, 1);
  if (result != kDriverSuccess) {
    Status failure =
        Failed(api_.memSetAccess, result, Fmt("va=", Hex(va), ", size=", size, ", device=", device, ", read/write"));
    api_.memUnmap.fn(va, size);
    return failure;
  }
  return Status::Ok();
}

bool GpuVmmPlatform::MapsAtOffset(int device) {
  std::call_once(offsetProbe_, [&] { mapsAtOffset_ = ProbeOffsetMapping(device); });
  return mapsAtOffset_;
}

bool GpuVmmPlatform::ProbeOffsetMapping(int device) {
  // Two granules mapped whole at `whole`, the second alone at `part` (offset g): a byte
  // written through `whole` at g must read back through `part` at 0. A driver that refuses
  // the offset, or maps from the handle's first byte anyway, fails.
  DeviceScope scope(this, device);
  if (!scope.status().ok()) return false;
  const MemAllocationProp prop = ShareableDeviceMemory(device);
  size_t g = 0;
  if (api_.allocationGranularity.fn(&g, &prop, kMemAllocGranularityMinimum) != kDriverSuccess || g == 0) return false;
  AllocationHandle handle = 0;
  if (api_.memCreate.fn(&handle, 2 * g, &prop, 0) != kDriverSuccess) return false;
  DeviceAddress whole = 0, part = 0;
  bool works = false;
  if (api_.addressReserve.fn(&whole, 3 * g, g, 0, 0) == kDriverSuccess) {
    part = whole + 2 * g;
    MemAccessDesc access;
    memset(&access, 0, sizeof(access));
    access.location.type = kMemLocationTypeDevice;
    access.location.id = device;
    access.flags = kMemAccessProtReadWrite;
    const bool mappedWhole = api_.memMap.fn(whole, 2 * g, 0, handle, 0) == kDriverSuccess;
    const bool mappedPart = mappedWhole && api_.memMap.fn(part, g, g, handle, 0) == kDriverSuccess;
    unsigned char seen = 0;
    works = mappedPart && api_.memSetAccess.fn(whole, 3 * g, &access, 1) == kDriverSuccess &&
            api_.memsetD8.fn(whole, 0x11, g) == kDriverSuccess &&
            api_.memsetD8.fn(whole + g, 0xab, g) == kDriverSuccess && api_.synchronize.fn() == kDriverSuccess &&
            api_.copyDtoH.fn(&seen, part, 1) == kDriverSuccess && seen == 0xab;
    if (mappedPart) api_.memUnmap.fn(part, g);
    if (mappedWhole) api_.memUnmap.fn(whole, 2 * g);
    api_.addressFree.fn(whole, 3 * g);
  }
  api_.memRelease.fn(handle);
  return works;
}

Status GpuVmmPlatform::Unmap(int device, uint64_t va, size_t size) {
  if (va == 0 || size == 0) return InvalidArgument("Unmap: va or size is 0");
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result = api_.memUnmap.fn(va, size);
  if (result != kDriverSuccess) {
    return Failed(api_.memUnmap, result, Fmt("va=", Hex(va), ", size=", size));
  }
  return Status::Ok();
}

// --- copies and fills ------------------------------------------------------------------

template <class Work> Status GpuVmmPlatform::OnControlStream(int device, const char* what, Work work) {
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  std::lock_guard<std::mutex> lock(controlMutex_);
  void*& stream = controlStreams_[{device, ProxyWorkScope::Active()}];
  if (stream == nullptr) {
    DriverResult made = api_.streamCreate.fn(&stream, kStreamNonBlocking);
    if (made != kDriverSuccess) {
      stream = nullptr;
      return Failed(api_.streamCreate, made, Fmt("device=", device, ", non-blocking (", what, ")"));
    }
  }
  CCO_RETURN_IF_ERROR(work(stream));
  // The caller (and other processes mapping the same memory) must see the work done.
  DriverResult result = api_.streamSynchronize.fn(stream);
  if (result != kDriverSuccess) return Failed(api_.streamSynchronize, result, Fmt("after ", what));
  return Status::Ok();
}

Status GpuVmmPlatform::Memset(int device, uint64_t va, int value, size_t size) {
  if (size == 0) return Status::Ok();
  if (va == 0) return InvalidArgument("Memset: va is 0");
  return OnControlStream(device, "memset", [&](void* stream) {
    DriverResult result = api_.memsetD8Async.fn(va, static_cast<unsigned char>(value), size, stream);
    if (result != kDriverSuccess)
      return Failed(api_.memsetD8Async, result,
                    Fmt("va=", Hex(va), ", value=", Hex(value & 0xff), ", size=", size, ", device=", device));
    return Status::Ok();
  });
}

Status GpuVmmPlatform::CopyToDevice(int device, uint64_t dst, const void* src, size_t size) {
  if (size == 0) return Status::Ok();
  if (dst == 0 || src == nullptr) return InvalidArgument("CopyToDevice: dst or src is null");
  // Unified addressing: a pageable source is staged by the driver before the call returns.
  return OnControlStream(device, "copy to device", [&](void* stream) {
    DriverResult result = api_.copyAsync.fn(dst, reinterpret_cast<DeviceAddress>(src), size, stream);
    if (result != kDriverSuccess)
      return Failed(api_.copyAsync, result, Fmt("dst=", Hex(dst), ", src=", src, ", size=", size, ", device=", device));
    return Status::Ok();
  });
}

Status GpuVmmPlatform::WriteDeviceWord(int device, uint64_t address, uint64_t value) {
  CCO_RETURN_IF_ERROR(AlignedWord("WriteDeviceWord", address));
  return OnControlStream(device, "device word", [&](void* stream) {
    DriverResult result = api_.streamWriteValue64.fn(stream, address, value, 0);
    if (result != kDriverSuccess)
      return Failed(api_.streamWriteValue64, result,
                    Fmt("address=", Hex(address), ", value=", value, ", device=", device));
    return Status::Ok();
  });
}

Status GpuVmmPlatform::CopyFromDevice(int device, void* dst, uint64_t src, size_t size) {
  if (size == 0) return Status::Ok();
  if (dst == nullptr || src == 0) return InvalidArgument("CopyFromDevice: dst or src is null");
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result = api_.copyDtoH.fn(dst, src, size);
  if (result != kDriverSuccess) {
    return Failed(api_.copyDtoH, result, Fmt("dst=", dst, ", src=", Hex(src), ", size=", size, ", device=", device));
  }
  return Status::Ok();
}

// --- host-mapped and plain device memory -----------------------------------------------

Status GpuVmmPlatform::HostMappedAlloc(int device, size_t size, void** host, uint64_t* deviceAddress) {
  if (host == nullptr || deviceAddress == nullptr) {
    return InvalidArgument("HostMappedAlloc: host or deviceAddress is null");
  }
  if (size == 0) return InvalidArgument("HostMappedAlloc: size is 0");
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  // Portable: every device of the process may use it, not only the one bound now.
  void* allocated = nullptr;
  DriverResult result = api_.hostAlloc.fn(&allocated, size, kHostAllocPortable | kHostAllocDeviceMap);
  if (result != kDriverSuccess) return Failed(api_.hostAlloc, result, Fmt("size=", size, ", portable, mapped"));
  const Status mapped = DeviceAddressOf(allocated, size, deviceAddress);
  if (!mapped.ok()) {
    api_.hostFree.fn(allocated);
    return mapped;
  }
  // Flags kept here (the abort flag) must start clear; the driver does not zero.
  memset(allocated, 0, size);
  *host = allocated;
  return Status::Ok();
}

Status GpuVmmPlatform::DeviceAddressOf(void* host, size_t size, uint64_t* deviceAddress) {
  DeviceAddress mapped = 0;
  const DriverResult result = api_.hostDevicePointer.fn(&mapped, host, 0);
  if (result != kDriverSuccess) return Failed(api_.hostDevicePointer, result, Fmt("host=", host, ", size=", size));
  *deviceAddress = mapped;
  return Status::Ok();
}

Status GpuVmmPlatform::HostMappedFree(int device, void* host) {
  if (host == nullptr) return Status::Ok();
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result = api_.hostFree.fn(host);
  if (result != kDriverSuccess) return Failed(api_.hostFree, result, Fmt("host=", host));
  return Status::Ok();
}

Status GpuVmmPlatform::HostRegister(int device, void* host, size_t size, uint64_t* deviceAddress) {
  if (api_.hostRegister.fn == nullptr)
    return Unsupported(Fmt(api_.platformName, ": the driver cannot register host memory"));
  if (host == nullptr || deviceAddress == nullptr || size == 0)
    return InvalidArgument("HostRegister: host or deviceAddress is null, or size is 0");
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result = api_.hostRegister.fn(host, size, kHostRegisterPortable | kHostRegisterDeviceMap);
  if (result != kDriverSuccess)
    return Failed(api_.hostRegister, result, Fmt("host=", host, ", size=", size, ", portable, mapped"));
  const Status mapped = DeviceAddressOf(host, size, deviceAddress);
  if (!mapped.ok()) api_.hostUnregister.fn(host);
  return mapped;
}

Status GpuVmmPlatform::HostUnregister(int device, void* host) {
  if (api_.hostUnregister.fn == nullptr)
    return Unsupported(Fmt(api_.platformName, ": the driver cannot register host memory"));
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result = api_.hostUnregister.fn(host);
  if (result != kDriverSuccess) return Failed(api_.hostUnregister, result, Fmt("host=", host));
  return Status::Ok();
}

Status GpuVmmPlatform::StreamCreate(int device, uint64_t* stream) {
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  void* created = nullptr;
  DriverResult result = api_.streamCreate.fn(&created, kStreamNonBlocking);
  if (result != kDriverSuccess) return Failed(api_.streamCreate, result, Fmt("device=", device, ", non-blocking"));
  *stream = reinterpret_cast<uint64_t>(created);
  // The stream's prepared copies, made now: never while kernels wait for the stream's work.
  // Where they cannot be, its runs go one copy a call (and the first such run says so).
  uint64_t scratch = 0;
  if (api_.prepareStreamCopies != nullptr && (!api_.copiesTakeScratch || CopyScratch(device, &scratch).ok()))
    (void)api_.prepareStreamCopies(created, scratch);
  return Status::Ok();
}

// One granule of DeviceAlloc's (mapped) memory per device, for the process's life: prepared copy
// nodes move between VMM allocations, not from cuMemAlloc memory to VMM (copy_enqueue_probe).
Status GpuVmmPlatform::CopyScratch(int device, uint64_t* va) {
  std::lock_guard<std::mutex> lock(scratchMu_);
  auto found = copyScratch_.find(device);
  if (found != copyScratch_.end()) {
    *va = found->second;
    return Status::Ok();
  }
  uint64_t at = 0;
  CCO_RETURN_IF_ERROR(DeviceAlloc(device, 1, &at));
  copyScratch_[device] = at;
  *va = at;
  return Status::Ok();
}

Status GpuVmmPlatform::StreamDestroy(int device, uint64_t stream) {
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  if (api_.forgetStreamCopies != nullptr) api_.forgetStreamCopies(reinterpret_cast<void*>(stream));
  DriverResult result = api_.streamDestroy.fn(reinterpret_cast<void*>(stream));
  if (result != kDriverSuccess) return Failed(api_.streamDestroy, result, Fmt("stream=", Hex(stream)));
  return Status::Ok();
}

Status GpuVmmPlatform::CopyOnStream(int device, uint64_t stream, uint64_t dst, uint64_t src, size_t size) {
  if (size == 0) return Status::Ok();
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result = api_.copyAsync.fn(dst, src, size, reinterpret_cast<void*>(stream));
  if (result != kDriverSuccess)
    return Failed(api_.copyAsync, result, Fmt("dst=", Hex(dst), ", src=", Hex(src), ", size=", size));
  return Status::Ok();
}

bool GpuVmmPlatform::CopiesGoAsOne(const uint64_t* sizes, int count) const {
  if (api_.copiesAsync.fn == nullptr || count <= 0) return false;
  for (int i = 0; i < count; ++i)
    if (sizes[i] == 0) return false;  // a copy of no bytes, which a graph node cannot be: one by one, skipped there
  return true;
}

Status GpuVmmPlatform::CopiesAsOne(int device, uint64_t stream, const uint64_t* dsts, const uint64_t* srcs,
                                   const uint64_t* sizes, int copies, const uint64_t* addresses, const uint64_t* values,
                                   int writes) {
  for (int i = 0; i < writes; ++i) CCO_RETURN_IF_ERROR(AlignedWord("CopiesThenWrites", addresses[i]));
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result =
      api_.copiesAsync.fn(reinterpret_cast<void*>(stream), dsts, srcs, sizes, static_cast<unsigned>(copies), addresses,
                          values, static_cast<unsigned>(writes));
  if (result != kDriverSuccess)
    return Failed(api_.copiesAsync, result,
                  Fmt("stream=", Hex(stream), ", ", copies, " copies and ", writes,
                      " writes, the first dst=", Hex(dsts[0]), ", src=", Hex(srcs[0]), ", size=", sizes[0]));
  return Status::Ok();
}

Status GpuVmmPlatform::CopiesOnStream(int device, uint64_t stream, const uint64_t* dsts, const uint64_t* srcs,
                                      const uint64_t* sizes, int count) {
  if (!CopiesGoAsOne(sizes, count)) return Platform::CopiesOnStream(device, stream, dsts, srcs, sizes, count);
  return CopiesAsOne(device, stream, dsts, srcs, sizes, count, nullptr, nullptr, 0);
}

Status GpuVmmPlatform::CopiesThenWrites(int device, uint64_t stream, const uint64_t* dsts, const uint64_t* srcs,
                                        const uint64_t* sizes, int copies, const uint64_t* addresses,
                                        const uint64_t* values, int writes) {
  if (!CopiesGoAsOne(sizes, copies) || writes <= 0)
    return Platform::CopiesThenWrites(device, stream, dsts, srcs, sizes, copies, addresses, values, writes);
  return CopiesAsOne(device, stream, dsts, srcs, sizes, copies, addresses, values, writes);
}

Status GpuVmmPlatform::StreamWriteValue64(int device, uint64_t stream, uint64_t address, uint64_t value) {
  CCO_RETURN_IF_ERROR(AlignedWord("StreamWriteValue64", address));
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  // Flags 0: the write waits for the stream's earlier work and is ordered after its writes.
  DriverResult result = api_.streamWriteValue64.fn(reinterpret_cast<void*>(stream), address, value, 0);
  if (result != kDriverSuccess)
    return Failed(api_.streamWriteValue64, result,
                  Fmt("stream=", Hex(stream), ", address=", Hex(address), ", value=", value));
  return Status::Ok();
}

Status GpuVmmPlatform::StreamWriteValues64(int device, uint64_t stream, const uint64_t* addresses,
                                           const uint64_t* values, int count) {
  if (api_.streamWriteValues64.fn == nullptr || count == 1)
    return Platform::StreamWriteValues64(device, stream, addresses, values, count);
  if (count <= 0) return Status::Ok();
  for (int i = 0; i < count; ++i) CCO_RETURN_IF_ERROR(AlignedWord("StreamWriteValues64", addresses[i]));
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result =
      api_.streamWriteValues64.fn(reinterpret_cast<void*>(stream), addresses, values, static_cast<unsigned>(count));
  if (result != kDriverSuccess)
    return Failed(api_.streamWriteValues64, result,
                  Fmt("stream=", Hex(stream), ", ", count, " writes from address ", Hex(addresses[0])));
  return Status::Ok();
}

Status GpuVmmPlatform::ExportDmaBuf(int device, uint64_t va, size_t size, int* fd, uint64_t* offset) {
  if (api_.rangeHandle.fn == nullptr) return Unsupported(Fmt(name(), ": the driver cannot export a dma-buf"));
  // The driver takes page-aligned ranges: the pages around [va, va + size).
  constexpr uint64_t kPage = 4096;
  const uint64_t start = va & ~(kPage - 1), end = (va + size + kPage - 1) & ~(kPage - 1);
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  int handle = -1;
  DriverResult result = api_.rangeHandle.fn(&handle, start, end - start, /*dma-buf fd*/ 1, 0);
  if (result != kDriverSuccess) return Failed(api_.rangeHandle, result, Fmt("va=", Hex(start), ", size=", end - start));
  *fd = handle;
  *offset = va - start;
  return Status::Ok();
}

Status GpuVmmPlatform::StreamSynchronize(int device, uint64_t stream) {
  CCO_BIND_DEVICE_FOR_SCOPE(device);
  DriverResult result = api_.streamSynchronize.fn(reinterpret_cast<void*>(stream));
  if (result != kDriverSuccess) return Failed(api_.streamSynchronize, result, Fmt("stream=", Hex(stream)));
  return Status::Ok();
}

// Device memory of CCO's own (the proxy's ring state, descriptors, traces, copy scratch) is
// mapped memory, as windows are, not cuMemAlloc'd: a mapping serves every context of the
// process alike, while memory allocated in a context is reached from another (the proxy's own,
// platform/proxy_scope.h) through the context that owns it, and waits whenever that context
// does (a module load beside a running kernel). Sizes round up to the granularity.
Status GpuVmmPlatform::DeviceAlloc(int device, size_t size, uint64_t* va) {
  if (va == nullptr) return InvalidArgument("DeviceAlloc: va is null");
  if (size == 0) return InvalidArgument("DeviceAlloc: size is 0");
  DeviceInfo info;
  CCO_RETURN_IF_ERROR(GetDeviceInfo(device, &info));
  if (info.granularity == 0 || size > SIZE_MAX - info.granularity)
    return InvalidArgument(Fmt("DeviceAlloc: size ", size, " is too large"));
  const size_t bytes = (size + info.granularity - 1) / info.granularity * info.granularity;
  uint64_t at = 0;
  CCO_RETURN_IF_ERROR(Reserve(device, bytes, 0, &at));
  MemHandle handle = 0;
  Status s = Create(device, bytes, &handle);
  if (s.ok()) {
    s = Map(device, at, bytes, handle, 0);
    (void)Destroy(device, handle);  // the mapping keeps the memory
  }
  if (!s.ok()) {
    (void)Release(device, at, bytes);
    return s.Prefixed(Fmt("DeviceAlloc of ", size, " bytes"));
  }
  {
    std::lock_guard<std::mutex> lock(deviceAllocMu_);
    deviceAllocs_[at] = bytes;
  }
  *va = at;
  return Status::Ok();
}

Status GpuVmmPlatform::DeviceFree(int device, uint64_t va) {
  if (va == 0) return Status::Ok();
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(deviceAllocMu_);
    auto found = deviceAllocs_.find(va);
    if (found == deviceAllocs_.end())
      return InvalidArgument(Fmt("DeviceFree: ", Hex(va), " is not an address DeviceAlloc handed out"));
    bytes = found->second;
    deviceAllocs_.erase(found);
  }
  Failures failures;
  failures.Note(Unmap(device, va, bytes));
  failures.Note(Release(device, va, bytes));
  return failures.Summary(Fmt("DeviceFree of ", Hex(va)));
}

}  // namespace gpu
}  // namespace cco
