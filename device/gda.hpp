//===-- device/gda.hpp - GPU-initiated one-sided communication --*- C++ -*-===//
//
// ccoGda<Provider, Mode>: puts, put_value, gets and signals to world ranks through one GDA
// context of a device communicator, with signal waits, counters and flushes.
//
//   Provider  how descriptors reach the network: ccoGdaProxy (the portable one: rings of
//             abi/gda.h consumed by the host proxy). A compile-time choice, one per NIC.
//   Mode      ccoGdaImmediate (default): every post rings for itself.
//             ccoGdaDeferred: posts do not ring; the next ring that reaches them (a later
//               Immediate post, a signal, a flush, a credit wait) releases them.
//             ccoGdaCallerOrdered: posts neither fence nor ring, and there is no signal();
//               puts carry their signal. Only this mode's flush, flush_peer and flush_async
//               ring (a ring by another handle on the context releases them too, as a NIC
//               doorbell would).
// Handles of every mode on one context share its rings.
//
// Semantics:
//   - A signalling put's signal becomes visible at the target only after its payload and
//     the payloads of every earlier post on that context to that peer have landed.
//   - Signals are monotone sums. read_signal = value - shadow; wait_signal(id, least) waits
//     until that reaches `least` and consumes it (shadow += least); reset_signal sets the
//     shadow to the value. One waiter per signal at a time.
//   - counter(id) marks every ring of the context; counter `id` of this rank counts the marks
//     all rings have passed, so it counts a call once every post before it has completed
//     locally (source buffers reusable). Counters read, wait and reset like signals.
//   - flush: every post of the context so far is complete (buffers reusable, data landed).
//     flush_async rings and notes the targets; flush_wait waits for them. A group's flush
//     fences once, in thread 0: a thread that then tells a peer by a flag of its own must
//     release it (a release store or atomic, or a fence of its own first); CCO's own signals
//     and barriers do.
//   - Coop: with ccoCoopWarp / ccoCoopBlock every thread of the group calls; thread 0 posts
//     after the group synchronised (its threads' earlier writes come first). Waits, flushes
//     and the barrier run in every thread. Every thread returns the group's verdict
//     (coop.hpp worst_status): a call that failed in one thread fails in all. An amdgcn
//     block cannot vote: there each thread returns what it met itself.
//   - Thread mode AGGREGATE (thread coop): the lanes of a warp that post to one ring
//     together reserve their slots with one atomic and ring once.
//   - Direct path (device/gda_direct.hpp): to a peer of this rank's LSA team, Immediate and
//     Deferred handles do signal, put_value, and puts and gets of up to dc.gdaDirectMaxBytes
//     (dc.gdaDirectGroupMaxBytes where a warp or block shares the copy) with their own loads
//     and stores when the ring to that peer is idle, with the same semantics (a direct get is
//     complete when it returns).
// Every wait polls the abort flag and the error words of the rings it depends on (a signal
// or counter wait: every ring of the context; the barrier: the ring to each peer it waits
// for) and ends at the handle's timeout (0: none). Statuses are ccoDeviceStatus values.
// A host proxy carries the posts out; it only queues work on its own stream, so host-side
// waits do not hold it back (launch on a non-blocking stream all the same: a synchronous
// legacy-stream copy waits for a kernel launched there that waits on GDA).
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_GDA_HPP_
#define CCO_DEVICE_GDA_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/gda_direct.hpp"
#include "device/gda_ring.hpp"
#include "device/group_waits.hpp"
#include "device/handles.hpp"
#include "device/lsa.hpp"
#include "device/team.hpp"

/// The portable provider: descriptors go through host-visible rings to the proxy.
struct ccoGdaProxy {};

