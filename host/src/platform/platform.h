// SPDX-License-Identifier: MIT
// Platform: the memory a communicator is made of, behind one interface.
//
//   cuda  libcuda.so.1 (dlopen), driver virtual-memory management
//   hip   libamdhip64.so (dlopen), the same calls in HIP spelling
//   cpu   memfd-backed host memory mapped at fixed addresses ("device memory" for CI)
//
// Physical memory is a MemHandle that can be exported as a POSIX file descriptor, sent to
// another process of the host (SCM_RIGHTS) and imported there, then mapped anywhere in a
// reserved virtual range. Every method is thread-safe; the device argument is an ordinal
// of this process's view (what cudaSetDevice takes).
#ifndef CCO_HOST_PLATFORM_PLATFORM_H_
#define CCO_HOST_PLATFORM_PLATFORM_H_

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "cco/cco.h"
#include "common/status.h"

namespace cco {

using MemHandle = uint64_t;

struct DeviceInfo {
  int ordinal = 0;
  std::string pciBusId;    // "0000:18:00.0"; empty on the cpu platform
  size_t totalMemory = 0;  // bytes
  size_t granularity = 0;  // physical allocation and mapping granularity, bytes
};

class Platform {
 public:
  virtual ~Platform() = default;

  virtual ccoPlatform_t kind() const = 0;
  virtual const char* name() const = 0;

  // The device the calling thread works on: its current context / device, else 0. Binds
  // nothing. Every other method acts for the device it is given and leaves the calling
  // thread's binding as it found it, so the caller's next kernel launch goes where it did.
  virtual Status CurrentDevice(int* device) = 0;
  virtual Status GetDeviceInfo(int device, DeviceInfo* info) = 0;
  virtual Status DeviceCount(int* count) = 0;
  // The PCI address of `device` ("0000:18:00.0"; empty on the cpu platform). Creates no
  // context: asking about every device of the machine costs nothing.
  virtual Status BusId(int device, std::string* busId) = 0;

  // Virtual address space: reserve `size` bytes aligned to `alignment`; release it.
  virtual Status Reserve(int device, size_t size, size_t alignment, uint64_t* va) = 0;
  virtual Status Release(int device, uint64_t va, size_t size) = 0;

  // Physical memory of `size` bytes (a multiple of the granularity) on `device`.
  virtual Status Create(int device, size_t size, MemHandle* handle) = 0;
  // Whether memory from Create reads as zeros until written (the cpu platform's memfds do;
  // GPU drivers promise nothing), so that a caller who needs zeros need not write them.
  virtual bool CreatesZeroedMemory(int device) {
    (void)device;
    return false;
  }
  virtual Status Destroy(int device, MemHandle handle) = 0;
  // A new file descriptor the caller owns; Import takes ownership of `fd` (closes it) and
  // refuses a descriptor that does not hold `size` bytes of this platform's memory.
  virtual Status Export(int device, MemHandle handle, int* fd) = 0;
  virtual Status Import(int device, int fd, size_t size, MemHandle* handle) = 0;

  // A reference to `handle` for another rank of this process, and whether it is the
  // caller's to Destroy. The cpu platform hands out the handle itself (a mapping keeps a
  // memfd's memory alive: no descriptor is spent); GPU drivers get a reference counted
  // handle of their own (exported and imported in-process), which keeps the memory alive
  // whatever its owner does and is released with Destroy.
  virtual Status Reference(int device, MemHandle handle, MemHandle* reference, bool* owned) = 0;

  // Map bytes [offset, offset + size) of `handle` at va..va+size inside a reservation,
  // readable and writable by `device`; Unmap leaves the range reserved. offset != 0 only
  // where MapsAtOffset(device): some drivers map a handle only from its first byte.
  virtual Status Map(int device, uint64_t va, size_t size, MemHandle handle, size_t offset) = 0;
  virtual bool MapsAtOffset(int device) = 0;
  virtual Status Unmap(int device, uint64_t va, size_t size) = 0;

  // Synchronous copies and fill on device memory (from any thread).
  virtual Status Memset(int device, uint64_t va, int value, size_t size) = 0;
  virtual Status CopyToDevice(int device, uint64_t dst, const void* src, size_t size) = 0;
  virtual Status CopyFromDevice(int device, void* dst, uint64_t src, size_t size) = 0;
  // One aligned 8-byte word, synchronously, as a single store that running kernels (which
  // may be reading it) see whole: a flag for the device.
  virtual Status WriteDeviceWord(int device, uint64_t address, uint64_t value) {
    return CopyToDevice(device, address, &value, sizeof(value));
  }

