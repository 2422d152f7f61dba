// SPDX-License-Identifier: MIT
#include "proxy/ring_consumer.h"

#include <string.h>

namespace cco {

RingConsumer::RingConsumer(const RingMemory& ring, uint64_t firstTicket)
    : ring_(ring),
      next_(firstTicket),
      released_(firstTicket),
      consumed_(firstTicket),
      published_(firstTicket),
      done_(ring.depth, 0) {}

void RingConsumer::Initialize(const RingMemory& ring, uint64_t firstTicket) {
  memset(ring.slots, 0, static_cast<size_t>(ring.depth) * sizeof(ccoGdaDesc));
  for (uint32_t i = 0; i < ring.depth; ++i) {
    ring.slots[i].seq = cco_gda_initial_seq(i, firstTicket, ring.depth);
    ring.marks[i] = cco_gda_first_lap_ticket(i, firstTicket, ring.depth);
  }
  memset(ring.host, 0, sizeof(*ring.host));
  ring.host->consumed = firstTicket;
}

void RingConsumer::FollowMarks() {
  // A link moves the boundary 1 to depth tickets on, and the device releases at most depth
  // tickets past `consumed` (<= next_): one pass follows at most depth links, whatever the
  // marks hold.
  for (uint32_t links = 0; links < ring_.depth; ++links) {
    const uint64_t mark = __atomic_load_n(ring_.marks + cco_gda_slot_of(released_, ring_.depth), __ATOMIC_ACQUIRE);
    if (!cco_gda_mark_links(released_, mark, ring_.depth)) return;
    released_ = mark;
  }
}

bool RingConsumer::Next(ccoGdaDesc* desc, uint64_t* ticket) {
  if (!cco_gda_before(next_, released_)) {
    FollowMarks();
    if (!cco_gda_before(next_, released_)) return false;
  }
  const ccoGdaDesc* slot = ring_.slots + cco_gda_slot_of(next_, ring_.depth);
  // Released, but perhaps still being written by the poster that reserved it.
  if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != next_ + 1) return false;
  memcpy(desc, slot, sizeof(*desc));
  *ticket = next_++;
  return true;
}

void RingConsumer::Complete(uint64_t ticket) {
  done_[cco_gda_slot_of(ticket, ring_.depth)] = 1;
  while (consumed_ != next_ && done_[cco_gda_slot_of(consumed_, ring_.depth)]) {
    done_[cco_gda_slot_of(consumed_, ring_.depth)] = 0;
    ++consumed_;
  }
}

bool RingConsumer::Unpublished(uint64_t* consumed) {
  if (published_ == consumed_) return false;
  published_ = consumed_;
  *consumed = consumed_;
  return true;
}

void RingConsumer::Fail(ccoGdaRingError error, int32_t peer) {
  failed_ = true;
  __atomic_store_n(&ring_.host->errorPeer, peer, __ATOMIC_RELAXED);
  __atomic_store_n(&ring_.host->error, static_cast<uint32_t>(error), __ATOMIC_RELEASE);
}

}  // namespace cco