namespace cco {

template <class Provider = ccoGdaProxy, ccoGdaDoorbellMode Mode = ccoGdaImmediate> class ccoGda {
 public:
  // A device communicator of another ABI (or no device communicator: magic and version are
  // checked) makes every call of the handle INVALID_ARGUMENT, as does a context out of range.
  CCO_DEVICE_API ccoGda(const ccoDevComm& dc, int32_t context = 0, uint64_t timeoutNs = 0)
      : dc_(dc), f_(dc), context_(context), limits_{reinterpret_cast<const uint32_t*>(dc.abortFlag), timeoutNs} {}

  /// GDA-team size (connected peers) and the world rank of team index `index` (-1 outside).
  CCO_DEVICE_API int32_t team_size() const { return cco::team_size(dc_, CCO_TEAM_GDA); }
  CCO_DEVICE_API int32_t team_peer(int32_t index) const { return team_world_rank(dc_, CCO_TEAM_GDA, index); }

  template <class Coop = ccoCoopThread, ccoThreadMode TM = CCO_THREAD_INDEPENDENT>
  CCO_DEVICE_API int32_t put(int32_t peer, ccoWindow_t dst, uint64_t dstOffset, ccoWindow_t src, uint64_t srcOffset,
                             uint64_t bytes, ccoSignalOp signalOp = CCO_SIGNAL_NONE, int32_t signalId = 0,
                             uint64_t signalValue = 0) {
    if (!user_signal_ok(signalOp, signalId) || !window_holds(dst, dstOffset, bytes) || !window_holds(src, srcOffset, bytes))
      return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    ccoGdaDesc d = Describe(CCO_GDA_OP_PUT, signalOp, signalId, signalValue);
    d.dstWindow = window_id(dst);
    d.dstOffset = dstOffset;
    d.srcWindow = window_id(src);
    d.srcOffset = srcOffset;
    d.bytes = bytes;
    return Post<Coop, TM>(peer, d, dst, src);
  }

  /// Stores `bytes` (1 to 8) bytes of `value` at (dst, dstOffset) of `peer`.
  template <class Coop = ccoCoopThread, ccoThreadMode TM = CCO_THREAD_INDEPENDENT>
  CCO_DEVICE_API int32_t put_value(int32_t peer, ccoWindow_t dst, uint64_t dstOffset, uint64_t value,
                                   ccoSignalOp signalOp = CCO_SIGNAL_NONE, int32_t signalId = 0, uint64_t signalValue = 0,
                                   uint32_t bytes = 8) {
    if (bytes == 0 || bytes > 8 || !user_signal_ok(signalOp, signalId) || !window_holds(dst, dstOffset, bytes))
      return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    ccoGdaDesc d = Describe(CCO_GDA_OP_PUT_VALUE, signalOp, signalId, signalValue);
    d.dstWindow = window_id(dst);
    d.dstOffset = dstOffset;
    d.srcOffset = value;
    d.bytes = bytes;
    return Post<Coop, TM>(peer, d, dst);
  }

  /// Copies `bytes` of (remote, remoteOffset) on `peer` to (local, localOffset) here.
  template <class Coop = ccoCoopThread, ccoThreadMode TM = CCO_THREAD_INDEPENDENT>
  CCO_DEVICE_API int32_t get(int32_t peer, ccoWindow_t remote, uint64_t remoteOffset, ccoWindow_t local,
                             uint64_t localOffset, uint64_t bytes) {
    if (!window_holds(local, localOffset, bytes) || !window_holds(remote, remoteOffset, bytes))
      return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    ccoGdaDesc d = Describe(CCO_GDA_OP_GET, CCO_SIGNAL_NONE, 0, 0);
    d.dstWindow = window_id(local);
    d.dstOffset = localOffset;
    d.srcWindow = window_id(remote);
    d.srcOffset = remoteOffset;
    d.bytes = bytes;
    return Post<Coop, TM>(peer, d, local, remote);
  }

  /// Adds to signal `signalId` of `peer` (INC: 1, ADD: value), after every earlier post of
  /// this context to that peer. It rings in every mode (a Deferred handle's earlier posts
  /// go with it): a signal is what a peer waits for.
  template <class Coop = ccoCoopThread>
  CCO_DEVICE_API int32_t signal(int32_t peer, int32_t signalId, ccoSignalOp op = CCO_SIGNAL_INC, uint64_t value = 1) {
    static_assert(Mode != CCO_GDA_DOORBELL_CALLER_ORDERED, "CallerOrdered handles have no signal(): "
                                                                  "give the put a signal instead");
    if (op == CCO_SIGNAL_NONE || !user_signal_ok(op, signalId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    return Post<Coop, CCO_THREAD_INDEPENDENT, ccoGdaImmediate>(peer, Describe(CCO_GDA_OP_SIGNAL, op, signalId, value));
  }

  /// signal() on one of the GDA barriers' words (ids from signalCount on), which user calls
  /// may not touch: ccoGdaBarrierSession's.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t barrier_signal(int32_t peer, uint32_t barrier) {
    if (barrier >= f_.barrierCount) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    return Post<Coop, CCO_THREAD_INDEPENDENT, ccoGdaImmediate>(
        peer, Describe(CCO_GDA_OP_SIGNAL, CCO_SIGNAL_INC, static_cast<int32_t>(f_.signalCount + barrier), 1));
  }

  /// Counter `counterId` will count this call once every post of this context made before
  /// it has completed locally (source buffers reusable): a marker goes into every ring of
  /// the context, and the rings are rung.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t counter(int32_t counterId) {
    if (!counter_ok(counterId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    ccoGdaDesc d = Describe(CCO_GDA_OP_SIGNAL, CCO_SIGNAL_NONE, 0, 0);
    d.flags = CCO_GDA_DESC_MARKER;
    d.counterId = static_cast<uint32_t>(counterId);
    return EveryRing<Coop>([&](int32_t i) {
      uint64_t ticket;
      return gda::Post<ccoGdaImmediate>(ring(i), d, limits_, &ticket);
    });
  }

  // --- signals and counters of this rank ---------------------------------------------

  /// Signal and counter calls of a bad context, id or width are refused (reads return 0).
  /// `bits` is 64, or 32 to compare and return the low 32 bits (a wait's `least` then fits).
  CCO_DEVICE_API uint64_t read_signal(int32_t signalId, int32_t bits = 64) const {
    if (!signal_ok(signalId) || !bits_ok(bits, 0)) return 0;
    const uint64_t v = signal_value(static_cast<uint32_t>(signalId)) - *shadow(signalId);
    arch::fence<scope::System>();  // acquire: what the signal announced is visible after this
    return bits == 32 ? static_cast<uint32_t>(v) : v;
  }

  template <class Coop = ccoCoopThread>
  CCO_DEVICE_API int32_t wait_signal(int32_t signalId, uint64_t least, int32_t bits = 64) {
    if (!signal_ok(signalId) || !bits_ok(bits, least)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    return gda::Consume<Coop>([&] { return signal_value(static_cast<uint32_t>(signalId)); }, [&] { return any_ring_failed(); },
                              shadow(signalId), least, bits, limits_);
  }

  CCO_DEVICE_API int32_t reset_signal(int32_t signalId) {
    if (!signal_ok(signalId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    *shadow(signalId) = signal_value(static_cast<uint32_t>(signalId));
    return CCO_DEVICE_STATUS_OK;
  }

  CCO_DEVICE_API uint64_t read_counter(int32_t counterId) const {
    if (!counter_ok(counterId)) return 0;
    return arch::load<order::Acquire, scope::System>(counter_word(counterId)) - *counter_shadow(counterId);
  }

  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t wait_counter(int32_t counterId, uint64_t least) {
    if (!counter_ok(counterId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    const uint64_t* word = counter_word(counterId);
    return gda::Consume<Coop>([&] { return arch::load<arch::PollOrder, scope::System>(word); },
                              [&] { return any_ring_failed(); }, counter_shadow(counterId), least, 64, limits_);
  }

  CCO_DEVICE_API int32_t reset_counter(int32_t counterId) {
    if (!counter_ok(counterId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    *counter_shadow(counterId) = arch::load<order::Acquire, scope::System>(counter_word(counterId));
    return CCO_DEVICE_STATUS_OK;
  }

  // --- flushes -------------------------------------------------------------------------

  // The group's direct stores (device/gda_direct.hpp) have landed: after the group's barrier,
  // one thread's system-scope fence is cumulative over every store the barrier ordered before
  // it, and the caller's next group barrier orders every thread after the fence. A flush in a
  // kernel loop took 0.4 us less than with every thread of a block fencing. A handle that
  // cannot go direct has nothing to land.
  // (An amdgcn block: each thread fences, arch::kBlockFenceCumulative.)
  template <class Coop> CCO_DEVICE_API void LandDirect() const {
    if (Mode == CCO_GDA_DOORBELL_CALLER_ORDERED || f_.directMaxBytes == 0) return;
    Coop coop;
    if (Coop::kScope == CCO_COOP_BLOCK && !arch::kBlockFenceCumulative) {
      arch::fence<scope::System>();
      return;
    }
    coop.sync();
    if (coop.thread_rank() == 0) arch::fence<scope::System>();
  }

  /// Every post of this context so far is complete.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t flush() {
    if (!context_ok()) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    LandDirect<Coop>();
    return EveryRing<Coop>([&](int32_t i) { return gda::Flush<Mode>(ring(i), limits_); });
  }

  /// Every post of this context to `peer` so far is complete.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t flush_peer(int32_t peer) {
    const int32_t index = peer_index(peer);
    if (!context_ok() || index < 0) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    LandDirect<Coop>();
    return worst_status(Coop(), gda::Flush<Mode>(ring(index), limits_));  // timeouts are per thread
  }

  /// Releases every post of this context so far and notes how far each ring must get;
  /// flush_wait waits for that.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t flush_async() {
    if (!context_ok()) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    Coop coop;
    coop.sync();
    if (Mode == CCO_GDA_DOORBELL_CALLER_ORDERED && coop.thread_rank() == 0) arch::fence<scope::System>();
    coop.sync();
    for (int32_t i = static_cast<int32_t>(coop.thread_rank()); i < f_.peerCount; i += static_cast<int32_t>(coop.size())) {
      const gda::RingView r = ring(i);
      const uint64_t end = arch::load<order::Relaxed, scope::Device>(&r.dev->head);
      gda::Ring(r, end);
      // Every handle of the context, in every block, shares the target: raised, never
      // lowered, so that no flush_wait waits for less than its own flush_async noted.
      gda::RollingMax(flush_target(i), end);
    }
    coop.sync();
    return CCO_DEVICE_STATUS_OK;
  }

  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t flush_wait() {
    if (!context_ok()) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    LandDirect<Coop>();
    return EveryRing<Coop>([&](int32_t i) {
      return gda::WaitConsumed(ring(i), arch::load<order::Relaxed, scope::Device>(flush_target(i)), limits_);
    });
  }

  // --- for ccoGdaBarrierSession ----------------------------------------------------------

  CCO_DEVICE_API const ccoDevComm& devcomm() const { return dc_; }
  /// A device communicator of this ABI with GDA, and a context of it.
  CCO_DEVICE_API bool context_ok() const {
    return f_.valid && f_.peerCount > 0 && static_cast<uint32_t>(context_) < f_.contextCount;
  }
  CCO_DEVICE_API const gda::WaitLimits& limits() const { return limits_; }
  /// Whether the proxy failed this context's ring to GDA-team index `index` (its peer lost).
  CCO_DEVICE_API bool ring_failed(int32_t index) const { return gda::RingFailed(ring(index).dev); }
  /// This rank's words of signal `id` that world rank `sender` adds to: its proxy's, and
  /// the one its device adds to directly (null outside this rank's LSA team).
  CCO_DEVICE_API void sender_words(uint32_t id, int32_t sender, const uint64_t** proxy, const uint64_t** direct) const {
    const uint64_t* words = reinterpret_cast<const uint64_t*>(f_.signals);
    const int32_t lsaSender = sender - f_.topo.lsaWorldBase;
    *proxy = words + cco_gda_signal_word(id, sender, f_.topo.nRanks);
    *direct = static_cast<uint32_t>(lsaSender) < static_cast<uint32_t>(f_.topo.lsaSize) ? words + direct_word(id, lsaSender)
                                                                                         : nullptr;
  }
  /// Barrier `index`'s epoch word (this rank's progress), after the flush targets.
  CCO_DEVICE_API uint64_t* barrier_epoch(uint32_t index) const {
    return resource(f_.flushOffset) + static_cast<uint64_t>(f_.contextCount) * f_.peerCount + index;
  }

 private:
  CCO_DEVICE_API ccoGdaTopo topo() const { return f_.topo; }
  CCO_DEVICE_API int32_t peer_index(int32_t peer) const {
    const ccoGdaTopo t = topo();
    return cco_gda_conn_peer_index(f_.connectionType, &t, peer);
  }
  // Whether the proxy failed a ring of this context (a peer lost, a descriptor refused): a
  // signal or counter wait then ends, since what it waits for may never come.
  CCO_DEVICE_API bool any_ring_failed() const {
    for (int32_t i = 0; i < f_.peerCount; ++i)
      if (gda::RingFailed(ring(i).dev)) return true;
    return false;
  }

  CCO_DEVICE_API gda::RingView ring(int32_t index) const {
    return gda::RingAt(f_.ringSlots, f_.ringHost, f_.ringDevice, f_.ringDepth,
                       cco_gda_ring_index(context_, index, f_.peerCount));
  }
  // A null handle is id 0, which no window has: the proxy refuses the operation.
  CCO_DEVICE_API static uint32_t window_id(ccoWindow_t win) {
    return win == 0 ? 0 : reinterpret_cast<const ccoWindowDevice*>(win)->id;
  }

  CCO_DEVICE_API uint64_t* resource(uint64_t offset) const {
    return reinterpret_cast<uint64_t*>(f_.resources + offset);
  }
  CCO_DEVICE_API bool signal_ok(int32_t id) const {
    return context_ok() && static_cast<uint32_t>(id) < f_.signalCount && f_.signals;
  }
  // A user call's signal: none, or one of the user signals (the barriers' words after them
  // are ccoGdaBarrierSession's: a signal there would let a barrier round pass early).
  CCO_DEVICE_API bool user_signal_ok(ccoSignalOp op, int32_t id) const {
    return op == CCO_SIGNAL_NONE || ((op == CCO_SIGNAL_INC || op == CCO_SIGNAL_ADD) && signal_ok(id));
  }
  CCO_DEVICE_API bool counter_ok(int32_t id) const {
    return context_ok() && static_cast<uint32_t>(id) < f_.counterCount && f_.counters;
  }
  CCO_DEVICE_API static bool bits_ok(int32_t bits, uint64_t least) {
    return bits == 64 || (bits == 32 && least <= 0xffffffffull);
  }
  // A window of this communicator, live, holding `bytes` from `offset`: what the proxy would
  // refuse by failing the ring (every later call on it ABORTED) is refused here instead.
  CCO_DEVICE_API bool window_holds(ccoWindow_t win, uint64_t offset, uint64_t bytes) const {
    return cco::window_holds(f_.flatBase, f_.stride, win, offset, bytes);
  }
  // Signal `id`'s value here: the sum of its words over the GDA team (abi/gda.h: each sender
  // writes only its own). arch::PollOrder loads (relaxed on GPUs), eight in flight at a
  // time; a caller that acts on the value fences after it.
  CCO_DEVICE_API uint64_t signal_value(uint32_t id) const {
    const uint64_t* words = reinterpret_cast<const uint64_t*>(f_.signals);
    const ccoGdaTopo t = topo();
    const int32_t type = f_.connectionType;
    uint64_t sum = 0;
    for (int32_t i = 0; i < f_.peerCount; i += 8) {
      uint64_t v[8];
      CCO_UNROLL
      for (int32_t k = 0; k < 8; ++k) {
        const int32_t sender = i + k < f_.peerCount ? cco_gda_conn_team_peer(type, &t, i + k) : -1;
        v[k] = sender < 0 ? 0 : arch::load<arch::PollOrder, scope::System>(words + cco_gda_signal_word(id, sender, t.nRanks));
      }
      CCO_UNROLL
      for (int32_t k = 0; k < 8; ++k) sum += v[k];
    }
    // The direct words: one per LSA rank (zero for one that never sent directly).
    for (int32_t i = 0; i < t.lsaSize; i += 8) {
      uint64_t v[8];
      CCO_UNROLL
      for (int32_t k = 0; k < 8; ++k)
        v[k] = i + k < t.lsaSize ? arch::load<arch::PollOrder, scope::System>(words + direct_word(id, i + k)) : 0;
      CCO_UNROLL
      for (int32_t k = 0; k < 8; ++k) sum += v[k];
    }
    return sum;
  }
  CCO_DEVICE_API uint64_t direct_word(uint32_t id, int32_t senderLsaRank) const {
    return cco_gda_direct_signal_word(f_.signalCount + f_.barrierCount, f_.topo.nRanks, id, senderLsaRank,
                                      f_.topo.lsaSize);
  }
  CCO_DEVICE_API uint64_t* counter_word(int32_t id) const { return reinterpret_cast<uint64_t*>(f_.counters) + id; }
  CCO_DEVICE_API uint64_t* shadow(int32_t id) const { return resource(f_.shadowOffset) + id; }
  CCO_DEVICE_API uint64_t* counter_shadow(int32_t id) const { return resource(f_.shadowOffset) + f_.signalCount + id; }
  CCO_DEVICE_API uint64_t* flush_target(int32_t index) const {
    return resource(f_.flushOffset) + static_cast<uint64_t>(context_) * f_.peerCount + index;
  }

  CCO_DEVICE_API static ccoGdaDesc Describe(ccoGdaOp op, ccoSignalOp signalOp, int32_t signalId, uint64_t signalValue) {
    ccoGdaDesc d = {};
    d.op = static_cast<uint8_t>(op);
    d.signalOp = static_cast<uint8_t>(signalOp);
    d.signalId = static_cast<uint32_t>(signalId);
    d.signalValue = signalValue;
    return d;
  }

  // step(i) on each ring of the context, shared out over the group (group_waits.hpp).
  template <class Coop, class Step> CCO_DEVICE_API int32_t EveryRing(Step step) const {
    return gda::EveryRing<Coop>(f_.peerCount, [&](int32_t i) { return ring(i); }, step);
  }

  // dst / src: the descriptor's windows, as handles (0 where the operation has none): a get's
  // dst is the local window, its src the peer's.
  // RingMode: the doorbell mode the post rings by (the handle's, or Immediate for a signal).
  template <class Coop, ccoThreadMode TM, ccoGdaDoorbellMode RingMode = Mode>
  CCO_DEVICE_API int32_t Post(int32_t peer, const ccoGdaDesc& d, ccoWindow_t dst = 0, ccoWindow_t src = 0) {
    const int32_t index = peer_index(peer);
    if (!context_ok() || index < 0) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    Coop coop;
    coop.sync();  // the group's earlier writes come before the post
    // The direct path: thread 0 decides; the group shares a put's copy where it can vote.
    bool direct = false;
    const int32_t lsaPeer = peer - f_.topo.lsaWorldBase;
    const bool copies = d.op == CCO_GDA_OP_PUT || d.op == CCO_GDA_OP_GET;
    if (Coop::kScope != CCO_COOP_THREAD && Coop::kVotes && copies) {
      direct = coop.any(coop.thread_rank() == 0 && DirectReady(lsaPeer, index, d, true));
      if (direct) {
        DirectData(d, dst, src, lsaPeer, coop.thread_rank(), coop.size());
        coop.sync();  // every share stored before thread 0's signal releases them
        if (coop.thread_rank() == 0) DirectSignal(d, lsaPeer);
      }
    } else if (coop.thread_rank() == 0) {
      direct = DirectReady(lsaPeer, index, d, false);
      if (direct) {
        DirectData(d, dst, src, lsaPeer, 0, 1);
        DirectSignal(d, lsaPeer);
      }
    }
    int32_t status = CCO_DEVICE_STATUS_OK;
    if (coop.thread_rank() == 0 && !direct) {
      ccoGdaDesc posted = d;  // one copy, changed in place: a choice of two would live in local memory
      PutAsValue(&posted, src);
      if (TM == CCO_THREAD_AGGREGATE && Coop::kScope == CCO_COOP_THREAD) {
        status = PostAggregated<RingMode>(index, posted);
      } else {
        uint64_t ticket;
        status = gda::Post<RingMode>(ring(index), posted, limits_, &ticket);
      }
    }
    return worst_status(coop, status);  // thread 0's, in every thread
  }

  // Whether the operation may take the direct path (device/gda_direct.hpp) to LSA rank
  // lsaPeer; false: it goes through the ring. shared: a put's or get's copy would be shared
  // by a warp or block (the group bound), else thread 0 would copy alone.
  CCO_DEVICE_API bool DirectReady(int32_t lsaPeer, int32_t index, const ccoGdaDesc& d, bool shared) {
    if (Mode == CCO_GDA_DOORBELL_CALLER_ORDERED || f_.directMaxBytes == 0 || d.flags != 0) return false;
    if (static_cast<uint32_t>(lsaPeer) >= static_cast<uint32_t>(f_.topo.lsaSize)) return false;
    switch (d.op) {
      case CCO_GDA_OP_PUT:
      case CCO_GDA_OP_GET:  // (put, get and put_value checked their windows: window_holds)
        if (d.bytes > (shared ? f_.directGroupMaxBytes : f_.directMaxBytes)) return false;
        break;
      case CCO_GDA_OP_PUT_VALUE:
      case CCO_GDA_OP_SIGNAL: break;
      default: return false;
    }
    return gda::RingIdle(ring(index));
  }

  // A put of at most 8 bytes out of a window of this communicator goes through the ring as a
  // put_value: the device reads its source now, so the proxy copies nothing out of device
  // memory (over the network that is a copy and a fence, microseconds on a GPU; here, a
  // copy-engine op where a stream write does). The source is read earlier than the proxy
  // would, which every caller allows: it may not change a put's source before completion.
  CCO_DEVICE_API void PutAsValue(ccoGdaDesc* d, ccoWindow_t src) const {
    if (d->op != CCO_GDA_OP_PUT || d->bytes == 0 || d->bytes > 8 || d->flags != 0) return;  // (src checked by put)
    d->op = CCO_GDA_OP_PUT_VALUE;
    d->srcWindow = 0;
    d->srcOffset = gda::LoadValue(lsa_local_address(reinterpret_cast<const ccoWindowDevice*>(src), d->srcOffset),
                                  static_cast<uint32_t>(d->bytes));
  }

  // Thread `rank` of `size`'s share of a direct operation's data (a put_value is thread 0's).
  CCO_DEVICE_API void DirectData(const ccoGdaDesc& d, ccoWindow_t dst, ccoWindow_t src, int32_t lsaPeer, uint32_t rank,
                                 uint32_t size) const {
    const ccoWindowDevice* to = reinterpret_cast<const ccoWindowDevice*>(dst);
    const ccoWindowDevice* from = reinterpret_cast<const ccoWindowDevice*>(src);
    if (d.op == CCO_GDA_OP_PUT) {
      gda::CopyShare(lsa_peer_address(to, lsaPeer, d.dstOffset), lsa_local_address(from, d.srcOffset), d.bytes, rank,
                     size);
    } else if (d.op == CCO_GDA_OP_GET) {
      gda::CopyShare(lsa_local_address(to, d.dstOffset), lsa_peer_address(from, lsaPeer, d.srcOffset), d.bytes, rank,
                     size);
    } else if (d.op == CCO_GDA_OP_PUT_VALUE && rank == 0) {
      gda::StoreValue(lsa_peer_address(reinterpret_cast<const ccoWindowDevice*>(dst), lsaPeer, d.dstOffset),
                      d.srcOffset, static_cast<uint32_t>(d.bytes));
    }
  }

  // A direct operation's signal: a release add on this rank's direct word at the peer.
  CCO_DEVICE_API void DirectSignal(const ccoGdaDesc& d, int32_t lsaPeer) const {
    if (d.signalOp == CCO_SIGNAL_NONE) return;
    const uint64_t toPeer = static_cast<uint64_t>(static_cast<int64_t>(lsaPeer) - f_.topo.lsaRank) * f_.stride;
    uint64_t* word = reinterpret_cast<uint64_t*>(f_.signals + toPeer) + direct_word(d.signalId, f_.topo.lsaRank);
    arch::add<order::Release, scope::System>(word, d.signalOp == CCO_SIGNAL_INC ? uint64_t{1} : d.signalValue);
  }

  // The lanes of this warp that post to one ring now share one reservation and one ring.
  template <ccoGdaDoorbellMode RingMode> CCO_DEVICE_API int32_t PostAggregated(int32_t index, const ccoGdaDesc& d) {
    arch::LaneMask pending = arch::active_mask();
    const uint32_t lane = arch::lane_id();
    int32_t status = CCO_DEVICE_STATUS_OK;
    while (pending != 0) {
      const uint32_t leader = arch::lowest_lane(pending);
      const int32_t leaderIndex = static_cast<int32_t>(arch::shuffle(static_cast<uint64_t>(index), leader));
      const arch::LaneMask group = arch::ballot(index == leaderIndex) & pending;
      pending &= ~group;
      if (index != leaderIndex) continue;
      const gda::RingView r = ring(index);
      const uint64_t count = arch::lane_count(group);
      const uint64_t below = arch::lane_count(group & ((arch::LaneMask{1} << lane) - 1));
      // The leader reserves the group's slots once they are all free (or none: a failed wait
      // leaves no ticket unwritten); every lane of the group gets its verdict. The leader may
      // still be waiting in Reserve when the others reach the shuffle: it names the group.
      uint64_t first = 0, reserved = CCO_DEVICE_STATUS_OK;
      if (lane == leader) reserved = static_cast<uint32_t>(gda::Reserve(r, limits_, &first, count));
      first = arch::shuffle_among(first, leader, group);
      const int32_t mine = static_cast<int32_t>(static_cast<uint32_t>(arch::shuffle_among(reserved, leader, group)));
      if (mine == CCO_DEVICE_STATUS_OK) gda::Write<RingMode>(r, first + below, d);
      else status = mine;
      arch::warp_sync_among(group);
      if (lane == leader && mine == CCO_DEVICE_STATUS_OK && RingMode == CCO_GDA_DOORBELL_IMMEDIATE)
        gda::Ring(r, first + count);
    }
    return status;
  }

  // The fields of dc_ the calls use, read once when the handle is made. A handle built on
  // a ccoDevComm in global memory (the bitcode's `dc`) would otherwise load them again after
  // every fence and barrier (the compiler must assume memory changed; a system-scope fence
  // empties L1 on nvptx): a memory trip each, on the critical path of every round trip.
  struct Fields {
    ccoGdaTopo topo;
    bool valid;  // devcomm_valid
    int32_t connectionType, peerCount;
    uint32_t contextCount, signalCount, counterCount, barrierCount, ringDepth;
    uint32_t directMaxBytes, directGroupMaxBytes;  // the latter already the larger of the two
    uint64_t ringSlots, ringHost, ringDevice, signals, counters, flatBase, stride;
    uint64_t resources;  // this rank's copy of the resources
    uint32_t shadowOffset, flushOffset;
    CCO_DEVICE_API explicit Fields(const ccoDevComm& dc)
        : topo(gda_topo(dc)),
          valid(devcomm_valid(dc)),
          connectionType(static_cast<int32_t>(dc.gdaConnectionType)),
          peerCount(dc.gdaPeerCount),
          contextCount(dc.gdaContextCount),
          signalCount(dc.gdaSignalCount),
          counterCount(dc.gdaCounterCount),
          barrierCount(dc.gdaBarrierCount),
          ringDepth(dc.gdaRingDepth),
          directMaxBytes(dc.gdaDirectMaxBytes),
          directGroupMaxBytes(dc.gdaDirectGroupMaxBytes > dc.gdaDirectMaxBytes ? dc.gdaDirectGroupMaxBytes
                                                                                 : dc.gdaDirectMaxBytes),
          ringSlots(dc.gdaRingSlots),
          ringHost(dc.gdaRingHost),
          ringDevice(dc.gdaRingDevice),
          signals(dc.gdaSignals),
          counters(dc.gdaCounters),
          flatBase(dc.lsaFlatBase),
          stride(dc.lsaStride),
          resources(dc.lsaFlatBase + static_cast<uint64_t>(dc.lsaRank) * dc.lsaStride + dc.resourceOffset),
          shadowOffset(dc.gdaShadowOffset),
          flushOffset(dc.gdaFlushOffset) {}
  };

  const ccoDevComm& dc_;
  Fields f_;
  int32_t context_;
  gda::WaitLimits limits_;
};

/// A barrier among the GDA team, through context 0 of an Immediate handle: each member adds
/// 1 to its own word in every other member's barrier area (signal words after the user
/// signals: barrier `index`, sender's world rank), then waits until every member's word in
/// its own area reached the round. Every thread of the coop calls; they share the peers.
template <class Coop, class Provider = ccoGdaProxy> class ccoGdaBarrierSession {
 public:
  CCO_DEVICE_API ccoGdaBarrierSession(Coop coop, ccoGda<Provider, ccoGdaImmediate>& gda, uint32_t index)
      : coop_(coop), gda_(gda), index_(index) {}

  CCO_DEVICE_API int32_t sync() {
    const ccoDevComm& dc = gda_.devcomm();
    // (a bad context is refused before the epoch moves: a round that signalled nobody would
    // pair this rank's later rounds with the peers' earlier ones)
    if (!gda_.context_ok() || index_ >= dc.gdaBarrierCount) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    uint64_t* epoch = gda_.barrier_epoch(index_);
    coop_.sync();
    const uint64_t target = *epoch + 1;
    const uint32_t id = dc.gdaSignalCount + index_;  // the barrier's signal, one word per sender
    int32_t status = CCO_DEVICE_STATUS_OK;
    for (int32_t i = static_cast<int32_t>(coop_.thread_rank()); i < dc.gdaPeerCount && status == CCO_DEVICE_STATUS_OK;
         i += static_cast<int32_t>(coop_.size())) {
      const int32_t peer = gda_.team_peer(i);
      if (peer != dc.rank) status = gda_.template barrier_signal<ccoCoopThread>(peer, index_);
    }
    for (int32_t i = static_cast<int32_t>(coop_.thread_rank()); i < dc.gdaPeerCount && status == CCO_DEVICE_STATUS_OK;
         i += static_cast<int32_t>(coop_.size())) {
      const int32_t peer = gda_.team_peer(i);
      if (peer == dc.rank) continue;
      // The peer's word from its proxy plus, in the LSA team, the one it adds to directly.
      const uint64_t *word, *direct;
      gda_.sender_words(id, peer, &word, &direct);
      status = gda::WaitUnless(
          [&] {
            const uint64_t viaDirect = direct ? arch::load<order::Acquire, scope::System>(direct) : 0;
            return arch::load<order::Acquire, scope::System>(word) + viaDirect >= target;
          },
          [&] { return gda_.ring_failed(i); }, gda_.limits());
    }
    status = worst_status(coop_, status);  // every thread's verdict, not only its peers'
    if (coop_.thread_rank() == 0) *epoch = target;
    coop_.sync();
    return status;
  }

 private:
  Coop coop_;
  ccoGda<Provider, ccoGdaImmediate>& gda_;
  uint32_t index_;
};

}  // namespace cco

using cco::ccoGda;
using cco::ccoGdaBarrierSession;
using cco::ccoGdaCallerOrdered;
using cco::ccoGdaDeferred;
using cco::ccoGdaImmediate;

#endif  // CCO_DEVICE_GDA_HPP_
