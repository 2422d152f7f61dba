//===-- device/spin_wait.hpp - how every device wait spins ------*- C++ -*-===//
//
// Every wait of the device API (a ring's credit and flush, GDA and SDMA signals and
// counters, the GDA and LSA barriers) polls its condition until it holds, and meanwhile:
//   - every Policy::kCheckInterval polls, looks at the communicator's abort flag, at what
//     else the wait depends on (`failed`: a ring the proxy failed), and at the clock for its
//     timeout. The abort flag and a ring's words are host memory, a bus trip each: not at
//     every poll;
//   - after Policy::kSpinsBeforeBackoff polls, pauses Policy::kBackoffNs before each poll
//     (arch::spin_backoff; the host arch gives its core away much sooner).
// A wait returns a ccoDeviceStatus: OK, ABORTED (the abort flag, or `failed`), or TIMEOUT
// (timeoutNs after `start`; 0: none).
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_SPIN_WAIT_HPP_
#define CCO_DEVICE_SPIN_WAIT_HPP_

#include <stdint.h>

#include "abi/enums.h"
#include "device/arch/arch.h"

namespace cco {

/// What every wait watches besides its own condition.
struct WaitLimits {
  const uint32_t* abortFlag;  // the communicator's (null: none)
  uint64_t timeoutNs;         // 0: no timeout
};

/// The proxy rings' waits (credit, flush, signals and counters, the GDA barrier): what they
/// wait for comes through a host thread, so they check their limits and the rings' error
/// words often and back off early.
struct RingSpin {
  static constexpr uint32_t kCheckInterval = 256;
  static constexpr uint32_t kSpinsBeforeBackoff = 1u << 12;
  static constexpr uint32_t kBackoffNs = 128;
};

/// The LSA barrier: what it waits for are its peers' own stores, a fabric trip away, and a
/// pause adds to the round: it spins longer before it backs off, and reads the abort flag
/// (host memory) less often.
struct BarrierSpin {
  static constexpr uint32_t kCheckInterval = 1024;
  static constexpr uint32_t kSpinsBeforeBackoff = 1u << 16;
  static constexpr uint32_t kBackoffNs = 256;
};

/// Whether the communicator whose abort flag this is was aborted (null: no flag, never).
CCO_DEVICE_API bool aborted(const uint32_t* abortFlag) {
  return abortFlag != nullptr && arch::load<order::Relaxed, scope::System>(abortFlag) != 0;
}

/// Where a wait's timeout counts from: now, or nothing to read where there is no timeout.
CCO_DEVICE_API uint64_t wait_start(uint64_t timeoutNs) { return timeoutNs ? arch::timer_ns() : 0; }

/// Polls `done()` until it holds, or the abort flag is raised, `failed()` holds (ABORTED), or
/// limits.timeoutNs passed since `start` (TIMEOUT).
template <class Policy, class Done, class Failed>
CCO_DEVICE_API int32_t spin_wait(Done done, Failed failed, const WaitLimits& limits, uint64_t start) {
  for (uint32_t spins = 1;; ++spins) {
    if (done()) return CCO_DEVICE_STATUS_OK;
    if (spins % Policy::kCheckInterval == 0) {
      if (aborted(limits.abortFlag)) return CCO_DEVICE_STATUS_ABORTED;
      if (failed()) return CCO_DEVICE_STATUS_ABORTED;
      if (limits.timeoutNs && arch::timer_ns() - start >= limits.timeoutNs) return CCO_DEVICE_STATUS_TIMEOUT;
    }
    arch::spin_backoff(spins, Policy::kSpinsBeforeBackoff, Policy::kBackoffNs);
  }
}

/// The same with the timeout counted from now.
template <class Policy, class Done, class Failed>
CCO_DEVICE_API int32_t spin_wait(Done done, Failed failed, const WaitLimits& limits) {
  return spin_wait<Policy>(done, failed, limits, wait_start(limits.timeoutNs));
}

}  // namespace cco

#endif  // CCO_DEVICE_SPIN_WAIT_HPP_
