// SPDX-License-Identifier: MIT
#include "proxy/copy_queue.h"

#include "platform/platform.h"

namespace cco {
namespace {

// [a, a + n) and [b, b + n) share a byte.
bool Overlap(uint64_t a, uint64_t b, uint64_t n) { return a < b + n && b < a + n; }

}  // namespace

// The owner flushes and handles the status; this only keeps an early return from dropping a
// copy whose ring slot is already counted as done.
CopyQueue::~CopyQueue() { (void)Flush(); }

Status CopyQueue::Copy(uint64_t dst, uint64_t src, uint64_t bytes, uint64_t windows) {
  if (!failed_.ok()) return failed_;
  if (bytes == 0) return Status::Ok();
  const bool continues = bytes_ != 0 && windows != 0 && windows == windows_ && dst == dst_ + bytes_ &&
                         src == src_ + bytes_ && bytes <= UINT64_MAX - bytes_ && !Overlap(dst_, src_, bytes_ + bytes);
  if (continues) {
    bytes_ += bytes;
    return Status::Ok();
  }
  CCO_RETURN_IF_ERROR(Flush());
  dst_ = dst, src_ = src, bytes_ = bytes, windows_ = windows;
  return Status::Ok();
}

Status CopyQueue::WriteValue64(uint64_t address, uint64_t value) {
  if (!failed_.ok()) return failed_;
  CCO_RETURN_IF_ERROR(FlushCopy());
  if (writes_ == kMaxWrites) CCO_RETURN_IF_ERROR(FlushWrites());
  writeAddresses_[writes_] = address;
  writeValues_[writes_] = value;
  ++writes_;
  markerLast_ = false;
  return Status::Ok();
}

Status CopyQueue::Mark() {
  if (tail_ == nullptr) return Status::Ok();
  CCO_RETURN_IF_ERROR(WriteValue64(tail_->device_, tail_->next_ + 1));
  ++tail_->next_;
  markerLast_ = true;
  return Status::Ok();
}

Status CopyQueue::Flush() {
  CCO_RETURN_IF_ERROR(FlushCopy());
  return FlushWrites();
}

Status CopyQueue::FlushCopy() {
  if (!failed_.ok()) return failed_;
  if (bytes_ == 0) return Status::Ok();
  const uint64_t dst = dst_, src = src_, bytes = bytes_;
  bytes_ = 0;  // submitted, or failed for good
  ++submissions_;
  if (tail_) tail_->unmarked_ = true;
  return Submitted(platform_->CopyOnStream(device_, stream_, dst, src, bytes));
}

Status CopyQueue::FlushWrites() {
  if (!failed_.ok()) return failed_;
  if (writes_ == 0) return Status::Ok();
  const int count = writes_;
  writes_ = 0;  // submitted, or failed for good
  ++submissions_;
  const Status s = Submitted(platform_->StreamWriteValues64(device_, stream_, writeAddresses_, writeValues_, count));
  if (tail_ && s.ok() && markerLast_) {  // the marker vouches for this batch and all before it
    tail_->marked_ = tail_->next_;
    tail_->unmarked_ = false;
  } else if (tail_) {
    tail_->unmarked_ = true;
  }
  markerLast_ = false;
  return s;
}

Status CopyQueue::Submitted(Status s) {
  if (!s.ok() && failed_.ok()) failed_ = s;
  return s;
}

}  // namespace cco
