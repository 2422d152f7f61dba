// SPDX-License-Identifier: MIT
// Host memory between the network and device memory, for the proxy's network backends.
//
// Bytes leave device memory through a copy into a pinned chunk and arrive through a copy out
// of one (CUDA/HIP copy engines; memmove on the cpu platform), all on the backend's own
// stream. The proxy thread never waits on that stream: behind each copy it queues a stream
// write of a rising token into a host-mapped word (StreamFence), and acts once the word has
// reached the token. A chunk is reused only after the copy that used it has passed.
#ifndef CCO_HOST_NET_STAGING_H_
#define CCO_HOST_NET_STAGING_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "platform/platform.h"

namespace cco {

class StreamFence {
 public:
  StreamFence(Platform* platform, int device, uint64_t stream)
      : platform_(platform), device_(device), stream_(stream) {}
  ~StreamFence();
  StreamFence(const StreamFence&) = delete;
  StreamFence& operator=(const StreamFence&) = delete;

  Status Init();
  // Queues the next token behind everything on the stream; *token names it.
  Status Mark(uint64_t* token);
  // Whether the stream has passed `token` (0 always has).
  bool Passed(uint64_t token) const;

 private:
  Platform* platform_;
  int device_;
  uint64_t stream_;
  volatile uint64_t* word_ = nullptr;
  uint64_t wordDevice_ = 0;
  uint64_t issued_ = 0;
};

// Pinned memory the device reads and writes, for every chunk of a backend: allocated once,
// when the backend is made, never while kernels run. A pinned allocation made while kernels
// run may wait inside the driver behind a thread of the process that itself waits for a
// kernel (a copy into pageable memory on the kernel's stream, as `tensor.cpu()` makes), and
// that kernel may be waiting for this proxy: a deadlock (tools/perf/blocking_call_probe.cu
// shows which driver calls wait so). Freed when it goes: its owner first waits for
// the copies that use it.
class PinnedSlab {
 public:
  PinnedSlab() = default;
  ~PinnedSlab();
  PinnedSlab(const PinnedSlab&) = delete;
  PinnedSlab& operator=(const PinnedSlab&) = delete;

  Status Init(Platform* platform, int device, size_t bytes);
  char* host(size_t offset) const { return static_cast<char*>(host_) + offset; }
  uint64_t device(size_t offset) const { return device_address_ + offset; }

 private:
  Platform* platform_ = nullptr;
  int device_ = 0;
  void* host_ = nullptr;
  uint64_t device_address_ = 0;
};

// Fixed-size chunks placed in a slab.
class StagingPool {
 public:
  StagingPool(size_t chunkBytes, int chunks) : chunkBytes_(chunkBytes), chunks_(chunks) {}
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  size_t bytes() const { return chunkBytes_ * static_cast<size_t>(chunks_); }
  // Its chunks are the bytes() at `offset` of `slab`, all free.
  void Place(const PinnedSlab& slab, size_t offset);
  // A free chunk's index, or -1 when all are in use (or the pool was never placed).
  int Acquire();
  void Release(int chunk);
  char* host(int chunk) const { return host_ + static_cast<size_t>(chunk) * chunkBytes_; }
  uint64_t device(int chunk) const { return device_address_ + static_cast<uint64_t>(chunk) * chunkBytes_; }
  size_t chunkBytes() const { return chunkBytes_; }

 private:
  size_t chunkBytes_;
  int chunks_;
  char* host_ = nullptr;
  uint64_t device_address_ = 0;
  std::vector<int> free_;
};

}  // namespace cco

#endif  // CCO_HOST_NET_STAGING_H_
