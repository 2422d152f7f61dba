// SPDX-License-Identifier: MIT
//===-- device/gda.hpp - GPU-initiated one-sided communication --*- C++ -*-===//
//
// ccoGda<Provider, Mode>: puts, put_value, gets and signals to world ranks through one GDA
// context of a device communicator, with signal waits, counters and flushes.
//
//   Provider  how descriptors reach the network: ccoGdaProxy (the portable one: rings of
//             abi/ring.h consumed by the host proxy). A compile-time choice, one per NIC.
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
// for) and ends at the handle's timeout (0: the device communicator's bound, waitTimeoutMs;
// CCO_NO_TIMEOUT: none). Statuses are ccoDeviceStatus values.
// A host proxy carries the posts out; it only queues work on its own stream, so host-side
// waits do not hold it back (launch on a non-blocking stream all the same: a synchronous
// legacy-stream copy waits for a kernel launched there that waits on GDA).
//
// This file declares the API and says what each call does; the types are in
// device/impl/gda__types.hpp, the bodies in device/impl/gda__funcs.hpp (included at the end).
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_GDA_HPP_
#define CCO_DEVICE_GDA_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/impl/gda__types.hpp"
#include "device/ring.hpp"
#include "device/spin_wait.hpp"
#include "device/trace.hpp"