  // Host memory the device can read and write (the abort flag): host pointer and the
  // address kernels use.
  virtual Status HostMappedAlloc(int device, size_t size, void** host, uint64_t* deviceAddress) = 0;
  virtual Status HostMappedFree(int device, void* host) = 0;
  // Host memory the caller mapped (a memfd shared with host peers) made reachable by the device
  // too: *deviceAddress is where kernels and streams read and write it, while the CPU keeps
  // using `host`. ccoUnsupported where the platform cannot; HostUnregister undoes it.
  virtual Status HostRegister(int device, void* host, size_t size, uint64_t* deviceAddress) {
    (void)device, (void)host, (void)size, (void)deviceAddress;
    return Unsupported(Fmt(name(), " cannot register host memory"));
  }
  virtual Status HostUnregister(int device, void* host) {
    (void)device, (void)host;
    return Unsupported(Fmt(name(), " cannot register host memory"));
  }

  // Streams of the library's own (the GDA proxy's): work on them never waits for, and is
  // never held up by, the work the caller's kernels have queued. A copy between two device
  // addresses of this process (peers' mapped memory and host-mapped memory included); a
  // write of a 64-bit word once everything queued before it is done and visible (the
  // proxy's signal after its data); Synchronize waits for the stream's work. The cpu
  // platform copies and writes at once (the write with release order).
  virtual Status StreamCreate(int device, uint64_t* stream) = 0;
  virtual Status StreamDestroy(int device, uint64_t stream) = 0;
  virtual Status CopyOnStream(int device, uint64_t stream, uint64_t dst, uint64_t src, size_t size) = 0;
  virtual Status StreamWriteValue64(int device, uint64_t stream, uint64_t address, uint64_t value) = 0;
  // values[i] written at addresses[i], i < count, in that order, behind the stream's work: as
  // one submission where the driver batches stream memory operations (each submission costs
  // microseconds of host time: tools/perf/stream_write_probe.cu), else one write at a time.
  virtual Status StreamWriteValues64(int device, uint64_t stream, const uint64_t* addresses, const uint64_t* values,
                                     int count) {
    for (int i = 0; i < count; ++i) CCO_RETURN_IF_ERROR(StreamWriteValue64(device, stream, addresses[i], values[i]));
    return Status::Ok();
  }
  // sizes[i] bytes from srcs[i] to dsts[i], i < count, behind the stream's work, in no order
  // among themselves (the caller keeps copies that touch each other's bytes out of one call):
  // in as few submissions as the platform can (CUDA with CCO_COPY_GRAPHS=1: launches of
  // prepared graphs), else one copy at a time.
  virtual Status CopiesOnStream(int device, uint64_t stream, const uint64_t* dsts, const uint64_t* srcs,
                                const uint64_t* sizes, int count) {
    for (int i = 0; i < count; ++i) CCO_RETURN_IF_ERROR(CopyOnStream(device, stream, dsts[i], srcs[i], sizes[i]));
    return Status::Ok();
  }
  // The copies as CopiesOnStream, then the writes as StreamWriteValues64 behind all of them:
  // one submission where the platform can (CUDA with CCO_COPY_GRAPHS=1: the writes a node of
  // the copies' graph), else those two calls.
  virtual Status CopiesThenWrites(int device, uint64_t stream, const uint64_t* dsts, const uint64_t* srcs,
                                  const uint64_t* sizes, int copies, const uint64_t* addresses, const uint64_t* values,
                                  int writes) {
    CCO_RETURN_IF_ERROR(CopiesOnStream(device, stream, dsts, srcs, sizes, copies));
    return StreamWriteValues64(device, stream, addresses, values, writes);
  }
  virtual Status StreamSynchronize(int device, uint64_t stream) = 0;

  // A dma-buf of device memory [va, va + size) for a NIC to register (the verbs backend):
  // *fd, which the caller closes, and va's offset in it. ccoUnsupported where the driver
  // cannot (the cpu platform: host memory registers by address).
  virtual Status ExportDmaBuf(int device, uint64_t va, size_t size, int* fd, uint64_t* offset) {
    (void)device, (void)va, (void)size, (void)fd, (void)offset;
    return Unsupported(Fmt(name(), " memory has no dma-buf export"));
  }

  // Plain device memory for small descriptors (window descriptors).
  virtual Status DeviceAlloc(int device, size_t size, uint64_t* va) = 0;
  virtual Status DeviceFree(int device, uint64_t va) = 0;
};

// The platform this process uses: CCO_PLATFORM=cuda|hip|cpu, else the first of cuda, hip
// whose driver loads and sees a device, else cpu. Created once; never destroyed.
Status GetPlatform(Platform** platform);

// Constructors, for GetPlatform and tests. A GPU platform fails (ccoUnsupported) when
// its driver library is missing or sees no device.
Status CreateCpuPlatform(Platform** platform);
Status CreateCudaPlatform(Platform** platform);
Status CreateHipPlatform(Platform** platform);

}  // namespace cco

#endif  // CCO_HOST_PLATFORM_PLATFORM_H_
