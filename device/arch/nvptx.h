// SPDX-License-Identifier: MIT
//===-- device/arch/nvptx.h - NVIDIA implementation of arch.h ---*- C++ -*-===//
//
// Inline PTX throughout (clang and nvcc accept it; clang's __nvvm builtins are clang's
// alone): special registers, and every instruction that carries a memory order or scope. LLVM 19 cannot select scoped
// acquire/release loads, stores and fences for NVPTX (llc crashes or drops the order), so each (order, scope) pair is
// spelled out as its own PTX instruction (needs sm_70+, PTX 6.0+).
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_ARCH_NVPTX_H_
#define CCO_DEVICE_ARCH_NVPTX_H_

namespace cco {
namespace arch {

// --- ids and sizes --------------------------------------------------------------------
// Special registers through inline PTX, which clang and nvcc both accept.
#define CCO_NVPTX_SREG(NAME, REG)            \
  CCO_DEVICE_API uint32_t NAME() {           \
    uint32_t v;                              \
    asm("mov.u32 %0, %%" REG ";" : "=r"(v)); \
    return v;                                \
  }
namespace nvptx_detail {
CCO_NVPTX_SREG(tid_x, "tid.x")
CCO_NVPTX_SREG(tid_y, "tid.y")
CCO_NVPTX_SREG(tid_z, "tid.z")
CCO_NVPTX_SREG(ntid_x, "ntid.x")
CCO_NVPTX_SREG(ntid_y, "ntid.y")
CCO_NVPTX_SREG(ntid_z, "ntid.z")
CCO_NVPTX_SREG(ctaid_x, "ctaid.x")
CCO_NVPTX_SREG(ctaid_y, "ctaid.y")
CCO_NVPTX_SREG(ctaid_z, "ctaid.z")
CCO_NVPTX_SREG(nctaid_x, "nctaid.x")
CCO_NVPTX_SREG(nctaid_y, "nctaid.y")
CCO_NVPTX_SREG(nctaid_z, "nctaid.z")
CCO_NVPTX_SREG(laneid, "laneid")
}  // namespace nvptx_detail
#undef CCO_NVPTX_SREG

// Polls of several words load relaxed and fence once (an acquire load holds back later loads).
using PollOrder = order::Relaxed;

CCO_DEVICE_API uint32_t lane_id() { return nvptx_detail::laneid(); }
CCO_DEVICE_API uint32_t warp_size() { return 32; }
CCO_DEVICE_API uint32_t thread_id() {
  using namespace nvptx_detail;
  return tid_x() + ntid_x() * (tid_y() + ntid_y() * tid_z());
}
CCO_DEVICE_API uint32_t block_size() {
  using namespace nvptx_detail;
  return ntid_x() * ntid_y() * ntid_z();
}
CCO_DEVICE_API uint32_t block_id() {
  using namespace nvptx_detail;
  return ctaid_x() + nctaid_x() * (ctaid_y() + nctaid_y() * ctaid_z());
}
CCO_DEVICE_API uint32_t grid_size() {
  using namespace nvptx_detail;
  return nctaid_x() * nctaid_y() * nctaid_z();
}

// --- lanes ----------------------------------------------------------------------------
CCO_DEVICE_API LaneMask active_mask() {
  uint32_t mask;
  asm volatile("activemask.b32 %0;" : "=r"(mask));
  return mask;
}
CCO_DEVICE_API LaneMask ballot(bool predicate) {
  uint32_t result;
  asm volatile("{ .reg .pred p; setp.ne.u32 p, %1, 0; vote.sync.ballot.b32 %0, p, %2; }"
               : "=r"(result)
               : "r"(static_cast<uint32_t>(predicate)), "r"(static_cast<uint32_t>(active_mask())));
  return result;
}
CCO_DEVICE_API void warp_sync() {
  asm volatile("bar.warp.sync %0;" ::"r"(static_cast<uint32_t>(active_mask())) : "memory");
}
// `value` as lane `src` holds it; every active lane must call, and `src` must be active.
CCO_DEVICE_API uint64_t shuffle(uint64_t value, uint32_t src) {
  const uint32_t mask = static_cast<uint32_t>(active_mask());
  uint32_t lo = static_cast<uint32_t>(value), hi = static_cast<uint32_t>(value >> 32);
  asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, %2;" : "+r"(lo) : "r"(src), "r"(mask));
  asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, %2;" : "+r"(hi) : "r"(src), "r"(mask));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
// Every lane of the warp, whatever is active now: lanes still diverged in a spin are
// waited for (a coop of a whole warp needs this, activemask would leave them behind).
CCO_DEVICE_API void warp_sync_all() { asm volatile("bar.warp.sync -1;" ::: "memory"); }
// shuffle and warp_sync among the lanes of `lanes` (each calls, `src` among them), where lanes
// of it may still be apart (one ran a loop the others skipped): activemask would leave them out.
CCO_DEVICE_API uint64_t shuffle_among(uint64_t value, uint32_t src, LaneMask lanes) {
  const uint32_t mask = static_cast<uint32_t>(lanes);
  uint32_t lo = static_cast<uint32_t>(value), hi = static_cast<uint32_t>(value >> 32);
  asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, %2;" : "+r"(lo) : "r"(src), "r"(mask));
  asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, %2;" : "+r"(hi) : "r"(src), "r"(mask));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
CCO_DEVICE_API void warp_sync_among(LaneMask lanes) {
  asm volatile("bar.warp.sync %0;" ::"r"(static_cast<uint32_t>(lanes)) : "memory");
}
// A vote of every lane of the warp (ballot over activemask could see a subset: lanes are not
// guaranteed to run together again after a sync under independent thread scheduling).
CCO_DEVICE_API LaneMask ballot_all(bool predicate) {
  uint32_t result;
  asm volatile("{ .reg .pred p; setp.ne.u32 p, %1, 0; vote.sync.ballot.b32 %0, p, -1; }"
               : "=r"(result)
               : "r"(static_cast<uint32_t>(predicate)));
  return result;
}
// barrier.sync (not bar.sync): threads may reach it from different instructions.
CCO_DEVICE_API void block_sync() { asm volatile("barrier.sync 0;" ::: "memory"); }
constexpr bool kHasBlockVote = true;
// The PTX model: barrier.sync orders every thread's earlier stores before what follows it in
// any thread, and a fence.sys after it is cumulative over them.
constexpr bool kBlockFenceCumulative = true;
CCO_DEVICE_API bool block_sync_or(bool predicate) {
  uint32_t any;
  asm volatile("{ .reg .pred p, q; setp.ne.u32 p, %1, 0; barrier.red.or.pred q, 0, p; selp.u32 %0, 1, 0, q; }"
               : "=r"(any)
               : "r"(static_cast<uint32_t>(predicate))
               : "memory");
  return any != 0;
}

// The lowest set lane of a mask (the mask is not 0), and how many lanes it has.
CCO_DEVICE_API uint32_t lowest_lane(LaneMask m) {
#if defined(__clang__)
  return static_cast<uint32_t>(__builtin_ctzll(m));
#else
  return static_cast<uint32_t>(__ffsll(static_cast<long long>(m)) - 1);
#endif
}
CCO_DEVICE_API uint32_t lane_count(LaneMask m) {
#if defined(__clang__)
  return static_cast<uint32_t>(__builtin_popcountll(m));
#else
  return static_cast<uint32_t>(__popcll(m));
#endif
}

// A word that no one writes while the kernel runs (a device communicator's fields): a
// non-coherent, read-only load, which a later LLVM may also load once across fences.
CCO_DEVICE_API uint64_t load_invariant(const uint64_t* p) {
#if defined(__clang__)
  return static_cast<uint64_t>(__nvvm_ldg_ll(reinterpret_cast<const long long*>(p)));
#else
  return static_cast<uint64_t>(__ldg(reinterpret_cast<const unsigned long long*>(p)));
#endif
}
CCO_DEVICE_API uint32_t load_invariant(const uint32_t* p) {
#if defined(__clang__)
  return static_cast<uint32_t>(__nvvm_ldg_i(reinterpret_cast<const int*>(p)));
#else
  return __ldg(reinterpret_cast<const unsigned int*>(p));
#endif
}

// A value computed at this point: its loads go out here, with the others made here, and the
// compiler may not sink them behind a later test to their first use (InstCombine sinks a
// load whose every use lies past a branch), which would make each wait for that test. The
// value passes through an empty asm that is not volatile: a pure step, which a loop hoists
// with the loads and which keeps nothing alive past the value's last use (a volatile asm
// stayed in every loop that made a handle and kept all its fields live across it: spills).
template <class T> CCO_DEVICE_API void compute_here(T& v) {
  static_assert(sizeof(T) <= 8, "a value of at most 8 bytes");
  if constexpr (sizeof(T) > 4) {
    uint64_t word = 0;
    __builtin_memcpy(&word, &v, sizeof(T));
    asm("" : "+l"(word));
    __builtin_memcpy(&v, &word, sizeof(T));
  } else {
    uint32_t word = 0;
    __builtin_memcpy(&word, &v, sizeof(T));
    asm("" : "+r"(word));
    __builtin_memcpy(&v, &word, sizeof(T));
  }
}

// --- atomics --------------------------------------------------------------------------
// Primary templates reject what no specialisation below covers, at compile time.
template <class O, class S, class T> CCO_DEVICE_API T load(const T*) {
  static_assert(IsLoadOrder<O>::value && IsScope<S>::value && sizeof(T) == 0,
                "load: order Relaxed or Acquire, a scope tag, T uint32_t or uint64_t");
  return T();
}
template <class O, class S, class T> CCO_DEVICE_API void store(T*, T) {
  static_assert(IsStoreOrder<O>::value && IsScope<S>::value && sizeof(T) == 0,
                "store: order Relaxed or Release, a scope tag, T uint32_t or uint64_t");
}
template <class O, class S, class T> CCO_DEVICE_API T fetch_add(T*, T) {
  static_assert(IsRmwOrder<O>::value && IsScope<S>::value && sizeof(T) == 0, "fetch_add: bad order/scope/type");
  return T();
}
template <class O, class S, class T> CCO_DEVICE_API void add(T*, T) {
  static_assert(IsStoreOrder<O>::value && IsScope<S>::value && sizeof(T) == 0, "add: order Relaxed or Release");
}
template <class O, class S, class T> CCO_DEVICE_API T exchange(T*, T) {
  static_assert(IsRmwOrder<O>::value && IsScope<S>::value && sizeof(T) == 0, "exchange: bad order/scope/type");
  return T();
}
template <class O, class S, class T> CCO_DEVICE_API T fetch_max(T*, T) {
  static_assert(IsRmwOrder<O>::value && IsScope<S>::value && sizeof(T) == 0, "fetch_max: bad order/scope/type");
  return T();
}
template <class O, class S, class T> CCO_DEVICE_API T compare_exchange(T*, T, T) {
  static_assert(IsRmwOrder<O>::value && IsScope<S>::value && sizeof(T) == 0, "compare_exchange: bad order/scope/type");
  return T();
}

#define CCO_NVPTX_FOR_SCOPES(M, OTAG, OSTR) \
  M(OTAG, OSTR, scope::Block, "cta")        \
  M(OTAG, OSTR, scope::Device, "gpu")       \
  M(OTAG, OSTR, scope::System, "sys")

#define CCO_NVPTX_LOAD(OTAG, OSTR, STAG, SSTR)                                        \
  template <> CCO_DEVICE_API uint32_t load<OTAG, STAG, uint32_t>(const uint32_t* p) { \
    uint32_t v;                                                                       \
    asm volatile("ld." OSTR "." SSTR ".u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); \
    return v;                                                                         \
  }                                                                                   \
  template <> CCO_DEVICE_API uint64_t load<OTAG, STAG, uint64_t>(const uint64_t* p) { \
    uint64_t v;                                                                       \
    asm volatile("ld." OSTR "." SSTR ".u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); \
    return v;                                                                         \
  }

#define CCO_NVPTX_STORE(OTAG, OSTR, STAG, SSTR)                                          \
  template <> CCO_DEVICE_API void store<OTAG, STAG, uint32_t>(uint32_t* p, uint32_t v) { \
    asm volatile("st." OSTR "." SSTR ".u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");      \
  }                                                                                      \
  template <> CCO_DEVICE_API void store<OTAG, STAG, uint64_t>(uint64_t* p, uint64_t v) { \
    asm volatile("st." OSTR "." SSTR ".u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");      \
  }

// One read-modify-write instruction, 32- and 64-bit: OP is the PTX operation with its
// type suffix stem ("add.u", "exch.b", "max.u").
#define CCO_NVPTX_RMW(NAME, OP, OTAG, OSTR, STAG, SSTR)                                                    \
  template <> CCO_DEVICE_API uint32_t NAME<OTAG, STAG, uint32_t>(uint32_t* p, uint32_t v) {                \
    uint32_t old;                                                                                          \
    asm volatile("atom." OSTR "." SSTR "." OP "32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory"); \
    return old;                                                                                            \
  }                                                                                                        \
  template <> CCO_DEVICE_API uint64_t NAME<OTAG, STAG, uint64_t>(uint64_t* p, uint64_t v) {                \
    uint64_t old;                                                                                          \
    asm volatile("atom." OSTR "." SSTR "." OP "64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory"); \
    return old;                                                                                            \
  }
#define CCO_NVPTX_ADD(OTAG, OSTR, STAG, SSTR) CCO_NVPTX_RMW(fetch_add, "add.u", OTAG, OSTR, STAG, SSTR)
// A reduction: no old value, so the thread does not wait for the memory's answer.
#define CCO_NVPTX_RED(OTAG, OSTR, STAG, SSTR)                                            \
  template <> CCO_DEVICE_API void add<OTAG, STAG, uint32_t>(uint32_t* p, uint32_t v) {   \
    asm volatile("red." OSTR "." SSTR ".add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); \
  }                                                                                      \
  template <> CCO_DEVICE_API void add<OTAG, STAG, uint64_t>(uint64_t* p, uint64_t v) {   \
    asm volatile("red." OSTR "." SSTR ".add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory"); \
  }
#define CCO_NVPTX_EXCH(OTAG, OSTR, STAG, SSTR) CCO_NVPTX_RMW(exchange, "exch.b", OTAG, OSTR, STAG, SSTR)
#define CCO_NVPTX_MAX(OTAG, OSTR, STAG, SSTR) CCO_NVPTX_RMW(fetch_max, "max.u", OTAG, OSTR, STAG, SSTR)

#define CCO_NVPTX_CAS(OTAG, OSTR, STAG, SSTR)                                                                         \
  template <> CCO_DEVICE_API uint32_t compare_exchange<OTAG, STAG, uint32_t>(uint32_t* p, uint32_t e, uint32_t d) {   \
    uint32_t old;                                                                                                     \
    asm volatile("atom." OSTR "." SSTR ".cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(p), "r"(e), "r"(d) : "memory"); \
    return old;                                                                                                       \
  }                                                                                                                   \
  template <> CCO_DEVICE_API uint64_t compare_exchange<OTAG, STAG, uint64_t>(uint64_t* p, uint64_t e, uint64_t d) {   \
    uint64_t old;                                                                                                     \
    asm volatile("atom." OSTR "." SSTR ".cas.b64 %0, [%1], %2, %3;" : "=l"(old) : "l"(p), "l"(e), "l"(d) : "memory"); \
    return old;                                                                                                       \
  }

#define CCO_NVPTX_FOR_RMW_ORDERS(M)                  \
  CCO_NVPTX_FOR_SCOPES(M, order::Relaxed, "relaxed") \
  CCO_NVPTX_FOR_SCOPES(M, order::Acquire, "acquire") \
  CCO_NVPTX_FOR_SCOPES(M, order::Release, "release") \
  CCO_NVPTX_FOR_SCOPES(M, order::AcqRel, "acq_rel")

CCO_NVPTX_FOR_SCOPES(CCO_NVPTX_LOAD, order::Relaxed, "relaxed")
CCO_NVPTX_FOR_SCOPES(CCO_NVPTX_LOAD, order::Acquire, "acquire")
CCO_NVPTX_FOR_SCOPES(CCO_NVPTX_STORE, order::Relaxed, "relaxed")
CCO_NVPTX_FOR_SCOPES(CCO_NVPTX_STORE, order::Release, "release")
CCO_NVPTX_FOR_RMW_ORDERS(CCO_NVPTX_ADD)
CCO_NVPTX_FOR_SCOPES(CCO_NVPTX_RED, order::Relaxed, "relaxed")
CCO_NVPTX_FOR_SCOPES(CCO_NVPTX_RED, order::Release, "release")
CCO_NVPTX_FOR_RMW_ORDERS(CCO_NVPTX_EXCH)
CCO_NVPTX_FOR_RMW_ORDERS(CCO_NVPTX_MAX)
CCO_NVPTX_FOR_RMW_ORDERS(CCO_NVPTX_CAS)

#undef CCO_NVPTX_FOR_RMW_ORDERS
#undef CCO_NVPTX_CAS
#undef CCO_NVPTX_MAX
#undef CCO_NVPTX_EXCH
#undef CCO_NVPTX_ADD
#undef CCO_NVPTX_RED
#undef CCO_NVPTX_RMW
#undef CCO_NVPTX_STORE
#undef CCO_NVPTX_LOAD
#undef CCO_NVPTX_FOR_SCOPES

// --- fences ---------------------------------------------------------------------------
template <class S> CCO_DEVICE_API void fence() {
  static_assert(IsScope<S>::value, "fence: a scope tag");
  if constexpr (detail::IsSame<S, scope::Block>::value) {
    asm volatile("fence.acq_rel.cta;" ::: "memory");
  } else if constexpr (detail::IsSame<S, scope::Device>::value) {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  } else {
    asm volatile("fence.acq_rel.sys;" ::: "memory");
  }
}

// --- time -----------------------------------------------------------------------------
CCO_DEVICE_API void nanosleep(uint32_t ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }
// A spinning wait's pause before its next poll (device/spin_wait.hpp): none for the first
// `spinsBeforeBackoff` polls, then a `backoffNs` sleep, which frees the SM's issue slots.
// Its pauses stay short (no spin count makes them sleeps of the host's kind).
constexpr uint32_t kSpinsBeforeLongPauses = 0xffffffffu;
CCO_DEVICE_API void spin_backoff(uint32_t spins, uint32_t spinsBeforeBackoff, uint32_t backoffNs) {
  if (spins >= spinsBeforeBackoff) nanosleep(backoffNs);
}
CCO_DEVICE_API uint64_t cycles() {
  uint64_t c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  return c;
}
CCO_DEVICE_API uint64_t timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace arch
}  // namespace cco

#endif  // CCO_DEVICE_ARCH_NVPTX_H_
