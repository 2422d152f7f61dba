// SPDX-License-Identifier: MIT
//===-- device/lsa_barrier.hpp - barriers among an LSA team -----*- C++ -*-===//
//
// ccoLsaBarrierSession<Coop>: barrier `index` of a device communicator, among the ranks
// of one LSA team, through their resource windows.
//
// State (abi/devcomm.h): this rank's epoch and verdict words for the barrier, and an
// inbox of one uint32 per peer in every rank's resource window. A round with epoch E:
//   arrive: the coop synchronises (its writes come first), then stores E+1 at system
//           scope into slot [index][me] of every peer's inbox, with release semantics
//           unless the caller asks for less (ccoMemoryOrder);
//   wait:   polls slot [index][peer] of its own inbox until it reaches E+1 (wrap-safe:
//           (int32)(seen - (E+1)) >= 0), acquire unless the caller asks for less; the
//           coop agrees on one status through the verdict word; the epoch becomes E+1.
// The order is the caller's to choose because it is the barrier's main cost: a release
// waits until every earlier store of the block is acknowledged, the previous round's
// inbox stores included, so back-to-back release rounds take a round trip each where
// relaxed ones take a one-way trip. Data written by an earlier kernel needs no release
// (the kernel boundary made it visible): a kernel that only reads its peers' inputs enters
// with sync(ACQUIRE) and leaves with sync(RELEASE), as NCCL's symmetric kernels do.
// Epochs only rise, so inboxes are never reset and rounds cannot be confused. The coop's
// threads share the peers (thread t handles peers t, t + size, ...). Every spin polls
// the communicator's abort flag (raised by an abort, or when the communicator failed: a rank
// ended), and gives up at its bound: the call's, else the device communicator's.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_LSA_BARRIER_HPP_
#define CCO_DEVICE_LSA_BARRIER_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/handles.hpp"
#include "device/spin_wait.hpp"
#include "device/trace.hpp"

