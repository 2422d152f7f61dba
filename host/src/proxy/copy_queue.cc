// SPDX-License-Identifier: MIT
#include "proxy/copy_queue.h"

#include "platform/platform.h"

namespace cco {
namespace {

// [a, a + n) and [b, b + n) share a byte.
bool Overlap(uint64_t a, uint64_t b, uint64_t n) { return a < b + n && b < a + n; }
// [a, a + n) and [b, b + m) share a byte.
bool Overlap(uint64_t a, uint64_t n, uint64_t b, uint64_t m) { return n != 0 && m != 0 && a < b + m && b < a + n; }

}  // namespace

// The owner flushes and handles the status; this only keeps an early return from dropping a
// copy whose ring slot is already counted as done.
CopyQueue::~CopyQueue() { (void)Flush(); }

Status CopyQueue::Copy(uint64_t dst, uint64_t src, uint64_t bytes, uint64_t windows) {
  if (!failed_.ok()) return failed_;
  if (bytes == 0) return Status::Ok();
  if (copies_ > 0 && writes_ == 0) {  // (a copy grown past writes held behind it would pass them)
    const int last = copies_ - 1;
    const uint64_t d = dsts_[last], s = srcs_[last], n = sizes_[last];
    const bool continues = windows != 0 && windows == windows_ && dst == d + n && src == s + n &&
                           bytes <= UINT64_MAX - n && !Overlap(d, s, n + bytes);
    if (continues && !TouchesHeld(dst, src, bytes, /*skipLast=*/true)) {
      sizes_[last] += bytes;
      return Status::Ok();
    }
  }
  if (writes_ > 0) CCO_RETURN_IF_ERROR(Flush());  // a copy after writes: they go first, with the copies before them
  if (copies_ == kMaxCopies || TouchesHeld(dst, src, bytes, /*skipLast=*/false)) CCO_RETURN_IF_ERROR(FlushCopy());
  dsts_[copies_] = dst, srcs_[copies_] = src, sizes_[copies_] = bytes;
  ++copies_;
  windows_ = windows;
  return Status::Ok();
}

bool CopyQueue::TouchesHeld(uint64_t dst, uint64_t src, uint64_t bytes, bool skipLast) const {
  for (int i = 0; i < copies_ - (skipLast ? 1 : 0); ++i)
    if (Overlap(dst, bytes, dsts_[i], sizes_[i]) || Overlap(src, bytes, dsts_[i], sizes_[i]) ||
        Overlap(dst, bytes, srcs_[i], sizes_[i]))
      return true;
  return false;
}

Status CopyQueue::WriteValue64(uint64_t address, uint64_t value) {
  if (!failed_.ok()) return failed_;
  if (writes_ == kMaxWrites) CCO_RETURN_IF_ERROR(Flush());
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
  if (!failed_.ok()) return failed_;
  if (copies_ > 0 && writes_ > 0) return FlushBoth();
  CCO_RETURN_IF_ERROR(FlushCopy());
  return FlushWrites();
}

Status CopyQueue::FlushBoth() {
  const int copies = copies_, writes = writes_;
  copies_ = writes_ = 0;  // submitted, or failed for good
  ++submissions_;
  const Status s = Submitted(platform_->CopiesThenWrites(device_, stream_, dsts_, srcs_, sizes_, copies,
                                                         writeAddresses_, writeValues_, writes));
  Marked(s);
  return s;
}

Status CopyQueue::FlushCopy() {
  if (!failed_.ok()) return failed_;
  if (copies_ == 0) return Status::Ok();
  const int count = copies_;
  copies_ = 0;  // submitted, or failed for good
  ++submissions_;
  if (tail_) tail_->unmarked_ = true;
  return Submitted(platform_->CopiesOnStream(device_, stream_, dsts_, srcs_, sizes_, count));
}

Status CopyQueue::FlushWrites() {
  if (!failed_.ok()) return failed_;
  if (writes_ == 0) return Status::Ok();
  const int count = writes_;
  writes_ = 0;  // submitted, or failed for good
  ++submissions_;
  const Status s = Submitted(platform_->StreamWriteValues64(device_, stream_, writeAddresses_, writeValues_, count));
  Marked(s);
  return s;
}

void CopyQueue::Marked(const Status& submitted) {
  if (tail_ && submitted.ok() && markerLast_) {  // the marker vouches for this submission and all before it
    tail_->marked_ = tail_->next_;
    tail_->unmarked_ = false;
  } else if (tail_) {
    tail_->unmarked_ = true;
  }
  markerLast_ = false;
}

Status CopyQueue::Submitted(Status s) {
  if (!s.ok() && failed_.ok()) failed_ = s;
  return s;
}

}  // namespace cco
