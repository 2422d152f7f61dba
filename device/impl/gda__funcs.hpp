// SPDX-License-Identifier: MIT
//===-- device/impl/gda__funcs.hpp - the bodies of the GDA API --*- C++ -*-===//
//
// The definitions of what device/gda.hpp declares (its contract comments say what each call
// does; the comments here say how). Included at the end of device/gda.hpp.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_IMPL_GDA_FUNCS_HPP_
#define CCO_DEVICE_IMPL_GDA_FUNCS_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/gda.hpp"
#include "device/gda_direct.hpp"
#include "device/group_waits.hpp"
#include "device/handles.hpp"
#include "device/lsa.hpp"
#include "device/ring.hpp"
#include "device/spin_wait.hpp"
#include "device/team.hpp"
#include "device/trace.hpp"

namespace cco {

// --- ccoGda: the handle and its team -----------------------------------------------------

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API ccoGda<Provider, Mode>::ccoGda(const ccoDevComm& dc, int32_t context, uint64_t timeoutNs)
    : ccoGda(dc, context, timeoutNs, ReadAsIs()) {}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Read>
CCO_DEVICE_API ccoGda<Provider, Mode>::ccoGda(const ccoDevComm& dc, int32_t context, uint64_t timeoutNs, Read read)
    : f_(dc, read), context_(context), limits_(wait_limits(dc, timeoutNs, read)) {
  compute_here(limits_);
}

// (from the handle's fields, as team.hpp's team_size and team_world_rank give them for the
// GDA team: no load of the device communicator behind a test)
template <class Provider, ccoGdaDoorbellMode Mode> CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::team_size() const {
  return f_.peerCount;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::team_peer(int32_t index) const {
  if (index < 0 || index >= f_.peerCount) return -1;
  const ccoGdaTopo t = topo();
  return cco_gda_conn_team_peer(f_.connectionType, &t, index);
}

// --- posts -------------------------------------------------------------------------------

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop, ccoThreadMode TM>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::put(int32_t peer, ccoWindow_t dst, uint64_t dstOffset, ccoWindow_t src,
                                                   uint64_t srcOffset, uint64_t bytes, ccoSignalOp signalOp,
                                                   int32_t signalId, uint64_t signalValue) {
  const WindowFields to = window_fields(window_descriptor(dst)), from = window_fields(window_descriptor(src));
  if (!all_hold(user_signal_ok(signalOp, signalId), window_holds(to, dstOffset, bytes),
                window_holds(from, srcOffset, bytes)))
    return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  ccoGdaDesc d = Describe(CCO_GDA_OP_PUT, signalOp, signalId, signalValue);
  d.dstWindow = to.id;
  d.dstOffset = dstOffset;
  d.srcWindow = from.id;
  d.srcOffset = srcOffset;
  d.bytes = bytes;
  return Post<Coop, TM>(peer, d, dst, src);
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop, ccoThreadMode TM>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::put_value(int32_t peer, ccoWindow_t dst, uint64_t dstOffset,
                                                         uint64_t value, ccoSignalOp signalOp, int32_t signalId,
                                                         uint64_t signalValue, uint32_t bytes) {
  const WindowFields to = window_fields(window_descriptor(dst));
  if (!all_hold(bytes != 0, bytes <= 8, user_signal_ok(signalOp, signalId), window_holds(to, dstOffset, bytes)))
    return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  ccoGdaDesc d = Describe(CCO_GDA_OP_PUT_VALUE, signalOp, signalId, signalValue);
  d.dstWindow = to.id;
  d.dstOffset = dstOffset;
  d.srcOffset = value;
  d.bytes = bytes;
  return Post<Coop, TM>(peer, d, dst);
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop, ccoThreadMode TM>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::get(int32_t peer, ccoWindow_t remote, uint64_t remoteOffset,
                                                   ccoWindow_t local, uint64_t localOffset, uint64_t bytes) {
  const WindowFields here = window_fields(window_descriptor(local)), there = window_fields(window_descriptor(remote));
  if (!all_hold(window_holds(here, localOffset, bytes), window_holds(there, remoteOffset, bytes)))
    return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  ccoGdaDesc d = Describe(CCO_GDA_OP_GET, CCO_SIGNAL_NONE, 0, 0);
  d.dstWindow = here.id;
  d.dstOffset = localOffset;
  d.srcWindow = there.id;
  d.srcOffset = remoteOffset;
  d.bytes = bytes;
  return Post<Coop, TM>(peer, d, local, remote);
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::signal(int32_t peer, int32_t signalId, ccoSignalOp op, uint64_t value) {
  static_assert(Mode != CCO_GDA_DOORBELL_CALLER_ORDERED,
                "CallerOrdered handles have no signal(): "
                "give the put a signal instead");
  if (op == CCO_SIGNAL_NONE || !user_signal_ok(op, signalId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  return Post<Coop, CCO_THREAD_INDEPENDENT, ccoGdaImmediate>(peer, Describe(CCO_GDA_OP_SIGNAL, op, signalId, value));
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::barrier_signal(int32_t peer, uint32_t barrier) {
  if (barrier >= f_.barrierCount) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  return Post<Coop, CCO_THREAD_INDEPENDENT, ccoGdaImmediate>(
      peer, Describe(CCO_GDA_OP_SIGNAL, CCO_SIGNAL_INC, static_cast<int32_t>(f_.signalCount + barrier), 1));
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::counter(int32_t counterId) {
  if (!counter_ok(counterId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  ccoGdaDesc d = Describe(CCO_GDA_OP_SIGNAL, CCO_SIGNAL_NONE, 0, 0);
  d.flags = CCO_GDA_DESC_MARKER;
  d.counterId = static_cast<uint32_t>(counterId);
  return EveryRing<Coop>([&](int32_t i) {
    uint64_t ticket = 0;
    if (!trace::On(f_.trace)) return ring::Post<ccoGdaImmediate>(ring_of(i), d, limits_, &ticket);
    const uint64_t begin = arch::timer_ns();
    d.traceRecord = trace::Take(f_.trace);
    const int32_t status = ring::Post<ccoGdaImmediate>(ring_of(i), d, limits_, &ticket);
    const ccoGdaTopo t = topo();
    trace::Write(f_.trace, d.traceRecord, begin,
                 TraceEvent(d, cco_gda_conn_team_peer(f_.connectionType, &t, i), i, 0, ticket, status));
    return status;
  });
}

// --- signals and counters of this rank ---------------------------------------------------

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t ccoGda<Provider, Mode>::read_signal(int32_t signalId, int32_t bits) const {
  if (!signal_ok(signalId) || !bits_ok(bits, 0)) return 0;
  const uint64_t v = signal_value(static_cast<uint32_t>(signalId)) - *shadow(signalId);
  arch::fence<scope::System>();  // acquire: what the signal announced is visible after this
  return bits == 32 ? static_cast<uint32_t>(v) : v;
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::wait_signal(int32_t signalId, uint64_t least, int32_t bits) {
  if (!signal_ok(signalId) || !bits_ok(bits, least)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  const uint64_t begin = trace::Begin(f_.trace);
  const int32_t status = group::Consume<Coop>([&] { return signal_value(static_cast<uint32_t>(signalId)); },
                                              [&] { return any_ring_failed(); }, shadow(signalId), least, bits, limits_,
                                              /*onePoller=*/f_.hostSignals != 0);
  trace::Span<Coop>(f_.trace, begin,
                    TraceWait(CCO_TRACE_GDA_WAIT_SIGNAL, -1, static_cast<uint32_t>(signalId), least, status));
  return status;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::reset_signal(int32_t signalId) {
  if (!signal_ok(signalId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  *shadow(signalId) = signal_value(static_cast<uint32_t>(signalId));
  return CCO_DEVICE_STATUS_OK;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t ccoGda<Provider, Mode>::read_counter(int32_t counterId) const {
  if (!counter_ok(counterId)) return 0;
  return arch::load<order::Acquire, scope::System>(counter_word(counterId)) - *counter_shadow(counterId);
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::wait_counter(int32_t counterId, uint64_t least) {
  if (!counter_ok(counterId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  const uint64_t* word = counter_word(counterId);
  const uint64_t begin = trace::Begin(f_.trace);
  const int32_t status =
      group::Consume<Coop>([&] { return arch::load<arch::PollOrder, scope::System>(word); },
                           [&] { return any_ring_failed(); }, counter_shadow(counterId), least, 64, limits_);
  trace::Span<Coop>(f_.trace, begin,
                    TraceWait(CCO_TRACE_GDA_WAIT_COUNTER, -1, static_cast<uint32_t>(counterId), least, status));
  return status;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::reset_counter(int32_t counterId) {
  if (!counter_ok(counterId)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  *counter_shadow(counterId) = arch::load<order::Acquire, scope::System>(counter_word(counterId));
  return CCO_DEVICE_STATUS_OK;
}

// --- flushes -----------------------------------------------------------------------------

// One fence by thread 0 after the group's barrier costs a block less than a fence in every
// thread. An amdgcn block's fence is not cumulative (arch::kBlockFenceCumulative): there each
// thread fences.
template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API void ccoGda<Provider, Mode>::LandDirect() const {
  if (Mode == CCO_GDA_DOORBELL_CALLER_ORDERED || f_.directMaxBytes == 0) return;
  Coop coop;
  if (Coop::kScope == CCO_COOP_BLOCK && !arch::kBlockFenceCumulative) {
    arch::fence<scope::System>();
    return;
  }
  coop.sync();
  if (coop.thread_rank() == 0) arch::fence<scope::System>();
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::flush() {
  if (!context_ok()) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  const uint64_t begin = trace::Begin(f_.trace);
  LandDirect<Coop>();
  const int32_t status = EveryRing<Coop>([&](int32_t i) { return ring::Flush<Mode>(ring_of(i), limits_); });
  trace::Span<Coop>(f_.trace, begin, TraceWait(CCO_TRACE_GDA_FLUSH, -1, 0, 0, status));
  return status;
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::flush_peer(int32_t peer) {
  const int32_t index = peer_index(peer);
  if (!context_ok() || index < 0) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  const uint64_t begin = trace::Begin(f_.trace);
  LandDirect<Coop>();
  const int32_t status = worst_status(Coop(), ring::Flush<Mode>(ring_of(index), limits_));  // timeouts are per thread
  trace::Span<Coop>(f_.trace, begin, TraceWait(CCO_TRACE_GDA_FLUSH, peer, 0, 0, status));
  return status;
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::flush_async() {
  if (!context_ok()) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  Coop coop;
  coop.sync();
  if (Mode == CCO_GDA_DOORBELL_CALLER_ORDERED && coop.thread_rank() == 0) arch::fence<scope::System>();
  coop.sync();
  for (int32_t i = static_cast<int32_t>(coop.thread_rank()); i < f_.peerCount; i += static_cast<int32_t>(coop.size())) {
    const ring::View r = ring_of(i);
    const uint64_t end = arch::load<order::Relaxed, scope::Device>(&r.dev->head);
    ring::Doorbell(r, end);
    // Every handle of the context, in every block, shares the target: raised, never
    // lowered, so that no flush_wait waits for less than its own flush_async noted.
    ring::RollingMax(flush_target(i), end);
  }
  coop.sync();
  return CCO_DEVICE_STATUS_OK;
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::flush_wait() {
  if (!context_ok()) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  const uint64_t begin = trace::Begin(f_.trace);
  LandDirect<Coop>();
  const int32_t status = EveryRing<Coop>([&](int32_t i) {
    return ring::WaitConsumed(ring_of(i), arch::load<order::Relaxed, scope::Device>(flush_target(i)), limits_);
  });
  trace::Span<Coop>(f_.trace, begin, TraceWait(CCO_TRACE_GDA_FLUSH, -1, 0, 0, status));
  return status;
}

// --- for ccoGdaBarrierSession ------------------------------------------------------------

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API const gda::HandleFields& ccoGda<Provider, Mode>::fields() const {
  return f_;
}

template <class Provider, ccoGdaDoorbellMode Mode> CCO_DEVICE_API bool ccoGda<Provider, Mode>::context_ok() const {
  return f_.valid && f_.peerCount > 0 && static_cast<uint32_t>(context_) < f_.contextCount;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API const WaitLimits& ccoGda<Provider, Mode>::limits() const {
  return limits_;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t ccoGda<Provider, Mode>::trace_buffer() const {
  return f_.trace;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API bool ccoGda<Provider, Mode>::ring_failed(int32_t index) const {
  return ring::Failed(ring_of(index).dev);
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API void ccoGda<Provider, Mode>::sender_words(uint32_t id, int32_t sender, const uint64_t** proxy,
                                                         const uint64_t** direct, const uint64_t** host) const {
  const uint64_t* words = reinterpret_cast<const uint64_t*>(f_.signals);
  const int32_t lsaSender = sender - f_.topo.lsaWorldBase;
  const bool lsa = static_cast<uint32_t>(lsaSender) < static_cast<uint32_t>(f_.topo.lsaSize);
  *proxy = words + cco_gda_signal_word(id, sender, f_.topo.nRanks);
  *direct = lsa ? words + direct_word(id, lsaSender) : nullptr;
  *host = lsa ? host_word(id, lsaSender) : nullptr;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API const uint64_t* ccoGda<Provider, Mode>::host_word(uint32_t id, int32_t senderLsaRank) const {
  if (f_.hostSignals == 0) return nullptr;
  return reinterpret_cast<const uint64_t*>(f_.hostSignals) +
         cco_gda_host_signal_word(id, senderLsaRank, f_.topo.lsaSize);
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t* ccoGda<Provider, Mode>::barrier_epoch(uint32_t index) const {
  return resource(f_.flushOffset) + static_cast<uint64_t>(f_.contextCount) * f_.peerCount + index;
}

// --- private: where things are, and what is allowed --------------------------------------

template <class Provider, ccoGdaDoorbellMode Mode> CCO_DEVICE_API ccoGdaTopo ccoGda<Provider, Mode>::topo() const {
  return f_.topo;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::peer_index(int32_t peer) const {
  const ccoGdaTopo t = topo();
  return cco_gda_conn_peer_index(f_.connectionType, &t, peer);
}

template <class Provider, ccoGdaDoorbellMode Mode> CCO_DEVICE_API bool ccoGda<Provider, Mode>::any_ring_failed() const {
  for (int32_t i = 0; i < f_.peerCount; ++i)
    if (ring::Failed(ring_of(i).dev)) return true;
  return false;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API ring::View ccoGda<Provider, Mode>::ring_of(int32_t index) const {
  return ring::At(f_.ringSlots, f_.ringHost, f_.ringDevice, f_.ringDepth,
                  cco_gda_ring_index(context_, index, f_.peerCount));
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t* ccoGda<Provider, Mode>::resource(uint64_t offset) const {
  return reinterpret_cast<uint64_t*>(f_.resources + offset);
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API bool ccoGda<Provider, Mode>::signal_ok(int32_t id) const {
  return context_ok() && static_cast<uint32_t>(id) < f_.signalCount && f_.signals;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API bool ccoGda<Provider, Mode>::user_signal_ok(ccoSignalOp op, int32_t id) const {
  return op == CCO_SIGNAL_NONE || ((op == CCO_SIGNAL_INC || op == CCO_SIGNAL_ADD) && signal_ok(id));
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API bool ccoGda<Provider, Mode>::counter_ok(int32_t id) const {
  return context_ok() && static_cast<uint32_t>(id) < f_.counterCount && f_.counters;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API bool ccoGda<Provider, Mode>::bits_ok(int32_t bits, uint64_t least) {
  return bits == 64 || (bits == 32 && least <= 0xffffffffull);
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API bool ccoGda<Provider, Mode>::window_holds(const WindowFields& win, uint64_t offset,
                                                         uint64_t bytes) const {
  return cco::window_holds(win, f_.flatBase, f_.stride, offset, bytes);
}

// Each sender writes only its own words (abi/gda.h). arch::PollOrder loads (relaxed on GPUs),
// eight in flight at a time; a caller that acts on the value fences after it.
template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t ccoGda<Provider, Mode>::signal_value(uint32_t id) const {
  const uint64_t* words = reinterpret_cast<const uint64_t*>(f_.signals);
  const ccoGdaTopo t = topo();
  const int32_t type = f_.connectionType;
  uint64_t sum = 0;
  for (int32_t i = 0; i < f_.peerCount; i += 8) {
    uint64_t v[8];
    CCO_UNROLL
    for (int32_t k = 0; k < 8; ++k) {
      const int32_t sender = i + k < f_.peerCount ? cco_gda_conn_team_peer(type, &t, i + k) : -1;
      v[k] = sender < 0 ? 0
                        : arch::load<arch::PollOrder, scope::System>(words + cco_gda_signal_word(id, sender, t.nRanks));
    }
    CCO_UNROLL
    for (int32_t k = 0; k < 8; ++k) sum += v[k];
  }
  // The direct words, one per LSA rank (zero for one that never sent directly), and the host
  // words likewise, loaded together: a poll waits for one bus trip to host memory, not several.
  const bool host = f_.hostSignals != 0;
  for (int32_t i = 0; i < t.lsaSize; i += 8) {
    uint64_t v[8], h[8];
    CCO_UNROLL
    for (int32_t k = 0; k < 8; ++k) {
      const bool in = i + k < t.lsaSize;
      v[k] = in ? arch::load<arch::PollOrder, scope::System>(words + direct_word(id, i + k)) : 0;
      h[k] = in && host ? arch::load<arch::PollOrder, scope::System>(host_word(id, i + k)) : 0;
    }
    CCO_UNROLL
    for (int32_t k = 0; k < 8; ++k) sum += v[k] + h[k];
  }
  return sum;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t ccoGda<Provider, Mode>::direct_word(uint32_t id, int32_t senderLsaRank) const {
  return cco_gda_direct_signal_word(f_.signalCount + f_.barrierCount, f_.topo.nRanks, id, senderLsaRank,
                                    f_.topo.lsaSize);
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t* ccoGda<Provider, Mode>::counter_word(int32_t id) const {
  return reinterpret_cast<uint64_t*>(f_.counters) + id;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t* ccoGda<Provider, Mode>::shadow(int32_t id) const {
  return resource(f_.shadowOffset) + id;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t* ccoGda<Provider, Mode>::counter_shadow(int32_t id) const {
  return resource(f_.shadowOffset) + f_.signalCount + id;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API uint64_t* ccoGda<Provider, Mode>::flush_target(int32_t index) const {
  return resource(f_.flushOffset) + static_cast<uint64_t>(context_) * f_.peerCount + index;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API ccoGdaDesc ccoGda<Provider, Mode>::Describe(ccoGdaOp op, ccoSignalOp signalOp, int32_t signalId,
                                                           uint64_t signalValue) {
  ccoGdaDesc d = {};
  d.op = static_cast<uint8_t>(op);
  d.signalOp = static_cast<uint8_t>(signalOp);
  d.signalId = static_cast<uint32_t>(signalId);
  d.signalValue = signalValue;
  return d;
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API trace::Event ccoGda<Provider, Mode>::TraceEvent(const ccoGdaDesc& d, int32_t peer, int32_t index,
                                                               uint16_t flags, uint64_t ticket, int32_t status) const {
  uint16_t kind = CCO_TRACE_GDA_SIGNAL;
  if (d.op == CCO_GDA_OP_PUT) kind = CCO_TRACE_GDA_PUT;
  else if (d.op == CCO_GDA_OP_PUT_VALUE) kind = CCO_TRACE_GDA_PUT_VALUE;
  else if (d.op == CCO_GDA_OP_GET) kind = CCO_TRACE_GDA_GET;
  else if (d.flags & CCO_GDA_DESC_MARKER) kind = CCO_TRACE_GDA_COUNTER;
  if (d.signalOp != CCO_SIGNAL_NONE) flags |= CCO_TRACE_FLAG_SIGNAL;
  const uint32_t aux = (d.flags & CCO_GDA_DESC_MARKER) ? d.counterId : d.signalId;
  const uint64_t bytes = d.op == CCO_GDA_OP_SIGNAL ? 0 : d.bytes;
  return trace::Event{kind, flags, peer, cco_gda_ring_index(context_, index, f_.peerCount), aux, bytes, ticket, status};
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API trace::Event ccoGda<Provider, Mode>::TraceWait(uint16_t kind, int32_t peer, uint32_t aux, uint64_t least,
                                                              int32_t status) const {
  return trace::Event{kind, 0, peer, static_cast<uint32_t>(context_), aux, least, 0, status};
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop, class Step>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::EveryRing(Step step) const {
  return group::EveryRing<Coop>(f_.peerCount, [&](int32_t i) { return ring_of(i); }, step);
}

// --- private: posting --------------------------------------------------------------------

template <class Provider, ccoGdaDoorbellMode Mode>
template <class Coop, ccoThreadMode TM, ccoGdaDoorbellMode RingMode>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::Post(int32_t peer, const ccoGdaDesc& d, ccoWindow_t dst,
                                                    ccoWindow_t src) {
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
      const uint64_t begin = trace::Begin(f_.trace);
      DirectData(d, dst, src, lsaPeer, coop.thread_rank(), coop.size());
      coop.sync();  // every share stored before thread 0's signal releases them
      if (coop.thread_rank() == 0) {
        DirectSignal(d, lsaPeer);
        trace::Record(f_.trace, begin, TraceEvent(d, peer, index, CCO_TRACE_FLAG_DIRECT, 0, CCO_DEVICE_STATUS_OK));
      }
    }
  } else if (coop.thread_rank() == 0) {
    direct = DirectReady(lsaPeer, index, d, false);
    if (direct) {
      const uint64_t begin = trace::Begin(f_.trace);
      DirectData(d, dst, src, lsaPeer, 0, 1);
      DirectSignal(d, lsaPeer);
      trace::Record(f_.trace, begin, TraceEvent(d, peer, index, CCO_TRACE_FLAG_DIRECT, 0, CCO_DEVICE_STATUS_OK));
    }
  }
  int32_t status = CCO_DEVICE_STATUS_OK;
  if (coop.thread_rank() == 0 && !direct) {
    ccoGdaDesc posted = d;  // one copy, changed in place: a choice of two would live in local memory
    PutAsValue(&posted, src);
    uint64_t ticket = 0;
    constexpr ccoThreadMode kMode =
        TM == CCO_THREAD_AGGREGATE && Coop::kScope == CCO_COOP_THREAD ? CCO_THREAD_AGGREGATE : CCO_THREAD_INDEPENDENT;
    // Tracing off, the post is the untraced one behind one test of the handle's field (its code
    // is there twice); on, the same post between the trace's stamps, its descriptor naming its
    // record (the proxy stamps that record).
    if (!trace::On(f_.trace)) {
      status = RingPost<kMode, RingMode>(index, posted, &ticket);
    } else {
      const uint64_t begin = arch::timer_ns();
      posted.traceRecord = trace::Take(f_.trace);
      status = RingPost<kMode, RingMode>(index, posted, &ticket);
      trace::Write(f_.trace, posted.traceRecord, begin, TraceEvent(d, peer, index, 0, ticket, status));
    }
  }
  return worst_status(coop, status);  // thread 0's, in every thread
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <ccoThreadMode TM, ccoGdaDoorbellMode RingMode>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::RingPost(int32_t index, const ccoGdaDesc& d, uint64_t* ticket) {
  if (TM == CCO_THREAD_AGGREGATE) return PostAggregated<RingMode>(index, d, ticket);
  return ring::Post<RingMode>(ring_of(index), d, limits_, ticket);
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API bool ccoGda<Provider, Mode>::DirectReady(int32_t lsaPeer, int32_t index, const ccoGdaDesc& d,
                                                        bool shared) {
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
  return gda::RingIdle(ring_of(index));
}

// A put of at most 8 bytes: the device reads its source now, so the proxy copies nothing out
// of device memory (over the network that is a copy and a fence; here, a copy-engine op where
// a stream write does). The source is read earlier than the proxy would, which every caller
// allows: it may not change a put's source before completion.
template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API void ccoGda<Provider, Mode>::PutAsValue(ccoGdaDesc* d, ccoWindow_t src) const {
  if (d->op != CCO_GDA_OP_PUT || d->bytes == 0 || d->bytes > 8 || d->flags != 0) return;  // (src checked by put)
  d->op = CCO_GDA_OP_PUT_VALUE;
  d->srcWindow = 0;
  d->srcOffset =
      gda::LoadValue(lsa_local_address(window_descriptor(src), d->srcOffset), static_cast<uint32_t>(d->bytes));
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API void ccoGda<Provider, Mode>::DirectData(const ccoGdaDesc& d, ccoWindow_t dst, ccoWindow_t src,
                                                       int32_t lsaPeer, uint32_t rank, uint32_t size) const {
  const ccoWindowDevice* to = window_descriptor(dst);
  const ccoWindowDevice* from = window_descriptor(src);
  if (d.op == CCO_GDA_OP_PUT) {
    gda::CopyShare(lsa_peer_address(to, lsaPeer, d.dstOffset), lsa_local_address(from, d.srcOffset), d.bytes, rank,
                   size);
  } else if (d.op == CCO_GDA_OP_GET) {
    gda::CopyShare(lsa_local_address(to, d.dstOffset), lsa_peer_address(from, lsaPeer, d.srcOffset), d.bytes, rank,
                   size);
  } else if (d.op == CCO_GDA_OP_PUT_VALUE && rank == 0) {
    gda::StoreValue(lsa_peer_address(window_descriptor(dst), lsaPeer, d.dstOffset), d.srcOffset,
                    static_cast<uint32_t>(d.bytes));
  }
}

template <class Provider, ccoGdaDoorbellMode Mode>
CCO_DEVICE_API void ccoGda<Provider, Mode>::DirectSignal(const ccoGdaDesc& d, int32_t lsaPeer) const {
  if (d.signalOp == CCO_SIGNAL_NONE) return;
  // The peer's copy of the signal words: this rank's copy moved by the slices between them.
  const uint64_t slicesAway = static_cast<uint64_t>(static_cast<int64_t>(lsaPeer) - f_.topo.lsaRank);
  uint64_t* words = reinterpret_cast<uint64_t*>(cco_slice_address(f_.signals, f_.stride, slicesAway, 0));
  uint64_t* word = words + direct_word(d.signalId, f_.topo.lsaRank);
  arch::add<order::Release, scope::System>(word, d.signalOp == CCO_SIGNAL_INC ? uint64_t{1} : d.signalValue);
  // The cpu platform: the peer's bell, where its bell lies in its slice as this rank's in its own.
  if (limits_.bell != nullptr)
    arch::ring_bell(reinterpret_cast<const void*>(
        cco_slice_address(reinterpret_cast<uint64_t>(limits_.bell), f_.stride, slicesAway, 0)));
}

template <class Provider, ccoGdaDoorbellMode Mode>
template <ccoGdaDoorbellMode RingMode>
CCO_DEVICE_API int32_t ccoGda<Provider, Mode>::PostAggregated(int32_t index, const ccoGdaDesc& d, uint64_t* ticket) {
  arch::LaneMask pending = arch::active_mask();
  const uint32_t lane = arch::lane_id();
  int32_t status = CCO_DEVICE_STATUS_OK;
  while (pending != 0) {
    const uint32_t leader = arch::lowest_lane(pending);
    const int32_t leaderIndex = static_cast<int32_t>(arch::shuffle(static_cast<uint64_t>(index), leader));
    const arch::LaneMask group = arch::ballot(index == leaderIndex) & pending;
    pending &= ~group;
    if (index != leaderIndex) continue;
    const ring::View r = ring_of(index);
    const uint64_t count = arch::lane_count(group);
    const uint64_t below = arch::lane_count(group & ((arch::LaneMask{1} << lane) - 1));
    // The leader reserves the group's slots once they are all free (or none: a failed wait
    // leaves no ticket unwritten); every lane of the group gets its verdict. The leader may
    // still be waiting in Reserve when the others reach the shuffle: it names the group.
    uint64_t first = 0, reserved = CCO_DEVICE_STATUS_OK, swapped = 0;
    if (lane == leader) reserved = static_cast<uint32_t>(ring::Reserve(r, limits_, &first, count));
    const bool rings = RingMode == CCO_GDA_DOORBELL_IMMEDIATE;
    if (lane == leader && rings && reserved == CCO_DEVICE_STATUS_OK) swapped = ring::Swap(r, first, first + count);
    first = arch::shuffle_among(first, leader, group);
    const int32_t mine = static_cast<int32_t>(static_cast<uint32_t>(arch::shuffle_among(reserved, leader, group)));
    if (mine == CCO_DEVICE_STATUS_OK) {
      *ticket = first + below;
      ring::Write<RingMode>(r, first + below, d);
    } else {
      status = mine;
    }
    arch::warp_sync_among(group);
    if (lane == leader && mine == CCO_DEVICE_STATUS_OK && rings) ring::RingAfter(r, first, first + count, swapped);
  }
  return status;
}

// --- ccoGdaBarrierSession ----------------------------------------------------------------

template <class Coop, class Provider>
CCO_DEVICE_API ccoGdaBarrierSession<Coop, Provider>::ccoGdaBarrierSession(Coop coop,
                                                                          ccoGda<Provider, ccoGdaImmediate>& gda,
                                                                          uint32_t index)
    : coop_(coop), gda_(gda), index_(index) {}

template <class Coop, class Provider> CCO_DEVICE_API int32_t ccoGdaBarrierSession<Coop, Provider>::sync() {
  const gda::HandleFields& f = gda_.fields();
  // (a bad context is refused before the epoch moves: a round that signalled nobody would
  // pair this rank's later rounds with the peers' earlier ones)
  if (!gda_.context_ok() || index_ >= f.barrierCount) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  uint64_t* epoch = gda_.barrier_epoch(index_);
  const uint64_t traced = gda_.trace_buffer();
  const uint64_t begin = trace::Begin(traced);
  coop_.sync();
  const uint64_t target = *epoch + 1;
  const uint32_t id = f.signalCount + index_;  // the barrier's signal, one word per sender
  int32_t status = CCO_DEVICE_STATUS_OK;
  for (int32_t i = static_cast<int32_t>(coop_.thread_rank()); i < f.peerCount && status == CCO_DEVICE_STATUS_OK;
       i += static_cast<int32_t>(coop_.size())) {
    const int32_t peer = gda_.team_peer(i);
    if (peer != f.topo.rank) status = gda_.template barrier_signal<ccoCoopThread>(peer, index_);
  }
  for (int32_t i = static_cast<int32_t>(coop_.thread_rank()); i < f.peerCount && status == CCO_DEVICE_STATUS_OK;
       i += static_cast<int32_t>(coop_.size())) {
    const int32_t peer = gda_.team_peer(i);
    if (peer == f.topo.rank) continue;
    // The peer's word from its proxy plus, in the LSA team, the one it adds to directly and
    // its proxy's host word.
    const uint64_t *word, *direct, *host;
    gda_.sender_words(id, peer, &word, &direct, &host);
    status = spin_wait<RingSpin>(
        [&] {
          const uint64_t viaDirect = direct ? arch::load<order::Acquire, scope::System>(direct) : 0;
          const uint64_t viaHost = host ? arch::load<order::Acquire, scope::System>(host) : 0;
          return arch::load<order::Acquire, scope::System>(word) + viaDirect + viaHost >= target;
        },
        [&] { return gda_.ring_failed(i); }, gda_.limits());
  }
  status = worst_status(coop_, status);  // every thread's verdict, not only its peers'
  if (coop_.thread_rank() == 0) *epoch = target;
  coop_.sync();
  trace::Span<Coop>(traced, begin, trace::Event{CCO_TRACE_GDA_BARRIER, 0, -1, 0, index_, target, 0, status});
  return status;
}

}  // namespace cco

#endif  // CCO_DEVICE_IMPL_GDA_FUNCS_HPP_
