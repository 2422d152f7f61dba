// SPDX-License-Identifier: MIT
//===-- device/arch/host.h - host implementation of arch.h ------*- C++ -*-===//
//
// The device API compiled for the CPU: each host thread is a block of one thread in a
// warp of one lane. Atomics are the compiler's __atomic builtins (what <atomic> is built
// on); every scope is the whole host, so the scope tag only checks the call.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_ARCH_HOST_H_
#define CCO_DEVICE_ARCH_HOST_H_

#include <linux/futex.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "abi/devcomm.h"

namespace cco {
namespace arch {
namespace host_detail {
template <class T> struct IsAtomicWord {
  static constexpr bool value = false;
};
template <> struct IsAtomicWord<uint32_t> {
  static constexpr bool value = true;
};
template <> struct IsAtomicWord<uint64_t> {
  static constexpr bool value = true;
};
}  // namespace host_detail

// --- ids and sizes --------------------------------------------------------------------
CCO_DEVICE_API uint32_t lane_id() { return 0; }
CCO_DEVICE_API uint32_t warp_size() { return 1; }
CCO_DEVICE_API uint32_t thread_id() { return 0; }
CCO_DEVICE_API uint32_t block_size() { return 1; }
CCO_DEVICE_API uint32_t block_id() { return 0; }
CCO_DEVICE_API uint32_t grid_size() { return 1; }

// --- lanes ----------------------------------------------------------------------------
CCO_DEVICE_API LaneMask active_mask() { return 1; }
CCO_DEVICE_API LaneMask ballot(bool predicate) { return predicate ? 1 : 0; }
// ThreadSanitizer does not model fences: polls acquire on every load here (free on x86).
using PollOrder = order::Acquire;

CCO_DEVICE_API void warp_sync() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
CCO_DEVICE_API uint64_t shuffle(uint64_t value, uint32_t) { return value; }
CCO_DEVICE_API void warp_sync_all() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
CCO_DEVICE_API uint64_t shuffle_among(uint64_t value, uint32_t, LaneMask) { return value; }
CCO_DEVICE_API void warp_sync_among(LaneMask) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
CCO_DEVICE_API LaneMask ballot_all(bool predicate) { return ballot(predicate); }
CCO_DEVICE_API void block_sync() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
// A block is one thread here: the vote is the caller's own.
constexpr bool kHasBlockVote = true;
constexpr bool kBlockFenceCumulative = true;
CCO_DEVICE_API bool block_sync_or(bool predicate) {
  block_sync();
  return predicate;
}

CCO_DEVICE_API uint32_t lowest_lane(LaneMask m) { return static_cast<uint32_t>(__builtin_ctzll(m)); }
CCO_DEVICE_API uint32_t lane_count(LaneMask m) { return static_cast<uint32_t>(__builtin_popcountll(m)); }

// --- atomics --------------------------------------------------------------------------
#define CCO_HOST_CHECK(WHAT, ORDER_OK)                                                          \
  static_assert(ORDER_OK<O>::value && IsScope<S>::value && host_detail::IsAtomicWord<T>::value, \
                WHAT ": bad order, scope or type (uint32_t / uint64_t)")

// A word that no one writes while the kernel runs: a plain load on the host.
CCO_DEVICE_API uint64_t load_invariant(const uint64_t* p) { return *p; }
CCO_DEVICE_API uint32_t load_invariant(const uint32_t* p) { return *p; }

// Where loads are made (nvptx.h): left to the compiler on the host.
template <class T> CCO_DEVICE_API void compute_here(T&) {}

template <class O, class S, class T> CCO_DEVICE_API T load(const T* p) {
  CCO_HOST_CHECK("load", IsLoadOrder);
  return __atomic_load_n(p, OrderId<O>::value);
}
template <class O, class S, class T> CCO_DEVICE_API void store(T* p, T v) {
  CCO_HOST_CHECK("store", IsStoreOrder);
  __atomic_store_n(p, v, OrderId<O>::value);
}
template <class O, class S, class T> CCO_DEVICE_API T fetch_add(T* p, T v) {
  CCO_HOST_CHECK("fetch_add", IsRmwOrder);
  return __atomic_fetch_add(p, v, OrderId<O>::value);
}
template <class O, class S, class T> CCO_DEVICE_API void add(T* p, T v) {
  CCO_HOST_CHECK("add", IsStoreOrder);
  (void)__atomic_fetch_add(p, v, OrderId<O>::value);
}
template <class O, class S, class T> CCO_DEVICE_API T exchange(T* p, T v) {
  CCO_HOST_CHECK("exchange", IsRmwOrder);
  return __atomic_exchange_n(p, v, OrderId<O>::value);
}
template <class O, class S, class T> CCO_DEVICE_API T fetch_max(T* p, T v) {
  CCO_HOST_CHECK("fetch_max", IsRmwOrder);
  // A true read-modify-write with order O even when v does not win: it stores max(old, v).
  T seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &seen, seen < v ? v : seen, true, OrderId<O>::value, __ATOMIC_RELAXED)) {
  }
  return seen;
}
template <class O, class S, class T> CCO_DEVICE_API T compare_exchange(T* p, T expected, T desired) {
  CCO_HOST_CHECK("compare_exchange", IsRmwOrder);
  constexpr int kFailure = detail::IsSame<O, order::Acquire>::value || detail::IsSame<O, order::AcqRel>::value
                               ? __ATOMIC_ACQUIRE
                               : __ATOMIC_RELAXED;
  __atomic_compare_exchange_n(p, &expected, desired, false, OrderId<O>::value, kFailure);
  return expected;
}
#undef CCO_HOST_CHECK

