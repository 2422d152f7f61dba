// Device memory for window descriptors (ccoWindowDevice, 128 bytes each): a window
// handle is the device address of its descriptor. Chunks of kSlotsPerChunk descriptors
// are allocated as windows appear. A freed slot is reused only after kQuarantine others
// have been freed after it (oldest first): until then a stale handle names no live window
// and every call with it fails, where reusing the slot at once would have let it act on
// the next window registered (deregister it, read past its end).
#ifndef CCO_HOST_MEMORY_DESCRIPTOR_POOL_H_
#define CCO_HOST_MEMORY_DESCRIPTOR_POOL_H_

#include <stdint.h>

#include <deque>
#include <vector>

#include "abi/window.h"
#include "platform/platform.h"

namespace cco {

class DescriptorPool {
 public:
  static constexpr size_t kSlotsPerChunk = 256;  // 32 KiB of device memory per chunk
  static constexpr size_t kQuarantine = kSlotsPerChunk;

  DescriptorPool() = default;
  DescriptorPool(Platform* platform, int device) : platform_(platform), device_(device) {}
  DescriptorPool(const DescriptorPool&) = delete;
  DescriptorPool& operator=(const DescriptorPool&) = delete;
  ~DescriptorPool();

  // Stores `desc` in device memory; `*address` is the window handle.
  Status Add(const ccoWindowDevice& desc, uint64_t* address);
  Status Remove(uint64_t address);
  size_t chunks() const { return chunks_.size(); }

 private:
  Platform* platform_ = nullptr;
  int device_ = 0;
  std::vector<uint64_t> chunks_;  // device addresses
  std::vector<uint64_t> fresh_;   // never used slots (a stack: low addresses first)
  std::deque<uint64_t> freed_;    // slots freed, oldest first
};

}  // namespace cco

#endif  // CCO_HOST_MEMORY_DESCRIPTOR_POOL_H_
