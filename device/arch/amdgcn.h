// SPDX-License-Identifier: MIT
//===-- device/arch/amdgcn.h - AMD implementation of arch.h -----*- C++ -*-===//
//
// Freestanding: clang's __builtin_amdgcn_* and __hip_atomic_* builtins, which LLVM 19
// lowers through the AMDGPU memory model (cache controls per scope are the backend's
// job: on gfx942 a system-scope acquire load invalidates with `buffer_inv sc0 sc1`).
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_ARCH_AMDGCN_H_
#define CCO_DEVICE_ARCH_AMDGCN_H_

#ifndef __HIP_MEMORY_SCOPE_WORKGROUP
#define __HIP_MEMORY_SCOPE_WORKGROUP 3
#endif
#ifndef __HIP_MEMORY_SCOPE_AGENT
#define __HIP_MEMORY_SCOPE_AGENT 4
#endif
#ifndef __HIP_MEMORY_SCOPE_SYSTEM
#define __HIP_MEMORY_SCOPE_SYSTEM 5
#endif

namespace cco {
namespace arch {
namespace amdgcn_detail {

template <class S> struct ScopeId;
template <> struct ScopeId<scope::Block> {
  static constexpr int value = __HIP_MEMORY_SCOPE_WORKGROUP;
};
template <> struct ScopeId<scope::Device> {
  static constexpr int value = __HIP_MEMORY_SCOPE_AGENT;
};
template <> struct ScopeId<scope::System> {
  static constexpr int value = __HIP_MEMORY_SCOPE_SYSTEM;
};

// The HSA kernel dispatch packet (hsa_kernel_dispatch_packet_t): what the launch said.
typedef __attribute__((address_space(4))) const uint16_t* DispatchU16;
typedef __attribute__((address_space(4))) const uint32_t* DispatchU32;
// C-style casts: the builtin's pointer is in the constant address space as each language spells
// it (target space 4 freestanding, `__constant__` under -x hip), and only a C-style cast may
// convert between the two; reinterpret_cast may not change address spaces.
CCO_DEVICE_API DispatchU16 dispatch16() { return (DispatchU16)__builtin_amdgcn_dispatch_ptr(); }
CCO_DEVICE_API DispatchU32 dispatch32() { return (DispatchU32)__builtin_amdgcn_dispatch_ptr(); }

template <class T> struct IsAtomicWord {
  static constexpr bool value = false;
};
template <> struct IsAtomicWord<uint32_t> {
  static constexpr bool value = true;
};
template <> struct IsAtomicWord<uint64_t> {
  static constexpr bool value = true;
};

}  // namespace amdgcn_detail

// Polls of several words load relaxed and fence once (an acquire load holds back later loads).
using PollOrder = order::Relaxed;

// --- ids and sizes --------------------------------------------------------------------
CCO_DEVICE_API uint32_t lane_id() { return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }
CCO_DEVICE_API uint32_t warp_size() { return __builtin_amdgcn_wavefrontsize(); }
// Packet: workgroup_size_x/y/z are uint16 at bytes 4/6/8, grid_size_x/y/z uint32 (in
// work-items) at bytes 12/16/20.
CCO_DEVICE_API uint32_t block_dim(int axis) { return amdgcn_detail::dispatch16()[2 + axis]; }
CCO_DEVICE_API uint32_t grid_dim(int axis) {
  return (amdgcn_detail::dispatch32()[3 + axis] + block_dim(axis) - 1) / block_dim(axis);
}
CCO_DEVICE_API uint32_t thread_id() {
  return __builtin_amdgcn_workitem_id_x() +
         block_dim(0) * (__builtin_amdgcn_workitem_id_y() + block_dim(1) * __builtin_amdgcn_workitem_id_z());
}
CCO_DEVICE_API uint32_t block_size() { return block_dim(0) * block_dim(1) * block_dim(2); }
CCO_DEVICE_API uint32_t block_id() {
  return __builtin_amdgcn_workgroup_id_x() +
         grid_dim(0) * (__builtin_amdgcn_workgroup_id_y() + grid_dim(1) * __builtin_amdgcn_workgroup_id_z());
}
CCO_DEVICE_API uint32_t grid_size() { return grid_dim(0) * grid_dim(1) * grid_dim(2); }

// --- lanes ----------------------------------------------------------------------------
CCO_DEVICE_API LaneMask active_mask() { return __builtin_amdgcn_read_exec(); }
CCO_DEVICE_API LaneMask ballot(bool predicate) { return __builtin_amdgcn_ballot_w64(predicate); }
CCO_DEVICE_API void warp_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
// `value` as lane `src` holds it; every active lane must call, and `src` must be active.
CCO_DEVICE_API uint64_t shuffle(uint64_t value, uint32_t src) {
  const int lo =
      __builtin_amdgcn_ds_bpermute(static_cast<int>(src * 4), static_cast<int>(static_cast<uint32_t>(value)));
  const int hi =
      __builtin_amdgcn_ds_bpermute(static_cast<int>(src * 4), static_cast<int>(static_cast<uint32_t>(value >> 32)));
  return (static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32) | static_cast<uint32_t>(lo);
}
// Lanes of a wavefront reconverge before the barrier: the same as warp_sync.
CCO_DEVICE_API void warp_sync_all() { warp_sync(); }
// A wavefront's lanes run together: the lane set changes nothing.
CCO_DEVICE_API uint64_t shuffle_among(uint64_t value, uint32_t src, LaneMask) { return shuffle(value, src); }
CCO_DEVICE_API void warp_sync_among(LaneMask) { warp_sync(); }
// A wavefront runs in lockstep: its ballot already counts every lane.
CCO_DEVICE_API LaneMask ballot_all(bool predicate) { return ballot(predicate); }
CCO_DEVICE_API void block_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// No barrier that reduces: a vote would need LDS, which a linked library does not own.
constexpr bool kHasBlockVote = false;
// Never run on an AMD GPU: whether a workgroup barrier carries the other waves' stores to one
// wave's system fence rests on LLVM's AMDGPU model, so each thread fences its own.
constexpr bool kBlockFenceCumulative = false;
CCO_DEVICE_API bool block_sync_or(bool predicate) {
  block_sync();
  return predicate;
}

// The lowest set lane of a mask (the mask is not 0), and how many lanes it has.
CCO_DEVICE_API uint32_t lowest_lane(LaneMask m) { return static_cast<uint32_t>(__builtin_ctzll(m)); }
CCO_DEVICE_API uint32_t lane_count(LaneMask m) { return static_cast<uint32_t>(__builtin_popcountll(m)); }

// --- atomics --------------------------------------------------------------------------
#define CCO_AMDGCN_CHECK(WHAT, ORDER_OK)                                                          \
  static_assert(ORDER_OK<O>::value && IsScope<S>::value && amdgcn_detail::IsAtomicWord<T>::value, \
                WHAT ": bad order, scope or type (uint32_t / uint64_t)")

// A word that no one writes while the kernel runs (a device communicator's fields): read
// through the constant address space, which the compiler treats as unchanging (a scalar load
// it may make once).
CCO_DEVICE_API uint64_t load_invariant(const uint64_t* p) {
  return *(const __attribute__((address_space(4))) uint64_t*)p;
}
CCO_DEVICE_API uint32_t load_invariant(const uint32_t* p) {
  return *(const __attribute__((address_space(4))) uint32_t*)p;
}

// Where loads are made (nvptx.h): left to the compiler here (amdgcn is compiled, not timed).
template <class T> CCO_DEVICE_API void compute_here(T&) {}

template <class O, class S, class T> CCO_DEVICE_API T load(const T* p) {
  CCO_AMDGCN_CHECK("load", IsLoadOrder);
  return __hip_atomic_load(p, OrderId<O>::value, amdgcn_detail::ScopeId<S>::value);
}
template <class O, class S, class T> CCO_DEVICE_API void store(T* p, T v) {
  CCO_AMDGCN_CHECK("store", IsStoreOrder);
  __hip_atomic_store(p, v, OrderId<O>::value, amdgcn_detail::ScopeId<S>::value);
}
template <class O, class S, class T> CCO_DEVICE_API T fetch_add(T* p, T v) {
  CCO_AMDGCN_CHECK("fetch_add", IsRmwOrder);
  return __hip_atomic_fetch_add(p, v, OrderId<O>::value, amdgcn_detail::ScopeId<S>::value);
}
template <class O, class S, class T> CCO_DEVICE_API void add(T* p, T v) {
  CCO_AMDGCN_CHECK("add", IsStoreOrder);
  (void)__hip_atomic_fetch_add(p, v, OrderId<O>::value, amdgcn_detail::ScopeId<S>::value);
}
template <class O, class S, class T> CCO_DEVICE_API T exchange(T* p, T v) {
  CCO_AMDGCN_CHECK("exchange", IsRmwOrder);
  return __hip_atomic_exchange(p, v, OrderId<O>::value, amdgcn_detail::ScopeId<S>::value);
}
template <class O, class S, class T> CCO_DEVICE_API T fetch_max(T* p, T v) {
  CCO_AMDGCN_CHECK("fetch_max", IsRmwOrder);
  return __hip_atomic_fetch_max(p, v, OrderId<O>::value, amdgcn_detail::ScopeId<S>::value);
}
template <class O, class S, class T> CCO_DEVICE_API T compare_exchange(T* p, T expected, T desired) {
  CCO_AMDGCN_CHECK("compare_exchange", IsRmwOrder);
  // The failure order may not be stronger than the success order, nor a release.
  constexpr int kFailure = detail::IsSame<O, order::Acquire>::value || detail::IsSame<O, order::AcqRel>::value
                               ? __ATOMIC_ACQUIRE
                               : __ATOMIC_RELAXED;
  __hip_atomic_compare_exchange_strong(p, &expected, desired, OrderId<O>::value, kFailure,
                                       amdgcn_detail::ScopeId<S>::value);
  return expected;  // holds the old value whether or not the exchange happened
}
#undef CCO_AMDGCN_CHECK

// --- fences ---------------------------------------------------------------------------
template <class S> CCO_DEVICE_API void fence() {
  static_assert(IsScope<S>::value, "fence: a scope tag");
  if constexpr (detail::IsSame<S, scope::Block>::value) {
    __builtin_amdgcn_fence(__ATOMIC_ACQ_REL, "workgroup");
  } else if constexpr (detail::IsSame<S, scope::Device>::value) {
    __builtin_amdgcn_fence(__ATOMIC_ACQ_REL, "agent");
  } else {
    __builtin_amdgcn_fence(__ATOMIC_ACQ_REL, "");  // "" is the system scope
  }
}

// --- time -----------------------------------------------------------------------------
// s_memrealtime counts a constant 100 MHz clock on gfx9 (MI300 series included).
CCO_DEVICE_API uint64_t timer_ns() { return __builtin_amdgcn_s_memrealtime() * 10; }
CCO_DEVICE_API uint64_t cycles() { return __builtin_readcyclecounter(); }
CCO_DEVICE_API void nanosleep(uint32_t ns) {
  const uint64_t start = timer_ns();
  while (timer_ns() - start < ns) __builtin_amdgcn_s_sleep(1);  // ~64 cycles a step
}
// A spinning wait's pause before its next poll (device/spin_wait.hpp): none for the first
// `spinsBeforeBackoff` polls, then a `backoffNs` sleep, which frees the CU's issue slots.
// Its pauses stay short (no spin count makes them sleeps of the host's kind).
constexpr uint32_t kSpinsBeforeLongPauses = 0xffffffffu;
CCO_DEVICE_API void spin_backoff(uint32_t spins, uint32_t spinsBeforeBackoff, uint32_t backoffNs) {
  if (spins >= spinsBeforeBackoff) nanosleep(backoffNs);
}

}  // namespace arch
}  // namespace cco

#endif  // CCO_DEVICE_ARCH_AMDGCN_H_