// --- fences ---------------------------------------------------------------------------
template <class S> CCO_DEVICE_API void fence() {
  static_assert(IsScope<S>::value, "fence: a scope tag");
  __atomic_thread_fence(__ATOMIC_ACQ_REL);
}

// --- time -----------------------------------------------------------------------------
CCO_DEVICE_API uint64_t timer_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
CCO_DEVICE_API uint64_t cycles() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#else
  return timer_ns();
#endif
}
CCO_DEVICE_API void nanosleep(uint32_t ns) {
  if (ns < 1000) {
    sched_yield();  // shorter than a timer slice: give the core away once
    return;
  }
  struct timespec ts = {0, static_cast<long>(ns)};
  ::nanosleep(&ts, nullptr);
}

// A spinning wait's pause before its next poll. The GPUs' counts (spin long, then sleep
// briefly) do not fit here: the device API runs on the host with ranks as threads, often
// more of them than cores, and a thread that spins holds a core the thread it waits for may
// need. So a host wait gives its core away soon: it yields after a few polls (enough when the
// thread it waits for is ready to run), and sleeps once it has waited a little (a thread that
// only yields stays runnable, and takes its share of the cores from everything else for as
// long as it waits). It sleeps on the cpu platform's bell (abi/devcomm.h: ccoHostBell) where
// its device communicator has one, which the host rings after each word it writes: a signal
// that the proxy or a network backend lands wakes the wait at once, not at its next look.
namespace host_detail {
constexpr uint32_t kSpinsBeforeYield = 64;
constexpr uint32_t kSpinsBeforeSleep = 64 + 1024;
// On the bell a sleep ends when the word may have changed: it is taken much sooner.
constexpr uint32_t kSpinsBeforeBellSleep = 64 + 64;
constexpr long kSleepNs = 20000;  // a sleep's bound: words the host does not write ring nothing
constexpr unsigned long kTimerSlackNs = 1000;
// How long a sleep on the bell lasts at most. Tests lengthen it, so that a ring the sleeper
// missed shows as a wait that does not end.
inline long bell_sleep_bound_ns = kSleepNs;
// Linux stretches a sleep by the thread's timer slack (50 us unless set): a wait that sleeps
// 20 us would see its peer's word up to 70 us late, on every hop of a round trip.
inline void precise_sleeps() {
  static thread_local bool set = prctl(PR_SET_TIMERSLACK, kTimerSlackNs, 0, 0, 0) == 0;
  (void)set;
}
}  // namespace host_detail
// A yield may wait out a timeslice of every runnable thread: long, from the first one on.
constexpr uint32_t kSpinsBeforeLongPauses = host_detail::kSpinsBeforeYield;
CCO_DEVICE_API void spin_backoff(uint32_t spins, uint32_t, uint32_t) {
  if (spins < host_detail::kSpinsBeforeYield) return;
  if (spins < host_detail::kSpinsBeforeSleep) {
    sched_yield();
    return;
  }
  host_detail::precise_sleeps();
  struct timespec ts = {0, host_detail::kSleepNs};
  ::nanosleep(&ts, nullptr);
}

// After a store a device wait may watch, made by the device code itself (a direct signal into
// a peer's memory): the peer's waits asleep on its bell look now, whichever process of the
// host they are in (the bells are shared memory, their futexes shared ones).
CCO_DEVICE_API void ring_bell(const void* bell) {
  if (bell == nullptr) return;
  ccoHostBell* b = static_cast<ccoHostBell*>(const_cast<void*>(bell));
  __atomic_add_fetch(&b->rings, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&b->sleepers, __ATOMIC_SEQ_CST) != 0)
    (void)syscall(SYS_futex, &b->rings, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

}  // namespace arch
}  // namespace cco

// The host library's (host/src/proxy/help_gate.cc): one pass of the proxy whose wake-up eventfd is
// `fd`, made by the thread that rang its ring, where no pass is in progress; non-zero where it
// made it. Weak: device code linked without the library passes nothing.
extern "C" int cco_host_proxy_pass_by_wake(int32_t fd) __attribute__((weak));

