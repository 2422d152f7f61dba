// SPDX-License-Identifier: MIT
#include "memory/descriptor_pool.h"

#include <algorithm>

namespace cco {

DescriptorPool::~DescriptorPool() {
  for (uint64_t chunk : chunks_) platform_->DeviceFree(device_, chunk);
}

Status DescriptorPool::Add(const void* desc, uint64_t* address) {
  if (fresh_.empty() && freed_.size() <= kQuarantine) {
    uint64_t chunk = 0;
    CCO_RETURN_IF_ERROR(platform_->DeviceAlloc(device_, kSlotsPerChunk * slotBytes_, &chunk).Prefixed("descriptors"));
    chunks_.push_back(chunk);
    for (size_t i = kSlotsPerChunk; i-- > 0;) fresh_.push_back(chunk + i * slotBytes_);
  }
  const bool reuse = fresh_.empty();
  const uint64_t slot = reuse ? freed_.front() : fresh_.back();
  CCO_RETURN_IF_ERROR(Write(slot, desc));
  if (reuse) freed_.pop_front();
  else fresh_.pop_back();
  *address = slot;
  return Status::Ok();
}

Status DescriptorPool::Write(uint64_t address, const void* desc) {
  return platform_->CopyToDevice(device_, address, desc, slotBytes_);
}

Status DescriptorPool::Remove(uint64_t address) {
  // Poison the magic (and the rest) so a kernel still holding the address reads a dead one.
  const std::vector<char> dead(slotBytes_, 0);
  CCO_RETURN_IF_ERROR(platform_->CopyToDevice(device_, address, dead.data(), slotBytes_));
  freed_.push_back(address);
  return Status::Ok();
}

}  // namespace cco
