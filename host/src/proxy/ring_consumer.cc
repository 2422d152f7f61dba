#include "proxy/ring_consumer.h"

#include <string.h>

namespace cco {

RingConsumer::RingConsumer(ccoGdaDesc* slots, ccoGdaRingHost* host, uint32_t depth, uint64_t firstTicket)
    : slots_(slots),
      host_(host),
      depth_(depth),
      next_(firstTicket),
      consumed_(firstTicket),
      published_(firstTicket),
      done_(depth, 0) {}

void RingConsumer::Initialize(ccoGdaDesc* slots, ccoGdaRingHost* host, uint32_t depth, uint64_t firstTicket) {
  memset(slots, 0, static_cast<size_t>(depth) * sizeof(ccoGdaDesc));
  for (uint32_t i = 0; i < depth; ++i) slots[i].seq = cco_gda_initial_seq(i, firstTicket, depth);
  memset(host, 0, sizeof(*host));
  host->released = firstTicket;
  host->consumed = firstTicket;
}

bool RingConsumer::Next(ccoGdaDesc* desc, uint64_t* ticket) {
  const uint64_t released = __atomic_load_n(&host_->released, __ATOMIC_ACQUIRE);
  if (!cco_gda_before(next_, released)) return false;
  const ccoGdaDesc* slot = slots_ + cco_gda_slot_of(next_, depth_);
  // Released, but perhaps still being written by the poster that reserved it.
  if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != next_ + 1) return false;
  memcpy(desc, slot, sizeof(*desc));
  *ticket = next_++;
  return true;
}

void RingConsumer::Complete(uint64_t ticket) {
  done_[cco_gda_slot_of(ticket, depth_)] = 1;
  while (consumed_ != next_ && done_[cco_gda_slot_of(consumed_, depth_)]) {
    done_[cco_gda_slot_of(consumed_, depth_)] = 0;
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
  __atomic_store_n(&host_->errorPeer, peer, __ATOMIC_RELAXED);
  __atomic_store_n(&host_->error, static_cast<uint32_t>(error), __ATOMIC_RELEASE);
}

}  // namespace cco
