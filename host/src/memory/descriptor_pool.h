// SPDX-License-Identifier: MIT
// Device memory for the small descriptors kernels read by address: window descriptors
// (ccoWindowDevice: a window handle is the device address of its descriptor) and the device
// copies of ccoDevComm (what kernels get as `dc`). Plain device memory of this rank's own,
// outside the flat range: no peer maps it, and no window covers it, so nothing a peer writes
// can become a field a kernel follows. Chunks of kSlotsPerChunk slots are allocated as
// descriptors appear. A freed slot is zeroed (a kernel still holding its address reads a dead
// descriptor) and reused only after kQuarantine others have been freed after it (oldest
// first): until then a stale handle names nothing live and every call with it fails, where
// reusing the slot at once would have let it act on the next descriptor stored there.
#ifndef CCO_HOST_MEMORY_DESCRIPTOR_POOL_H_
#define CCO_HOST_MEMORY_DESCRIPTOR_POOL_H_

#include <stddef.h>
#include <stdint.h>

#include <deque>
#include <vector>

#include "abi/window.h"
#include "platform/platform.h"

namespace cco {

class DescriptorPool {
 public:
  static constexpr size_t kSlotsPerChunk = 256;  // 32 KiB of device memory per chunk of window descriptors
  static constexpr size_t kQuarantine = kSlotsPerChunk;

  DescriptorPool() = default;
  // Slots of `slotBytes` (a multiple of 8: the descriptors are words).
  DescriptorPool(Platform* platform, int device, size_t slotBytes = sizeof(ccoWindowDevice))
      : platform_(platform), device_(device), slotBytes_(slotBytes) {}
  DescriptorPool(const DescriptorPool&) = delete;
  DescriptorPool& operator=(const DescriptorPool&) = delete;
  ~DescriptorPool();

  // Stores the slot's worth of bytes at `desc` in device memory; `*address` is where.
  Status Add(const void* desc, uint64_t* address);
  Status Add(const ccoWindowDevice& desc, uint64_t* address) { return Add(static_cast<const void*>(&desc), address); }
  // Replaces what the slot at `address` holds.
  Status Write(uint64_t address, const void* desc);
  Status Remove(uint64_t address);
  size_t chunks() const { return chunks_.size(); }
  size_t slotBytes() const { return slotBytes_; }

 private:
  Platform* platform_ = nullptr;
  int device_ = 0;
  size_t slotBytes_ = sizeof(ccoWindowDevice);
  std::vector<uint64_t> chunks_;  // device addresses
  std::vector<uint64_t> fresh_;   // never used slots (a stack: low addresses first)
  std::deque<uint64_t> freed_;    // slots freed, oldest first
};

}  // namespace cco

#endif  // CCO_HOST_MEMORY_DESCRIPTOR_POOL_H_