namespace cco {
namespace arch {

// After a doorbell's store: a proxy asleep on the ring (abi/ring.h) gets the descriptor. The
// ringing thread makes the proxy's pass itself where it can (its own process's proxy: on a
// small machine a post then wakes no thread); else it writes the proxy awake. The full fence
// pairs with the proxy's between raising `asleep` and its last look at the rings: either it
// sees this doorbell, or this sees it asleep.
CCO_DEVICE_API void wake_host_consumer(const uint32_t* asleep, const int32_t* fd) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(asleep, __ATOMIC_RELAXED) == 0) return;
  const int32_t wake = __atomic_load_n(fd, __ATOMIC_RELAXED);
  if (cco_host_proxy_pass_by_wake != nullptr && cco_host_proxy_pass_by_wake(wake) != 0) return;
  const uint64_t one = 1;
  (void)!::write(wake, &one, sizeof(one));
}

// One wait's pauses (device/spin_wait.hpp): spin_backoff's, except that the sleeps are on the
// bell. Once it sleeps, the wait counts itself among the bell's sleepers and reads the bell's
// count before each poll: a ring after that read ends the sleep that follows at once (the
// futex finds the count moved), and the poll sees the word written before it.
}  // namespace arch
}  // namespace cco

// The host library's (host/src/proxy/help_gate.cc): one pass of the proxy of the rank whose bell
// this is, made by a waiting thread; non-zero where it did anything. Weak: device code linked
// without the library helps nobody.
extern "C" int cco_host_proxy_help(const void* bell) __attribute__((weak));
// The same wait where it would sleep on the bell: asleep on that proxy's network input instead
// (up to `bound_ns`, or not at all where the bell rang since `seen`), then the pass; non-zero
// where it slept so. A reply from a peer then wakes the thread that waits for it, not the proxy
// thread that would hand it on.
extern "C" int cco_host_proxy_nap(const void* bell, uint32_t seen, long bound_ns) __attribute__((weak));

namespace cco {
namespace arch {
namespace host_detail {
// A wait's slow steps, out of line: most waits end at a first poll, and the wait's own state
// stays in registers.
__attribute__((noinline)) inline void join_sleepers(ccoHostBell* bell) {
  __atomic_add_fetch(&bell->sleepers, 1, __ATOMIC_SEQ_CST);
}
__attribute__((noinline)) inline void leave_sleepers(ccoHostBell* bell) {
  __atomic_sub_fetch(&bell->sleepers, 1, __ATOMIC_SEQ_CST);
}
// Yields the core; whether it came back soon. A yield that took long means other threads are
// running on it (a loaded machine, where each yield can cost a scheduler tick): a wait then
// sleeps on the bell at once instead of yielding its way there.
constexpr uint64_t kQuickYieldNs = 20000;
__attribute__((noinline)) inline bool quick_yield() {
  const uint64_t before = timer_ns();
  sched_yield();
  return timer_ns() - before < kQuickYieldNs;
}
__attribute__((noinline)) inline void sleep_on(ccoHostBell* bell, uint32_t seen) {
  precise_sleeps();
  const long bound = bell_sleep_bound_ns;
  // Asleep on the network, a ring of the bell (a host peer's store) is seen at the nap's end
  // only: a short one, whatever the bell's sleeps are bounded by.
  if (cco_host_proxy_nap != nullptr && cco_host_proxy_nap(bell, seen, bound < kSleepNs ? bound : kSleepNs) != 0) return;
  struct timespec ts = {bound / 1000000000, bound % 1000000000};
  (void)syscall(SYS_futex, &bell->rings, FUTEX_WAIT, seen, &ts, nullptr, 0);
}
}  // namespace host_detail

class WaitPause {
 public:
  explicit WaitPause(const void* bell) : bell_(static_cast<ccoHostBell*>(const_cast<void*>(bell))) {}
  // The wait is over: it is no longer among the sleepers.
  void end() {
    if (asleep_) host_detail::leave_sleepers(bell_);
  }

  // After a poll that found nothing. Each sleep uses the bell's count as read before the
  // poll that preceded it: the first time, the count is only read (the next poll follows).
  void after_poll(uint32_t spins, uint32_t spinsBeforeBackoff, uint32_t backoffNs) {
    // Past its first polls, a wait does its proxy's pass itself before giving its core away:
    // what it waits for may be what that pass would carry.
    if (bell_ != nullptr && spins >= host_detail::kSpinsBeforeYield && cco_host_proxy_help != nullptr &&
        cco_host_proxy_help(bell_) != 0)
      return;
    if (asleep_) {
      host_detail::sleep_on(bell_, seen_);
    } else if (bell_ == nullptr) {
      return spin_backoff(spins, spinsBeforeBackoff, backoffNs);
    } else if (spins < host_detail::kSpinsBeforeYield) {
      return;
    } else if (spins < host_detail::kSpinsBeforeBellSleep && host_detail::quick_yield()) {
      return;
    } else {
      host_detail::join_sleepers(bell_);
      asleep_ = true;
    }
    seen_ = __atomic_load_n(&bell_->rings, __ATOMIC_SEQ_CST);
  }

 private:
  ccoHostBell* bell_;
  bool asleep_ = false;
  uint32_t seen_ = 0;
};

}  // namespace arch
}  // namespace cco

#endif  // CCO_DEVICE_ARCH_HOST_H_
