// SPDX-License-Identifier: MIT
#include "net/staging.h"

#include "common/text.h"

namespace cco {

StreamFence::~StreamFence() {
  if (word_ != nullptr) {
    platform_->StreamSynchronize(device_, stream_);  // no write is still on its way to the word
    platform_->HostMappedFree(device_, const_cast<uint64_t*>(word_));
  }
}

Status StreamFence::Init() {
  void* host = nullptr;
  CCO_RETURN_IF_ERROR(
      platform_->HostMappedAlloc(device_, sizeof(uint64_t), &host, &wordDevice_).Prefixed("a stream fence"));
  word_ = static_cast<volatile uint64_t*>(host);
  *word_ = 0;
  return Status::Ok();
}

Status StreamFence::Mark(uint64_t* token) {
  CCO_RETURN_IF_ERROR(platform_->StreamWriteValue64(device_, stream_, wordDevice_, issued_ + 1));
  *token = ++issued_;
  return Status::Ok();
}

bool StreamFence::Passed(uint64_t token) const {
  if (token == 0) return true;
  // Acquire: what the copies before the token wrote (a chunk's bytes) is then visible here.
  return __atomic_load_n(word_, __ATOMIC_ACQUIRE) >= token;
}

PinnedSlab::~PinnedSlab() {
  if (host_ != nullptr) platform_->HostMappedFree(device_, host_);
}

Status PinnedSlab::Init(Platform* platform, int device, size_t bytes) {
  platform_ = platform;
  device_ = device;
  Status s = platform->HostMappedAlloc(device, bytes, &host_, &device_address_);
  if (!s.ok()) {
    host_ = nullptr;
    return s.Prefixed(Fmt("network staging memory (", bytes, " bytes)"));
  }
  return Status::Ok();
}

void StagingPool::Place(const PinnedSlab& slab, size_t offset) {
  host_ = slab.host(offset);
  device_address_ = slab.device(offset);
  free_.clear();
  for (int i = chunks_ - 1; i >= 0; --i) free_.push_back(i);
}

int StagingPool::Acquire() {
  if (free_.empty()) return -1;
  const int chunk = free_.back();
  free_.pop_back();
  return chunk;
}

void StagingPool::Release(int chunk) { free_.push_back(chunk); }

}  // namespace cco
