// SPDX-License-Identifier: MIT
//===-- device/arch/arch.h - the portable device primitives -----*- C++ -*-===//
//
// One interface, one implementation per target, picked by the preprocessor (no run-time
// dispatch). Every implementation defines, in namespace cco::arch:
//
//   ids and sizes   lane_id() warp_size() thread_id() block_size() block_id() grid_size()
//                   warp_id()  (thread_id / warp_size, 1-D view of a 3-D block)
//   lanes           LaneMask active_mask(); LaneMask ballot(bool); warp_sync() (the active
//                   lanes); warp_sync_all() (every lane of the warp); ballot_all(bool) (a vote
//                   of every lane of the warp); block_sync();
//                   uint64_t shuffle(v, srcLane) (v as an active lane holds it);
//                   lowest_lane(mask), lane_count(mask);
//                   kHasBlockVote, block_sync_or(bool) (a block_sync that returns whether
//                   any thread of the block passed true; where kHasBlockVote is false it
//                   is only a block_sync returning the caller's own value);
//                   kBlockFenceCumulative (after a block_sync, one thread's system-scope
//                   fence covers the stores every thread of the block made before it)
//   atomics         load<O,S>(p) store<O,S>(p,v) fetch_add<O,S>(p,v) exchange<O,S>(p,v)
//                   compare_exchange<O,S>(p, expected, desired) -> old   fetch_max<O,S>(p,v)
//                   add<O,S>(p,v): fetch_add without the old value (O Relaxed or Release),
//                   which need not wait for the memory's answer (a `red` on nvptx)
//                   for T = uint32_t and uint64_t, O and S tags of memory_order.h
//   invariant       load_invariant(const uint64_t* / const uint32_t*): a word nothing writes while the kernel
//                   runs, which the compiler may load once (a device communicator's fields)
//                   compute_here(T& v): v's loads are made at this point, not sunk by
//                   the compiler behind a later test (a no-op where not timed)
//   fences          fence<S>() (acq_rel)
//                   PollOrder: the order of loads that poll several words and are followed
//                   by a fence once the condition holds (Relaxed on GPUs, where an acquire
//                   load holds back the loads after it; Acquire on the host, whose race
//                   checker does not see fences)
//   time            nanosleep(ns); cycles() (this SM/CU's cycle counter);
//                   timer_ns() (a clock that is comparable across the device's threads);
//                   spin_backoff(spins, spinsBeforeBackoff, backoffNs): the pause a spinning
//                   wait makes before its next poll (GPUs: a sleep once the count is reached;
//                   the host: gives its core away early, see host.h); kSpinsBeforeLongPauses:
//                   the spin count from which a pause may take long (the host's yields and
//                   sleeps: under load a yield can wait out a whole timeslice), so that a wait
//                   looks at its limits at every poll (GPUs: 0xffffffff, never);
//                   WaitPause(bell): one wait's pauses, after_poll(spins, spinsBeforeBackoff,
//                   backoffNs) after each poll that found nothing, end() when the wait is
//                   over (GPUs: spin_backoff; the host sleeps on the cpu platform's bell
//                   where there is one)
//   wake-ups        wake_host_consumer(asleep, fd): after a doorbell, wakes a cpu-platform
//                   proxy that sleeps (abi/ring.h consumerAsleep); ring_bell(bell): after a
//                   store a wait may watch, wakes the cpu platform's waits (abi/devcomm.h
//                   ccoHostBell); GPUs: nothing
//
// Lane width is queried, never assumed: 32 on nvptx, 64 on our amdgcn targets, 1 on host.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_ARCH_ARCH_H_
#define CCO_DEVICE_ARCH_ARCH_H_

#include <stdint.h>

#include "device/arch/memory_order.h"

// CCO_DEVICE_API marks the device API's functions: plain (always-inlined) functions in a
// freestanding build (the bitcode, host tests), host+device functions under nvcc / hipcc /
// clang -x cuda, so each compiler pass gets the implementation of its own target.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define CCO_DEVICE_API __host__ __device__ inline __attribute__((always_inline))
#else
#define CCO_DEVICE_API inline __attribute__((always_inline))
#endif

// CCO_UNROLL before a loop of constant, short trip count: unrolled fully, its arrays stay in
// registers (rolled, nvptx puts them on the stack, in local memory). nvcc compiles a file twice:
// its device pass (__CUDA_ARCH__) takes `unroll`; its host pass, whose front end and gcc each know
// only one of the two spellings, gets none (the host copy of a device function needs no hint).
#if defined(__clang__) || defined(__CUDA_ARCH__) || defined(__HIPCC__)
#define CCO_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define CCO_UNROLL
#else
#define CCO_UNROLL _Pragma("GCC unroll 16")
#endif

namespace cco {
namespace arch {
using LaneMask = uint64_t;  // wide enough for a 64-lane wavefront
}  // namespace arch
}  // namespace cco

#if defined(__NVPTX__) || defined(__CUDA_ARCH__)
#include "device/arch/nvptx.h"
#elif defined(__AMDGCN__)
#include "device/arch/amdgcn.h"
#else
#include "device/arch/host.h"
#endif

namespace cco {
namespace arch {
#if defined(__NVPTX__) || defined(__CUDA_ARCH__) || defined(__AMDGCN__)
// A GPU has no bell to sleep on (ccoDevComm.hostBell is the cpu platform's): a wait's pauses
// are spin_backoff's.
class WaitPause {
 public:
  CCO_DEVICE_API explicit WaitPause(const void*) {}
  CCO_DEVICE_API void end() {}
  CCO_DEVICE_API void after_poll(uint32_t spins, uint32_t spinsBeforeBackoff, uint32_t backoffNs) {
    spin_backoff(spins, spinsBeforeBackoff, backoffNs);
  }
};
// A GPU's proxy polls; it never sleeps on a doorbell, nor a GPU's wait on a bell.
CCO_DEVICE_API void wake_host_consumer(const uint32_t*, const int32_t*) {}
CCO_DEVICE_API void ring_bell(const void*) {}
#endif

// Derived helpers, the same on every target.
CCO_DEVICE_API uint32_t warp_id() { return thread_id() / warp_size(); }
CCO_DEVICE_API bool is_block_leader() { return thread_id() == 0; }
}  // namespace arch
}  // namespace cco

#endif  // CCO_DEVICE_ARCH_ARCH_H_
