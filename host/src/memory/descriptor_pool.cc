#include "memory/descriptor_pool.h"

#include <algorithm>

namespace cco {

DescriptorPool::~DescriptorPool() {
  for (uint64_t chunk : chunks_) platform_->DeviceFree(device_, chunk);
}

Status DescriptorPool::Add(const ccoWindowDevice& desc, uint64_t* address) {
  if (fresh_.empty() && freed_.size() <= kQuarantine) {
    uint64_t chunk = 0;
    CCO_RETURN_IF_ERROR(platform_->DeviceAlloc(device_, kSlotsPerChunk * sizeof(ccoWindowDevice), &chunk)
                            .Prefixed("window descriptors"));
    chunks_.push_back(chunk);
    for (size_t i = kSlotsPerChunk; i-- > 0;) fresh_.push_back(chunk + i * sizeof(ccoWindowDevice));
  }
  const bool reuse = fresh_.empty();
  const uint64_t slot = reuse ? freed_.front() : fresh_.back();
  CCO_RETURN_IF_ERROR(platform_->CopyToDevice(device_, slot, &desc, sizeof(desc)));
  if (reuse) freed_.pop_front();
  else fresh_.pop_back();
  *address = slot;
  return Status::Ok();
}

Status DescriptorPool::Remove(uint64_t address) {
  // Poison the magic so a kernel still holding the handle reads a dead descriptor.
  ccoWindowDevice dead = {};
  CCO_RETURN_IF_ERROR(platform_->CopyToDevice(device_, address, &dead, sizeof(dead)));
  freed_.push_back(address);
  return Status::Ok();
}

}  // namespace cco
