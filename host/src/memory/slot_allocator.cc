// SPDX-License-Identifier: MIT
#include "memory/slot_allocator.h"

namespace cco {

SlotAllocator::SlotAllocator(size_t capacity, size_t granularity)
    : capacity_(capacity / granularity * granularity), granularity_(granularity) {
  if (capacity_ > 0) free_[0] = capacity_;
}

Status SlotAllocator::Allocate(size_t size, size_t* offset, size_t* slotSize) {
  if (size == 0) return InvalidArgument("size is 0");
  if (size > capacity_) {
    return OutOfMemory(
        Fmt(size, " bytes exceed the whole per-rank slice of ", capacity_, " bytes (raise perRankVmmSize)"));
  }
  const size_t rounded = (size + granularity_ - 1) / granularity_ * granularity_;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < rounded) continue;
    const size_t start = it->first;
    const size_t rest = it->second - rounded;
    free_.erase(it);
    if (rest > 0) free_[start + rounded] = rest;
    live_[start] = rounded;
    used_ += rounded;
    *offset = start;
    *slotSize = rounded;
    return Status::Ok();
  }
  return OutOfMemory(Fmt("the symmetric heap cannot fit ", rounded, " bytes: ", used_, " of ", capacity_,
                         " bytes are in use (free memory, or raise perRankVmmSize)"));
}

Status SlotAllocator::Free(size_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end()) return InvalidArgument("not the start of a live allocation (freed twice?)");
  size_t start = it->first;
  size_t size = it->second;
  used_ -= size;
  live_.erase(it);
  // Merge with the free neighbours on both sides.
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_[start] = size;
  return Status::Ok();
}

bool SlotAllocator::Find(size_t offset, size_t* start, size_t* size) const {
  auto it = live_.upper_bound(offset);
  if (it == live_.begin()) return false;
  --it;
  if (offset >= it->first + it->second) return false;
  *start = it->first;
  *size = it->second;
  return true;
}

}  // namespace cco
