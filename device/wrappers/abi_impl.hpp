// SPDX-License-Identifier: MIT
//===-- device/wrappers/abi_impl.hpp - bodies of the ABI wrappers -*- C++ -*-===//
//
// One function per IMPL named in abi/functions.list, taking the ABI's scalar arguments
// (handles as uint64). The generated extern "C" wrappers forward here; keep these thin:
// the logic lives in the header-only device API that C++ kernels use directly.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_WRAPPERS_ABI_IMPL_HPP_
#define CCO_DEVICE_WRAPPERS_ABI_IMPL_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/gda.hpp"
#include "device/lsa.hpp"
#include "device/lsa_barrier.hpp"
#include "device/sdma.hpp"
#include "device/spin_wait.hpp"
#include "device/team.hpp"
#include "device/trace.hpp"

namespace cco {
namespace abi {

// The calls' bodies, given to with_gda / with_sdma / devcomm_get as lambdas, are inlined
// whatever their size: a lambda is no always_inline function of the device API, and one left
// as a call would keep its handle in local memory (nvptx) and a call in consumers that do not
// inline (FlyDSL).
#define CCO_INLINE_LAMBDA __attribute__((always_inline))

// Whether `dc` can be read as a device communicator at all (nothing is loaded: a null or
// misaligned handle would fault). One of another ABI is refused by devcomm_valid.
CCO_DEVICE_API bool devcomm_pointer_ok(uint64_t dc) { return dc != 0 && dc % alignof(ccoDevComm) == 0; }

// The device communicator as a call reads it: a copy made of invariant loads (nothing writes
// it while a kernel runs), so its fields are not loaded again behind every fence and acquire
// of a barrier or wait (a dependent memory trip each), may be loaded once for a whole kernel,
// and the fields a call does not use are not loaded at all. A handle that cannot be read
// gives a zeroed copy, which devcomm_valid refuses like any other bad one.
CCO_DEVICE_API ccoDevComm devcomm_fields(uint64_t dc) {
  static_assert(sizeof(ccoDevComm) % sizeof(uint64_t) == 0, "ccoDevComm is whole words");
  constexpr int kWords = sizeof(ccoDevComm) / sizeof(uint64_t);
  uint64_t words[kWords];
  const bool readable = devcomm_pointer_ok(dc);
#pragma unroll
  for (int i = 0; i < kWords; ++i)
    words[i] = readable ? arch::load_invariant(reinterpret_cast<const uint64_t*>(dc) + i) : 0;
  ccoDevComm copy;
  __builtin_memcpy(&copy, words, sizeof(copy));
  return copy;
}

CCO_DEVICE_API int32_t abi_version() { return CCO_ABI_VERSION; }

CCO_DEVICE_API uint64_t lsa_ptr(uint64_t win, int32_t peer, uint64_t offset) {
  return lsa_peer_address(window_descriptor(win), peer, offset);
}

// Getters: field(d) of a good device communicator, -1 for a bad one.
template <class Field> CCO_DEVICE_API int32_t devcomm_get(uint64_t dc, Field field) {
  const ccoDevComm d = devcomm_fields(dc);
  return devcomm_valid(d) ? field(d) : -1;
}
CCO_DEVICE_API int32_t devcomm_rank(uint64_t dc) {
  return devcomm_get(dc, [](const ccoDevComm& d) CCO_INLINE_LAMBDA { return d.rank; });
}
CCO_DEVICE_API int32_t devcomm_world_size(uint64_t dc) {
  return devcomm_get(dc, [](const ccoDevComm& d) CCO_INLINE_LAMBDA { return d.worldSize; });
}
CCO_DEVICE_API int32_t devcomm_lsa_rank(uint64_t dc) {
  return devcomm_get(dc, [](const ccoDevComm& d) CCO_INLINE_LAMBDA { return d.lsaRank; });
}
CCO_DEVICE_API int32_t devcomm_lsa_size(uint64_t dc) {
  return devcomm_get(dc, [](const ccoDevComm& d) CCO_INLINE_LAMBDA { return d.lsaSize; });
}

/// A system-scope acq_rel fence: this thread's earlier writes (peers' memory included)
/// are ordered before its later ones for every observer. With leaderOnly, only thread 0
/// of the block fences (the caller synchronises the block around it).
CCO_DEVICE_API int32_t system_fence(int32_t leaderOnly) {
  if (!leaderOnly || arch::thread_id() == 0) arch::fence<scope::System>();
  return 0;
}

CCO_DEVICE_API uint64_t lsa_ptr_world(uint64_t win, int32_t worldPeer, uint64_t offset) {
  return lsa_world_peer_address(window_descriptor(win), worldPeer, offset);
}
CCO_DEVICE_API uint64_t lsa_local_ptr(uint64_t win, uint64_t offset) {
  return lsa_local_address(window_descriptor(win), offset);
}

// (a bad device communicator's abort flag is not read: not aborted)
CCO_DEVICE_API int32_t devcomm_aborted(uint64_t dc) {
  const ccoDevComm d = devcomm_fields(dc);
  return devcomm_valid(d) && aborted(reinterpret_cast<const uint32_t*>(d.abortFlag)) ? 1 : 0;
}

CCO_DEVICE_API int32_t team_size(uint64_t dc, int32_t team) {
  return devcomm_get(dc, [&](const ccoDevComm& d) CCO_INLINE_LAMBDA { return cco::team_size(d, team); });
}
CCO_DEVICE_API int32_t team_rank(uint64_t dc, int32_t team) {
  return devcomm_get(dc, [&](const ccoDevComm& d) CCO_INLINE_LAMBDA { return cco::team_rank(d, team); });
}
CCO_DEVICE_API int32_t team_world_rank(uint64_t dc, int32_t team, int32_t index) {
  return devcomm_get(dc, [&](const ccoDevComm& d) CCO_INLINE_LAMBDA { return cco::team_world_rank(d, team, index); });
}

// Barrier calls check the index (a bad one touches no memory) and run one session.
CCO_DEVICE_API bool barrier_index_ok(const ccoDevComm& dc, int32_t index) {
  return devcomm_valid(dc) && static_cast<uint32_t>(index) < dc.lsaBarrierCount;
}
// The memory order is a template argument: each symbol has its own, fixed at link time.
template <class Coop, ccoMemoryOrder Order = CCO_MEMORY_ORDER_RELEASE>
CCO_DEVICE_API int32_t lsa_barrier_arrive(uint64_t dc, int32_t index) {
  const ccoDevComm d = devcomm_fields(dc);
  if (!barrier_index_ok(d, index)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  ccoLsaBarrierSession<Coop>(Coop(), d, static_cast<uint32_t>(index)).arrive(Order);
  return CCO_DEVICE_STATUS_OK;
}
template <class Coop, ccoMemoryOrder Order = CCO_MEMORY_ORDER_ACQUIRE>
CCO_DEVICE_API int32_t lsa_barrier_wait(uint64_t dc, int32_t index, uint64_t timeoutNs = 0) {
  const ccoDevComm d = devcomm_fields(dc);
  if (!barrier_index_ok(d, index)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  return ccoLsaBarrierSession<Coop>(Coop(), d, static_cast<uint32_t>(index)).wait(Order, timeoutNs);
}
template <class Coop, ccoMemoryOrder Order = CCO_MEMORY_ORDER_ACQ_REL>
CCO_DEVICE_API int32_t lsa_barrier_sync(uint64_t dc, int32_t index, uint64_t timeoutNs = 0) {
  const ccoDevComm d = devcomm_fields(dc);
  if (!barrier_index_ok(d, index)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  return ccoLsaBarrierSession<Coop>(Coop(), d, static_cast<uint32_t>(index)).sync(Order, timeoutNs);
}

// --- GDA (device/gda.hpp): a handle per call, over the caller's context ------------------
// GDA and SDMA handles copy the fields they use when they are made, here by invariant loads
// of the caller's device communicator in global memory (handles.hpp ReadInvariant): a kernel
// that makes many calls may load them once. A handle that cannot be read at all (null,
// misaligned) gets `bad` without a load; the handles refuse one of another ABI themselves
// (magic and version).
CCO_DEVICE_API const ccoDevComm& devcomm_in_memory(uint64_t dc) { return *reinterpret_cast<const ccoDevComm*>(dc); }
constexpr int32_t kInvalid = CCO_DEVICE_STATUS_INVALID_ARGUMENT;
template <ccoGdaDoorbellMode Mode, class R, class Call>
CCO_DEVICE_API R with_gda(uint64_t dc, int32_t ctx, R bad, Call call) {
  if (!devcomm_pointer_ok(dc)) return bad;
  ccoGda<ccoGdaProxy, Mode> handle(devcomm_in_memory(dc), ctx, 0, ReadInvariant());
  return call(handle);
}
template <class R, class Call> CCO_DEVICE_API R with_sdma(uint64_t dc, R bad, Call call) {
  if (!devcomm_pointer_ok(dc)) return bad;
  ccoSdma handle(devcomm_in_memory(dc), 0, ReadInvariant());
  return call(handle);
}

template <ccoGdaDoorbellMode Mode, class Coop, ccoThreadMode TM, ccoSignalOp Op>
CCO_DEVICE_API int32_t gda_put(uint64_t dc, int32_t ctx, int32_t peer, uint64_t dstWin, uint64_t dstOff,
                               uint64_t srcWin, uint64_t srcOff, uint64_t bytes, int32_t signalId,
                               uint64_t signalValue) {
  return with_gda<Mode>(dc, ctx, kInvalid, [&](auto& h) CCO_INLINE_LAMBDA {
    return h.template put<Coop, TM>(peer, dstWin, dstOff, srcWin, srcOff, bytes, Op, signalId, signalValue);
  });
}
template <ccoGdaDoorbellMode Mode, class Coop, ccoThreadMode TM, ccoSignalOp Op>
CCO_DEVICE_API int32_t gda_put_value(uint64_t dc, int32_t ctx, int32_t peer, uint64_t dstWin, uint64_t dstOff,
                                     uint64_t value, int32_t signalId, uint64_t signalValue) {
  return with_gda<Mode>(dc, ctx, kInvalid, [&](auto& h) CCO_INLINE_LAMBDA {
    return h.template put_value<Coop, TM>(peer, dstWin, dstOff, value, Op, signalId, signalValue);
  });
}
template <ccoGdaDoorbellMode Mode, class Coop, ccoThreadMode TM>
CCO_DEVICE_API int32_t gda_get(uint64_t dc, int32_t ctx, int32_t peer, uint64_t remoteWin, uint64_t remoteOff,
                               uint64_t localWin, uint64_t localOff, uint64_t bytes) {
  return with_gda<Mode>(dc, ctx, kInvalid, [&](auto& h) CCO_INLINE_LAMBDA {
    return h.template get<Coop, TM>(peer, remoteWin, remoteOff, localWin, localOff, bytes);
  });
}
template <ccoGdaDoorbellMode Mode, class Coop, ccoSignalOp Op>
CCO_DEVICE_API int32_t gda_signal(uint64_t dc, int32_t ctx, int32_t peer, int32_t signalId, uint64_t value) {
  return with_gda<Mode>(dc, ctx, kInvalid,
                        [&](auto& h) CCO_INLINE_LAMBDA { return h.template signal<Coop>(peer, signalId, Op, value); });
}
template <class Coop>
CCO_DEVICE_API int32_t gda_wait_signal(uint64_t dc, int32_t ctx, int32_t signalId, uint64_t least, int32_t bits) {
  return with_gda<ccoGdaImmediate>(dc, ctx, kInvalid, [&](auto& h) CCO_INLINE_LAMBDA {
    return h.template wait_signal<Coop>(signalId, least, bits);
  });
}
CCO_DEVICE_API uint64_t gda_read_signal(uint64_t dc, int32_t ctx, int32_t signalId, int32_t bits) {
  return with_gda<ccoGdaImmediate>(dc, ctx, uint64_t{0},
                                   [&](auto& h) CCO_INLINE_LAMBDA { return h.read_signal(signalId, bits); });
}
CCO_DEVICE_API int32_t gda_reset_signal(uint64_t dc, int32_t ctx, int32_t signalId) {
  return with_gda<ccoGdaImmediate>(dc, ctx, kInvalid,
                                   [&](auto& h) CCO_INLINE_LAMBDA { return h.reset_signal(signalId); });
}
template <ccoGdaDoorbellMode Mode, class Coop> CCO_DEVICE_API int32_t gda_flush(uint64_t dc, int32_t ctx) {
  return with_gda<Mode>(dc, ctx, kInvalid, [&](auto& h) CCO_INLINE_LAMBDA { return h.template flush<Coop>(); });
}
template <ccoGdaDoorbellMode Mode, class Coop>
CCO_DEVICE_API int32_t gda_flush_peer(uint64_t dc, int32_t ctx, int32_t peer) {
  return with_gda<Mode>(dc, ctx, kInvalid,
                        [&](auto& h) CCO_INLINE_LAMBDA { return h.template flush_peer<Coop>(peer); });
}
template <ccoGdaDoorbellMode Mode, class Coop> CCO_DEVICE_API int32_t gda_flush_async(uint64_t dc, int32_t ctx) {
  return with_gda<Mode>(dc, ctx, kInvalid, [&](auto& h) CCO_INLINE_LAMBDA { return h.template flush_async<Coop>(); });
}
template <ccoGdaDoorbellMode Mode, class Coop> CCO_DEVICE_API int32_t gda_flush_wait(uint64_t dc, int32_t ctx) {
  return with_gda<Mode>(dc, ctx, kInvalid, [&](auto& h) CCO_INLINE_LAMBDA { return h.template flush_wait<Coop>(); });
}
template <class Coop> CCO_DEVICE_API int32_t gda_counter(uint64_t dc, int32_t ctx, int32_t counterId) {
  return with_gda<ccoGdaImmediate>(dc, ctx, kInvalid,
                                   [&](auto& h) CCO_INLINE_LAMBDA { return h.template counter<Coop>(counterId); });
}
template <class Coop>
CCO_DEVICE_API int32_t gda_wait_counter(uint64_t dc, int32_t ctx, int32_t counterId, uint64_t least) {
  return with_gda<ccoGdaImmediate>(
      dc, ctx, kInvalid, [&](auto& h) CCO_INLINE_LAMBDA { return h.template wait_counter<Coop>(counterId, least); });
}
CCO_DEVICE_API uint64_t gda_read_counter(uint64_t dc, int32_t ctx, int32_t counterId) {
  return with_gda<ccoGdaImmediate>(dc, ctx, uint64_t{0},
                                   [&](auto& h) CCO_INLINE_LAMBDA { return h.read_counter(counterId); });
}
CCO_DEVICE_API int32_t gda_reset_counter(uint64_t dc, int32_t ctx, int32_t counterId) {
  return with_gda<ccoGdaImmediate>(dc, ctx, kInvalid,
                                   [&](auto& h) CCO_INLINE_LAMBDA { return h.reset_counter(counterId); });
}
template <class Coop> CCO_DEVICE_API int32_t gda_barrier_sync(uint64_t dc, int32_t ctx, int32_t index) {
  return with_gda<ccoGdaImmediate>(dc, ctx, kInvalid, [&](auto& h) CCO_INLINE_LAMBDA {
    return ccoGdaBarrierSession<Coop>(Coop(), h, static_cast<uint32_t>(index)).sync();
  });
}
CCO_DEVICE_API int32_t gda_team_size(uint64_t dc) {
  return devcomm_get(dc, [](const ccoDevComm& d) CCO_INLINE_LAMBDA { return d.gdaPeerCount; });
}
CCO_DEVICE_API int32_t gda_team_peer(uint64_t dc, int32_t index) {
  return devcomm_get(
      dc, [&](const ccoDevComm& d) CCO_INLINE_LAMBDA { return cco::team_world_rank(d, CCO_TEAM_GDA, index); });
}

// --- SDMA (device/sdma.hpp): peers are LSA ranks ------------------------------------------
template <class Coop, bool Signal>
CCO_DEVICE_API int32_t sdma_put(uint64_t dc, int32_t peer, uint64_t dstWin, uint64_t dstOff, uint64_t srcWin,
                                uint64_t srcOff, uint64_t bytes, int32_t queue, int32_t flags) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA {
    return h.put<Coop, Signal>(peer, dstWin, dstOff, srcWin, srcOff, bytes, queue, static_cast<uint32_t>(flags));
  });
}
template <class Coop, bool Signal>
CCO_DEVICE_API int32_t sdma_get(uint64_t dc, int32_t peer, uint64_t dstWin, uint64_t dstOff, uint64_t srcWin,
                                uint64_t srcOff, uint64_t bytes, int32_t queue, int32_t flags) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA {
    return h.get<Coop, Signal>(peer, dstWin, dstOff, srcWin, srcOff, bytes, queue, static_cast<uint32_t>(flags));
  });
}
template <class Coop, bool Signal>
CCO_DEVICE_API int32_t sdma_put_ptr(uint64_t dc, int32_t peer, uint64_t dst, uint64_t src, uint64_t bytes,
                                    int32_t queue, int32_t flags) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA {
    return h.put<Coop, Signal>(peer, reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes, queue,
                               static_cast<uint32_t>(flags));
  });
}
template <class Coop, bool Signal>
CCO_DEVICE_API int32_t sdma_get_ptr(uint64_t dc, int32_t peer, uint64_t dst, uint64_t src, uint64_t bytes,
                                    int32_t queue, int32_t flags) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA {
    return h.get<Coop, Signal>(peer, reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes, queue,
                               static_cast<uint32_t>(flags));
  });
}
template <class Coop> CCO_DEVICE_API int32_t sdma_quiet(uint64_t dc, int32_t peer) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.quiet<Coop>(peer); });
}
template <class Coop> CCO_DEVICE_API int32_t sdma_commit(uint64_t dc, int32_t peer, int32_t queue) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.commit<Coop>(peer, queue); });
}
CCO_DEVICE_API int32_t sdma_quiet_queue(uint64_t dc, int32_t peer, int32_t queue) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.quiet_queue(peer, queue); });
}
template <class Coop>
CCO_DEVICE_API int32_t sdma_wait_signal(uint64_t dc, int32_t peer, int32_t queue, uint64_t least) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.wait_signal<Coop>(peer, queue, least); });
}
CCO_DEVICE_API uint64_t sdma_read_signal(uint64_t dc, int32_t peer, int32_t queue) {
  return with_sdma(dc, uint64_t{0}, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.read_signal(peer, queue); });
}
CCO_DEVICE_API int32_t sdma_reset_signal(uint64_t dc, int32_t peer, int32_t queue) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.reset_signal(peer, queue); });
}
template <class Coop> CCO_DEVICE_API int32_t sdma_wait_local(uint64_t dc, int32_t peer, int32_t queue, uint64_t least) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.wait_local<Coop>(peer, queue, least); });
}
CCO_DEVICE_API uint64_t sdma_read_local(uint64_t dc, int32_t peer, int32_t queue) {
  return with_sdma(dc, uint64_t{0}, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.read_local(peer, queue); });
}
CCO_DEVICE_API int32_t sdma_reset_local(uint64_t dc, int32_t peer, int32_t queue) {
  return with_sdma(dc, kInvalid, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.reset_local(peer, queue); });
}
// (0 queues for a bad device communicator: every SDMA call on it is refused)
CCO_DEVICE_API int32_t sdma_queue_count(uint64_t dc) {
  return with_sdma(dc, int32_t{0}, [&](ccoSdma& h) CCO_INLINE_LAMBDA { return h.queue_count(); });
}

// --- the device-side trace (device/trace.hpp) ---------------------------------------------
// Where tracing is off these cost the invariant load of dc.trace and one branch (a range whose
// begin is 0 not even that): the handle is checked only once the field says it traces.
CCO_DEVICE_API uint64_t trace_clock(uint64_t dc) {
  if (!devcomm_pointer_ok(dc)) return 0;
  const ccoDevComm d = devcomm_fields(dc);
  return trace::On(d.trace) && devcomm_valid(d) ? ccoTraceClock(d) : 0;
}
template <class Coop> CCO_DEVICE_API int32_t trace_range(uint64_t dc, int32_t tag, uint64_t arg, uint64_t begin) {
  if (begin == 0 || !devcomm_pointer_ok(dc)) return CCO_DEVICE_STATUS_OK;
  const ccoDevComm d = devcomm_fields(dc);
  if (trace::On(d.trace) && devcomm_valid(d)) ccoTraceRange<Coop>(d, static_cast<uint32_t>(tag), arg, begin);
  return CCO_DEVICE_STATUS_OK;
}

}  // namespace abi
}  // namespace cco

#endif  // CCO_DEVICE_WRAPPERS_ABI_IMPL_HPP_
