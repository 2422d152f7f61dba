// SPDX-License-Identifier: MIT
// The cpu platform: host memory stands in for device memory, so the whole host SDK runs
// on machines without a GPU (CI, laptops). Physical memory is a memfd; a file descriptor
// is the shareable handle itself, so the cross-process path is the real one.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "platform/memfd.h"
#include "platform/platform.h"

namespace cco {
namespace {

constexpr size_t kGranularity = 4096;
constexpr size_t kDefaultMemory = size_t{1} << 30;  // what perRankVmmSize = 0 gives

class CpuPlatform final : public Platform {
 public:
  ccoPlatform_t kind() const override { return ccoPlatformCpu; }
  const char* name() const override { return "cpu"; }

  Status CurrentDevice(int* device) override {
    *device = 0;
    return Status::Ok();
  }
  Status DeviceCount(int* count) override {
    *count = 1;
    return Status::Ok();
  }
  Status BusId(int device, std::string* busId) override {
    if (device != 0) return InvalidArgument(Fmt("the cpu platform has one device (0), not ", device));
    busId->clear();
    return Status::Ok();
  }
  Status GetDeviceInfo(int device, DeviceInfo* info) override {
    if (device != 0) return InvalidArgument(Fmt("the cpu platform has one device (0), not ", device));
    info->ordinal = 0;
    info->pciBusId.clear();
    info->totalMemory = kDefaultMemory;
    info->granularity = kGranularity;
    return Status::Ok();
  }

  Status Reserve(int, size_t size, size_t alignment, uint64_t* va) override {
    if (alignment < kGranularity) alignment = kGranularity;
    // Over-reserve, then trim, to honour any alignment.
    const size_t span = size + alignment;
    void* p = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return ErrnoError(Fmt("mmap reserve of ", size, " bytes"), errno);
    const uint64_t start = reinterpret_cast<uint64_t>(p);
    const uint64_t aligned = (start + alignment - 1) / alignment * alignment;
    if (aligned > start) munmap(p, aligned - start);
    const uint64_t tail = start + span - (aligned + size);
    if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
    *va = aligned;
    return Status::Ok();
  }
  Status Release(int, uint64_t va, size_t size) override {
    if (munmap(reinterpret_cast<void*>(va), size) != 0) return ErrnoError("munmap of a reservation", errno);
    return Status::Ok();
  }

  Status Create(int /*device*/, size_t size, MemHandle* handle) override {
    // Sealed at its size: a peer that holds the descriptor cannot shrink it under this
    // rank's own mapping (which would kill this process with SIGBUS) or grow it.
    int fd = -1;
    CCO_RETURN_IF_ERROR(CreateSealedMemfd("cco-symmetric", size, &fd));
    *handle = static_cast<MemHandle>(fd);
    return Status::Ok();
  }
  // A fresh memfd's pages read as zeros; writing them would only make them resident.
  bool CreatesZeroedMemory(int) override { return true; }
  Status Destroy(int, MemHandle handle) override {
    if (close(static_cast<int>(handle)) != 0) return ErrnoError("close of a memfd", errno);
    return Status::Ok();
  }
  Status Export(int, MemHandle handle, int* fd) override {
    *fd = fcntl_dup(static_cast<int>(handle));
    if (*fd < 0) return ErrnoError("dup of a memfd", errno);
    return Status::Ok();
  }
  Status Import(int, int fd, size_t size, MemHandle* handle) override {
    // A peer's descriptor is checked before it is mapped: memory of this platform (a
    // memfd), as large as agreed, and sealed so that its owner cannot truncate it under
    // this rank's mapping later.
    Status s = CheckSealedMemfd(fd, size);
    if (!s.ok()) {
      close(fd);
      return s;
    }
    *handle = static_cast<MemHandle>(fd);  // the descriptor is the handle
    return Status::Ok();
  }

  Status Reference(int, MemHandle handle, MemHandle* reference, bool* owned) override {
    *reference = handle;
    *owned = false;
    return Status::Ok();
  }

