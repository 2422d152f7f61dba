// SPDX-License-Identifier: MIT
// The consumer side of one GDA ring (abi/ring.h, the producer is device/ring.hpp): follows
// the doorbell's chain of marks, hands out released, complete descriptors in ticket order, and
// tracks the prefix of tickets whose work is done (work may finish out of order). Publishing
// `consumed` is the caller's: the proxy writes it behind the work on its stream, so it cannot
// run ahead of the work.
#ifndef CCO_HOST_PROXY_RING_CONSUMER_H_
#define CCO_HOST_PROXY_RING_CONSUMER_H_

#include <stdint.h>

#include <vector>

#include "abi/gda.h"

namespace cco {

// One ring's host-mapped memory (abi/gda.h).
struct RingMemory {
  ccoGdaDesc* slots;
  uint64_t* marks;  // one per slot
  ccoGdaRingHost* host;
  uint32_t depth;
};

class RingConsumer {
 public:
  RingConsumer() = default;
  // `firstTicket` is where the ring's counters start (0 for a fresh ring).
  explicit RingConsumer(const RingMemory& ring, uint64_t firstTicket = 0);

  // Puts every slot and mark in its empty state (cco_gda_initial_seq; a mark that links
  // nothing) and the host words at firstTicket: the one who allocates the ring does this once,
  // before any post.
  static void Initialize(const RingMemory& ring, uint64_t firstTicket);

  // The next descriptor, if it is released and complete; `*ticket` names it for Complete.
  bool Next(ccoGdaDesc* desc, uint64_t* ticket);
  // The work of `ticket` (handed out by Next) is done, or queued behind whatever will
  // publish the prefix: the done prefix grows over it.
  void Complete(uint64_t ticket);
  // Whether the done prefix grew since the last call; then `*consumed` is its new end,
  // the value `consumed` should be given.
  bool Unpublished(uint64_t* consumed);
  // Whether Unpublished would say so (and change nothing).
  bool HasUnpublished() const { return published_ != consumed_; }
  // Stops the ring: posters' waits end (ccoGdaRingError), naming `peer`.
  void Fail(ccoGdaRingError error, int32_t peer);
  // Writes `consumed` with a CPU store (release), where nothing queued before it still runs.
  void StoreConsumed(uint64_t consumed) { __atomic_store_n(&ring_.host->consumed, consumed, __ATOMIC_RELEASE); }

  // The cpu platform's proxy sleeps on an eventfd its kernels' doorbells write (abi/ring.h):
  // which one, and (sequentially consistent, before the proxy's last look) whether it sleeps.
  void WakeBy(int eventFd) { __atomic_store_n(&ring_.host->consumerWakeFd, eventFd, __ATOMIC_RELAXED); }
  void Asleep(bool asleep) { __atomic_store_n(&ring_.host->consumerAsleep, asleep ? 1u : 0u, __ATOMIC_SEQ_CST); }

  bool failed() const { return failed_; }
  uint64_t consumed() const { return consumed_; }
  // Every ticket below is released, as far as the marks read so far say.
  uint64_t released() const { return released_; }

 private:
  // Follows the marks' chain from released_ as far as it is stored.
  void FollowMarks();

  RingMemory ring_{};
  uint64_t next_ = 0;          // the next ticket to hand out
  uint64_t released_ = 0;      // every ticket below is released
  uint64_t consumed_ = 0;      // every ticket below is done
  uint64_t published_ = 0;     // consumed_ when Unpublished last said so
  std::vector<uint8_t> done_;  // by slot, for tickets in [consumed_, next_)
  bool failed_ = false;
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_RING_CONSUMER_H_