namespace cco {
namespace lsa_barrier_detail {

CCO_DEVICE_API bool reached(uint32_t seen, uint32_t target) { return static_cast<int32_t>(seen - target) >= 0; }

// The two sides of a memory order: an arrive releases, a wait acquires.
CCO_DEVICE_API bool releases(ccoMemoryOrder o) {
  return o == CCO_MEMORY_ORDER_RELEASE || o == CCO_MEMORY_ORDER_ACQ_REL;
}
CCO_DEVICE_API bool acquires(ccoMemoryOrder o) {
  return o == CCO_MEMORY_ORDER_ACQUIRE || o == CCO_MEMORY_ORDER_ACQ_REL;
}

}  // namespace lsa_barrier_detail

template <class Coop> class ccoLsaBarrierSession {
 public:
  // Everything the session needs from `dc` is read here, once: through a ccoDevComm in
  // global memory (the bitcode's `dc`), reads after a barrier or an acquire would each be
  // a memory trip again. An index past dc.lsaBarrierCount makes a session that touches no
  // memory: arrive does nothing, wait and sync return INVALID_ARGUMENT (the words there are
  // other barriers' or other resources', its peers' too).
  CCO_DEVICE_API ccoLsaBarrierSession(Coop coop, const ccoDevComm& dc, uint32_t index)
      : coop_(coop),
        abortFlag_(reinterpret_cast<const uint32_t*>(dc.abortFlag)),
        waitTimeoutMs_(dc.waitTimeoutMs),
        flatBase_(dc.lsaFlatBase),
        stride_(dc.lsaStride),
        lsaRank_(dc.lsaRank),
        lsaSize_(dc.lsaSize),
        index_(index),
        trace_(dc.trace),
        valid_(index < dc.lsaBarrierCount) {
    const uint64_t resource = own_resources(dc);
    epoch_ = reinterpret_cast<uint32_t*>(resource + dc.lsaBarrierEpochOffset) + 2 * index;
    verdict_ = epoch_ + 1;
    inbox_ =
        reinterpret_cast<uint32_t*>(resource + dc.lsaBarrierInboxOffset) + static_cast<uint64_t>(index) * dc.lsaSize;
    // Where this rank's slot sits in any peer's slice: that slice's start + this.
    mySlot_ = dc.resourceOffset + dc.lsaBarrierInboxOffset +
              sizeof(uint32_t) * (static_cast<uint64_t>(index) * dc.lsaSize + dc.lsaRank);
  }

  /// Tells every peer this rank reached the barrier; with RELEASE or ACQ_REL (the
  /// default) after the coop's earlier writes are visible to them. A store of the round,
  /// not a reduction: adding 1 (which needs no epoch read first) measured slower.
  CCO_DEVICE_API void arrive(ccoMemoryOrder order = CCO_MEMORY_ORDER_RELEASE) {
    if (!valid_) return;
    prepare();
    const bool release = lsa_barrier_detail::releases(order);
    for (uint32_t p = coop_.thread_rank(); p < static_cast<uint32_t>(lsaSize_); p += coop_.size()) {
      if (static_cast<int32_t>(p) == lsaRank_) continue;
      if (release) arch::store<order::Release, scope::System>(peer_slot(p), target_);
      else arch::store<order::Relaxed, scope::System>(peer_slot(p), target_);
    }
  }

  /// Waits until every peer arrived; with ACQUIRE (the default) or ACQ_REL their writes
  /// before their arrive are visible after it. Returns a ccoDeviceStatus (OK, or ABORTED,
  /// or TIMEOUT once `timeout_ns` passed: 0 takes the device communicator's bound,
  /// CCO_NO_TIMEOUT sets none), the same for every thread of the coop. The epoch advances anyway, so a peer that
  /// arrives late leaves the barrier consistent. The order comes first, as in arrive(order): an order is never taken
  /// for a timeout.
  CCO_DEVICE_API int32_t wait(uint64_t timeout_ns = 0) { return wait(CCO_MEMORY_ORDER_ACQUIRE, timeout_ns); }
  CCO_DEVICE_API int32_t wait(ccoMemoryOrder order, uint64_t timeout_ns = 0) {
    if (!valid_) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    const uint64_t begin = trace::Begin(trace_);
    const int32_t verdict = WaitRound(order, timeout_ns);
    Traced(begin, CCO_TRACE_FLAG_WAIT_ONLY, verdict);
    return verdict;
  }

  /// arrive then wait: ACQ_REL (the default) releases the coop's writes and acquires the
  /// peers'; ACQUIRE only acquires (a relaxed arrive), RELEASE only releases.
  CCO_DEVICE_API int32_t sync(uint64_t timeout_ns = 0) { return sync(CCO_MEMORY_ORDER_ACQ_REL, timeout_ns); }
  CCO_DEVICE_API int32_t sync(ccoMemoryOrder order, uint64_t timeout_ns = 0) {
    using namespace lsa_barrier_detail;
    if (!valid_) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    const uint64_t begin = trace::Begin(trace_);
    arrive(releases(order) ? CCO_MEMORY_ORDER_RELEASE : CCO_MEMORY_ORDER_RELAXED);
    const int32_t verdict =
        WaitRound(acquires(order) ? CCO_MEMORY_ORDER_ACQUIRE : CCO_MEMORY_ORDER_RELAXED, timeout_ns);
    Traced(begin, 0, verdict);
    return verdict;
  }

 private:
  // wait(), untraced (sync traces the round as one).
  CCO_DEVICE_API int32_t WaitRound(ccoMemoryOrder order, uint64_t timeout_ns) {
    prepare();
    const bool acquire = lsa_barrier_detail::acquires(order);
    int32_t status = CCO_DEVICE_STATUS_OK;
    const WaitLimits limits = wait_limits(abortFlag_, waitTimeoutMs_, timeout_ns);
    WaitStart start;  // one bound for the whole wait, over every peer
    for (uint32_t p = coop_.thread_rank(); p < static_cast<uint32_t>(lsaSize_) && status == CCO_DEVICE_STATUS_OK;
         p += coop_.size()) {
      if (static_cast<int32_t>(p) == lsaRank_) continue;
      status =
          acquire ? poll<order::Acquire>(inbox_ + p, limits, start) : poll<order::Relaxed>(inbox_ + p, limits, start);
    }
    // One verdict for the coop: the worst any thread saw (ABORTED > TIMEOUT > OK). Where the
    // coop votes in one barrier (any()), a round that went well costs that barrier alone;
    // otherwise, or when something failed, through this barrier's verdict word. The next
    // round starts with a coop sync (prepare), which orders the leader's reset and epoch
    // store before anyone's next look at them.
    int32_t verdict = CCO_DEVICE_STATUS_OK;
    if (!Coop::kVotes || coop_.any(status != CCO_DEVICE_STATUS_OK)) {
      if (status != CCO_DEVICE_STATUS_OK) arch::fetch_max<order::Relaxed, scope::Block>(verdict_, uint32_t(status));
      coop_.sync();
      verdict = static_cast<int32_t>(arch::load<order::Relaxed, scope::Block>(verdict_));
      coop_.sync();
    }
    if (coop_.thread_rank() == 0) {
      if (verdict != CCO_DEVICE_STATUS_OK) arch::store<order::Relaxed, scope::Block>(verdict_, 0u);
      *epoch_ = target_;
    }
    prepared_ = false;
    return verdict;
  }

  // The round in the trace (device/trace.hpp): once per coop, the round's epoch as its size.
  CCO_DEVICE_API void Traced(uint64_t begin, uint16_t flags, int32_t verdict) const {
    trace::Span<Coop>(trace_, begin, trace::Event{CCO_TRACE_LSA_BARRIER, flags, -1, 0, index_, target_, 0, verdict});
  }

  // The coop's earlier writes (and the previous round's epoch store) come first; then every
  // thread reads this round's target from the epoch word, every round: another session, or
  // a bitcode call, may have used this barrier since (a target kept in the session would then
  // pair its rounds with the wrong ones). Device-scope, not block-scope (which L1 would
  // serve sooner): another block of the kernel may have used the barrier on another
  // multiprocessor, and L1 is not coherent across them.
  CCO_DEVICE_API void prepare() {
    if (prepared_) return;
    coop_.sync();
    target_ = arch::load<order::Relaxed, scope::Device>(epoch_) + 1;
    prepared_ = true;
  }

  CCO_DEVICE_API uint32_t* peer_slot(uint32_t peer) const {
    return reinterpret_cast<uint32_t*>(cco_slice_address(flatBase_, stride_, peer, mySlot_));
  }

  template <class Order>
  CCO_DEVICE_API int32_t poll(const uint32_t* slot, const WaitLimits& limits, WaitStart& start) const {
    return spin_wait<BarrierSpin>(
        [&] { return lsa_barrier_detail::reached(arch::load<Order, scope::System>(slot), target_); },
        [] { return false; }, limits, start);
  }

  Coop coop_;
  const uint32_t* abortFlag_;
  uint32_t waitTimeoutMs_;
  uint64_t flatBase_, stride_, mySlot_;
  int32_t lsaRank_, lsaSize_;
  uint32_t index_;
  uint64_t trace_;
  uint32_t* epoch_;
  uint32_t* verdict_;
  uint32_t* inbox_;
  uint32_t target_ = 0;
  bool valid_;  // index < lsaBarrierCount: its words are this device communicator's
  bool prepared_ = false;
};

}  // namespace cco

using cco::ccoLsaBarrierSession;

#endif  // CCO_DEVICE_LSA_BARRIER_HPP_
