// SPDX-License-Identifier: MIT
// The slot allocator of one rank's slice of the flat virtual range: offsets in
// [0, capacity), every slot a multiple of the granularity. First fit, freed neighbours
// merge. Deterministic, so ranks that allocate in the same order get the same offsets.
#ifndef CCO_HOST_MEMORY_SLOT_ALLOCATOR_H_
#define CCO_HOST_MEMORY_SLOT_ALLOCATOR_H_

#include <stddef.h>

#include <map>

#include "common/status.h"

namespace cco {

class SlotAllocator {
 public:
  SlotAllocator() = default;
  SlotAllocator(size_t capacity, size_t granularity);

  // size > 0; the slot is rounded up to the granularity (`*slotSize`).
  Status Allocate(size_t size, size_t* offset, size_t* slotSize);
  // `offset` must be the start of a live slot.
  Status Free(size_t offset);
  // The live slot that contains `offset`, if any.
  bool Find(size_t offset, size_t* start, size_t* size) const;

  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }
  size_t granularity() const { return granularity_; }

 private:
  size_t capacity_ = 0;
  size_t granularity_ = 1;
  size_t used_ = 0;
  std::map<size_t, size_t> free_;  // offset -> size
  std::map<size_t, size_t> live_;  // offset -> size
};

}  // namespace cco

#endif  // CCO_HOST_MEMORY_SLOT_ALLOCATOR_H_