  Status Map(int, uint64_t va, size_t size, MemHandle handle, size_t offset) override {
    void* p = mmap(reinterpret_cast<void*>(va), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                   static_cast<int>(handle), static_cast<off_t>(offset));
    if (p == MAP_FAILED) return ErrnoError(Fmt("mmap of ", size, " bytes at 0x", std::hex, va), errno);
    return Status::Ok();
  }
  bool MapsAtOffset(int) override { return true; }
  Status Unmap(int, uint64_t va, size_t size) override {
    // Put the reservation back in place of the mapping.
    void* p = mmap(reinterpret_cast<void*>(va), size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) return ErrnoError("mmap re-reserving an unmapped range", errno);
    return Status::Ok();
  }

  Status Memset(int, uint64_t va, int value, size_t size) override {
    memset(reinterpret_cast<void*>(va), value, size);
    return Status::Ok();
  }
  Status CopyToDevice(int, uint64_t dst, const void* src, size_t size) override {
    memcpy(reinterpret_cast<void*>(dst), src, size);
    return Status::Ok();
  }
  Status CopyFromDevice(int, void* dst, uint64_t src, size_t size) override {
    memcpy(dst, reinterpret_cast<const void*>(src), size);
    return Status::Ok();
  }

  Status HostMappedAlloc(int, size_t size, void** host, uint64_t* deviceAddress) override {
    *host = calloc(1, size);
    if (*host == nullptr) return OutOfMemory(Fmt("calloc of ", size, " bytes"));
    *deviceAddress = reinterpret_cast<uint64_t>(*host);
    return Status::Ok();
  }
  Status HostMappedFree(int, void* host) override {
    free(host);
    return Status::Ok();
  }
  // Device code runs on the CPU: host memory is already where it reads.
  Status HostRegister(int, void* host, size_t, uint64_t* deviceAddress) override {
    *deviceAddress = reinterpret_cast<uint64_t>(host);
    return Status::Ok();
  }
  Status HostUnregister(int, void*) override { return Status::Ok(); }

  Status StreamCreate(int, uint64_t* stream) override {
    *stream = 0;
    return Status::Ok();
  }
  Status StreamDestroy(int, uint64_t) override { return Status::Ok(); }
  Status CopyOnStream(int, uint64_t, uint64_t dst, uint64_t src, size_t size) override {
    memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), size);
    return Status::Ok();
  }
  Status StreamWriteValue64(int, uint64_t, uint64_t address, uint64_t value) override {
    if (address % sizeof(uint64_t) != 0)
      return InvalidArgument(
          Fmt("StreamWriteValue64: address ", reinterpret_cast<void*>(address), " is not 8-byte aligned"));
    __atomic_store_n(reinterpret_cast<uint64_t*>(address), value, __ATOMIC_RELEASE);
    return Status::Ok();
  }
  Status StreamSynchronize(int, uint64_t) override { return Status::Ok(); }
  // "Device" code runs on host threads here: an atomic store, not a copy they would race with.
  Status WriteDeviceWord(int, uint64_t address, uint64_t value) override {
    if (address % sizeof(uint64_t) != 0)
      return InvalidArgument(
          Fmt("WriteDeviceWord: address ", reinterpret_cast<void*>(address), " is not 8-byte aligned"));
    __atomic_store_n(reinterpret_cast<uint64_t*>(address), value, __ATOMIC_RELEASE);
    return Status::Ok();
  }

  Status DeviceAlloc(int, size_t size, uint64_t* va) override {
    void* p = calloc(1, size);
    if (p == nullptr) return OutOfMemory(Fmt("calloc of ", size, " bytes"));
    *va = reinterpret_cast<uint64_t>(p);
    return Status::Ok();
  }
  Status DeviceFree(int, uint64_t va) override {
    free(reinterpret_cast<void*>(va));
    return Status::Ok();
  }

 private:
  static int fcntl_dup(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }
};

}  // namespace

Status CreateCpuPlatform(Platform** platform) {
  *platform = new CpuPlatform();
  return Status::Ok();
}

}  // namespace cco
