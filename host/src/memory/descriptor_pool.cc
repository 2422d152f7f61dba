#include "memory/descriptor_pool.h"

#include <algorithm>

namespace cco {

DescriptorPool::~DescriptorPool() {
  for (uint64_t chunk : chunks_) platform_->DeviceFree(device_, chunk);
}

Status DescriptorPool::Add(const ccoWindowDevice& desc, uint64_t* address) {
  if (free_.empty()) {
    uint64_t chunk = 0;
    CCO_RETURN_IF_ERROR(platform_->DeviceAlloc(device_, kSlotsPerChunk * sizeof(ccoWindowDevice), &chunk)
                            .Prefixed("window descriptors"));
    chunks_.push_back(chunk);
    // Hand out low addresses first (free_ is used as a stack).
    for (size_t i = kSlotsPerChunk; i-- > 0;) free_.push_back(chunk + i * sizeof(ccoWindowDevice));
  }
  const uint64_t slot = free_.back();
  CCO_RETURN_IF_ERROR(platform_->CopyToDevice(device_, slot, &desc, sizeof(desc)));
  free_.pop_back();
  *address = slot;
  return Status::Ok();
}

Status DescriptorPool::Remove(uint64_t address) {
  // Poison the magic so a kernel still holding the handle reads a dead descriptor.
  ccoWindowDevice dead = {};
  CCO_RETURN_IF_ERROR(platform_->CopyToDevice(device_, address, &dead, sizeof(dead)));
  free_.push_back(address);
  return Status::Ok();
}

}  // namespace cco