namespace cco {

template <class Provider = ccoGdaProxy, ccoGdaDoorbellMode Mode = ccoGdaImmediate> class ccoGda {
 public:
  // A device communicator of another ABI (or no device communicator: magic and version are
  // checked) makes every call of the handle INVALID_ARGUMENT, as does a context out of range.
  CCO_DEVICE_API ccoGda(const ccoDevComm& dc, int32_t context = 0, uint64_t timeoutNs = 0);
  /// The same reading `dc`'s fields with `read` (handles.hpp: ReadInvariant where it lies in
  /// global memory, as the bitcode's does).
  template <class Read> CCO_DEVICE_API ccoGda(const ccoDevComm& dc, int32_t context, uint64_t timeoutNs, Read read);

  /// GDA-team size (connected peers) and the world rank of team index `index` (-1 outside).
  CCO_DEVICE_API int32_t team_size() const;
  CCO_DEVICE_API int32_t team_peer(int32_t index) const;

  /// Copies `bytes` of (src, srcOffset) here to (dst, dstOffset) on `peer`; with a signal op,
  /// adds to signal `signalId` there once the data (and every earlier post of this context to
  /// that peer) has landed.
  template <class Coop = ccoCoopThread, ccoThreadMode TM = CCO_THREAD_INDEPENDENT>
  CCO_DEVICE_API int32_t put(int32_t peer, ccoWindow_t dst, uint64_t dstOffset, ccoWindow_t src, uint64_t srcOffset,
                             uint64_t bytes, ccoSignalOp signalOp = CCO_SIGNAL_NONE, int32_t signalId = 0,
                             uint64_t signalValue = 0);

  /// Stores `bytes` (1 to 8) bytes of `value` at (dst, dstOffset) of `peer`.
  template <class Coop = ccoCoopThread, ccoThreadMode TM = CCO_THREAD_INDEPENDENT>
  CCO_DEVICE_API int32_t put_value(int32_t peer, ccoWindow_t dst, uint64_t dstOffset, uint64_t value,
                                   ccoSignalOp signalOp = CCO_SIGNAL_NONE, int32_t signalId = 0,
                                   uint64_t signalValue = 0, uint32_t bytes = 8);

  /// Copies `bytes` of (remote, remoteOffset) on `peer` to (local, localOffset) here.
  template <class Coop = ccoCoopThread, ccoThreadMode TM = CCO_THREAD_INDEPENDENT>
  CCO_DEVICE_API int32_t get(int32_t peer, ccoWindow_t remote, uint64_t remoteOffset, ccoWindow_t local,
                             uint64_t localOffset, uint64_t bytes);

  /// Adds to signal `signalId` of `peer` (INC: 1, ADD: value), after every earlier post of
  /// this context to that peer. It rings in every mode (a Deferred handle's earlier posts
  /// go with it): a signal is what a peer waits for. CallerOrdered handles have none.
  template <class Coop = ccoCoopThread>
  CCO_DEVICE_API int32_t signal(int32_t peer, int32_t signalId, ccoSignalOp op = CCO_SIGNAL_INC, uint64_t value = 1);

  /// signal() on one of the GDA barriers' words (ids from signalCount on), which user calls
  /// may not touch: ccoGdaBarrierSession's.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t barrier_signal(int32_t peer, uint32_t barrier);

  /// Counter `counterId` will count this call once every post of this context made before
  /// it has completed locally (source buffers reusable): a marker goes into every ring of
  /// the context, and the rings are rung.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t counter(int32_t counterId);

  // --- signals and counters of this rank ---------------------------------------------

  /// Signal and counter calls of a bad context, id or width are refused (reads return 0).
  /// `bits` is 64, or 32 to compare and return the low 32 bits (a wait's `least` then fits).
  /// read_signal: the signal's value minus its shadow, with acquire order.
  CCO_DEVICE_API uint64_t read_signal(int32_t signalId, int32_t bits = 64) const;
  /// Waits until read_signal reaches `least`, then consumes it (shadow += least).
  template <class Coop = ccoCoopThread>
  CCO_DEVICE_API int32_t wait_signal(int32_t signalId, uint64_t least, int32_t bits = 64);
  /// Sets the shadow to the value: read_signal reads 0.
  CCO_DEVICE_API int32_t reset_signal(int32_t signalId);

  /// The same for counters.
  CCO_DEVICE_API uint64_t read_counter(int32_t counterId) const;
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t wait_counter(int32_t counterId, uint64_t least);
  CCO_DEVICE_API int32_t reset_counter(int32_t counterId);

  // --- flushes -------------------------------------------------------------------------

  // The group's direct stores (device/gda_direct.hpp) have landed: after the group's barrier,
  // one thread's system-scope fence is cumulative over every store the barrier ordered before
  // it, and the caller's next group barrier orders every thread after the fence. A handle that
  // cannot go direct has nothing to land.
  template <class Coop> CCO_DEVICE_API void LandDirect() const;

  /// Every post of this context so far is complete.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t flush();

  /// Every post of this context to `peer` so far is complete.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t flush_peer(int32_t peer);

  /// Releases every post of this context so far and notes how far each ring must get;
  /// flush_wait waits for that.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t flush_async();
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t flush_wait();

  // --- for ccoGdaBarrierSession ----------------------------------------------------------

  /// The device communicator's fields the handle read when it was made.
  CCO_DEVICE_API const gda::HandleFields& fields() const;
  /// A device communicator of this ABI with GDA, and a context of it.
  CCO_DEVICE_API bool context_ok() const;
  CCO_DEVICE_API const WaitLimits& limits() const;
  /// The device communicator's trace buffer (device/trace.hpp), 0: not traced.
  CCO_DEVICE_API uint64_t trace_buffer() const;
  /// Whether the proxy failed this context's ring to GDA-team index `index` (its peer lost).
  CCO_DEVICE_API bool ring_failed(int32_t index) const;
  /// This rank's words of signal `id` that world rank `sender` adds to: its proxy's, the
  /// one its device adds to directly, and its proxy's host word (both null outside this
  /// rank's LSA team; the host word null without host signal words).
  CCO_DEVICE_API void sender_words(uint32_t id, int32_t sender, const uint64_t** proxy, const uint64_t** direct,
                                   const uint64_t** host) const;
  /// Barrier `index`'s epoch word (this rank's progress), after the flush targets.
  CCO_DEVICE_API uint64_t* barrier_epoch(uint32_t index) const;

 private:
  CCO_DEVICE_API ccoGdaTopo topo() const;
  CCO_DEVICE_API int32_t peer_index(int32_t peer) const;
  // Whether the proxy failed a ring of this context (a peer lost, a descriptor refused): a
  // signal or counter wait then ends, since what it waits for may never come.
  CCO_DEVICE_API bool any_ring_failed() const;
  CCO_DEVICE_API ring::View ring_of(int32_t index) const;
  CCO_DEVICE_API uint64_t* resource(uint64_t offset) const;
  CCO_DEVICE_API bool signal_ok(int32_t id) const;
  // A user call's signal: none, or one of the user signals (the barriers' words after them
  // are ccoGdaBarrierSession's: a signal there would let a barrier round pass early).
  CCO_DEVICE_API bool user_signal_ok(ccoSignalOp op, int32_t id) const;
  CCO_DEVICE_API bool counter_ok(int32_t id) const;
  CCO_DEVICE_API static bool bits_ok(int32_t bits, uint64_t least);
  // A window of this communicator, live, holding `bytes` from `offset`: what the proxy would
  // refuse by failing the ring (every later call on it ABORTED) is refused here instead.
  CCO_DEVICE_API bool window_holds(const WindowFields& win, uint64_t offset, uint64_t bytes) const;
  // Signal `id`'s value here: the sum of its words over the GDA team, the direct words and
  // the host words.
  CCO_DEVICE_API uint64_t signal_value(uint32_t id) const;
  CCO_DEVICE_API uint64_t direct_word(uint32_t id, int32_t senderLsaRank) const;
  // The host word of signal `id` that the proxy of LSA rank `senderLsaRank` stores into
  // (abi/gda.h), null where the device communicator has no host signal words.
  CCO_DEVICE_API const uint64_t* host_word(uint32_t id, int32_t senderLsaRank) const;
  CCO_DEVICE_API uint64_t* counter_word(int32_t id) const;
  CCO_DEVICE_API uint64_t* shadow(int32_t id) const;
  CCO_DEVICE_API uint64_t* counter_shadow(int32_t id) const;
  CCO_DEVICE_API uint64_t* flush_target(int32_t index) const;

  CCO_DEVICE_API static ccoGdaDesc Describe(ccoGdaOp op, ccoSignalOp signalOp, int32_t signalId, uint64_t signalValue);

  // step(i) on each ring of the context, shared out over the group (group_waits.hpp).
  template <class Coop, class Step> CCO_DEVICE_API int32_t EveryRing(Step step) const;

  // One post of `d` to `peer` by the group (thread 0 posts, or takes the direct path); every
  // thread gets the verdict. dst / src: the descriptor's windows, as handles (0 where the
  // operation has none): a get's dst is the local window, its src the peer's.
  // RingMode: the doorbell mode the post rings by (the handle's, or Immediate for a signal).
  template <class Coop, ccoThreadMode TM, ccoGdaDoorbellMode RingMode = Mode>
  CCO_DEVICE_API int32_t Post(int32_t peer, const ccoGdaDesc& d, ccoWindow_t dst = 0, ccoWindow_t src = 0);

  // Whether the operation may take the direct path (device/gda_direct.hpp) to LSA rank
  // lsaPeer; false: it goes through the ring. shared: a put's or get's copy would be shared
  // by a warp or block (the group bound), else thread 0 would copy alone.
  CCO_DEVICE_API bool DirectReady(int32_t lsaPeer, int32_t index, const ccoGdaDesc& d, bool shared);
  // A small put out of a window of this communicator goes through the ring as a put_value.
  CCO_DEVICE_API void PutAsValue(ccoGdaDesc* d, ccoWindow_t src) const;
  // Thread `rank` of `size`'s share of a direct operation's data (a put_value is thread 0's).
  CCO_DEVICE_API void DirectData(const ccoGdaDesc& d, ccoWindow_t dst, ccoWindow_t src, int32_t lsaPeer, uint32_t rank,
                                 uint32_t size) const;
  // A direct operation's signal: a release add on this rank's direct word at the peer.
  CCO_DEVICE_API void DirectSignal(const ccoGdaDesc& d, int32_t lsaPeer) const;
  // Thread 0's post of `d` into the ring of team index `index` (the lanes of a warp together
  // where the thread mode is AGGREGATE); *ticket is its ticket.
  template <ccoThreadMode TM, ccoGdaDoorbellMode RingMode>
  CCO_DEVICE_API int32_t RingPost(int32_t index, const ccoGdaDesc& d, uint64_t* ticket);
  // The lanes of this warp that post to one ring now share one reservation and one ring;
  // *ticket is the caller's.
  template <ccoGdaDoorbellMode RingMode>
  CCO_DEVICE_API int32_t PostAggregated(int32_t index, const ccoGdaDesc& d, uint64_t* ticket);
  // What the trace records of the post of `d` to `peer` (team index `index`), and of a wait
  // or flush of this context (device/trace.hpp).
  CCO_DEVICE_API trace::Event TraceEvent(const ccoGdaDesc& d, int32_t peer, int32_t index, uint16_t flags,
                                         uint64_t ticket, int32_t status) const;
  CCO_DEVICE_API trace::Event TraceWait(uint16_t kind, int32_t peer, uint32_t aux, uint64_t least,
                                        int32_t status) const;

  gda::HandleFields f_;
  int32_t context_;
  WaitLimits limits_;
};

/// A barrier among the GDA team, through context 0 of an Immediate handle: each member adds
/// 1 to its own word in every other member's barrier area (signal words after the user
/// signals: barrier `index`, sender's world rank), then waits until every member's word in
/// its own area reached the round. Every thread of the coop calls; they share the peers.
template <class Coop, class Provider = ccoGdaProxy> class ccoGdaBarrierSession {
 public:
  CCO_DEVICE_API ccoGdaBarrierSession(Coop coop, ccoGda<Provider, ccoGdaImmediate>& gda, uint32_t index);

  /// One round; every thread returns the coop's verdict.
  CCO_DEVICE_API int32_t sync();

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

#include "device/impl/gda__funcs.hpp"

#endif  // CCO_DEVICE_GDA_HPP_
