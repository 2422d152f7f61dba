// SPDX-License-Identifier: MIT
//===-- device/spin_wait.hpp - how every device wait spins ------*- C++ -*-===//
//
// Every wait of the device API (a ring's credit and flush, GDA and SDMA signals and
// counters, the GDA and LSA barriers) polls its condition until it holds, and meanwhile:
//   - every Policy::kCheckInterval polls, looks at the communicator's abort flag, at what
//     else the wait depends on (`failed`: a ring the proxy failed), and at the clock for its
//     timeout. The abort flag and a ring's words are host memory, a bus trip each: not at
//     every poll. Where the arch's pauses may take long (the host's yields and sleeps,
//     arch::kSpinsBeforeLongPauses), at every poll from then on: a pause costs far more than
//     the look, and a timeout is not overrun by a check interval of long pauses;
//   - after Policy::kSpinsBeforeBackoff polls, pauses Policy::kBackoffNs before each poll
//     (arch::WaitPause; the host arch gives its core away much sooner, and sleeps on the
//     cpu platform's bell, which the host rings when it writes a word for the device).
// A wait returns a ccoDeviceStatus: OK, ABORTED (the abort flag, which the host also raises
// when the communicator failed, or `failed`), or TIMEOUT. Every wait has a bound unless its
// caller asks for none (wait_limits: the call's timeoutNs, else the device communicator's
// waitTimeoutMs). The clock starts at the wait's first look at its limits, so a wait that
// ends at once reads no clock.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_SPIN_WAIT_HPP_
#define CCO_DEVICE_SPIN_WAIT_HPP_

#include <stdint.h>

#include "abi/devcomm.h"
#include "abi/enums.h"
#include "device/arch/arch.h"
#include "device/handles.hpp"

namespace cco {

/// What every wait watches besides its own condition.
struct WaitLimits {
  const uint32_t* abortFlag;   // the communicator's (null: none)
  uint64_t timeoutNs;          // 0: no timeout
  const void* bell = nullptr;  // the cpu platform's ccoHostBell (abi/devcomm.h), null: none
};

/// The limits of a wait of `dc` whose call gives `timeoutNs` (abi/devcomm.h): 0 takes the
/// device communicator's bound, CCO_NO_TIMEOUT none.
/// (abortFlag and waitTimeoutMs are the device communicator's, read earlier.)
CCO_DEVICE_API WaitLimits wait_limits(const uint32_t* abortFlag, uint32_t waitTimeoutMs, uint64_t timeoutNs) {
  const uint64_t bound = timeoutNs == CCO_NO_TIMEOUT ? 0
                         : timeoutNs != 0            ? timeoutNs
                                                     : uint64_t{waitTimeoutMs} * 1000000u;
  return WaitLimits{abortFlag, bound};
}
template <class Read = ReadAsIs>
CCO_DEVICE_API WaitLimits wait_limits(const ccoDevComm& dc, uint64_t timeoutNs, Read read = Read()) {
  WaitLimits limits =
      wait_limits(reinterpret_cast<const uint32_t*>(read(dc.abortFlag)), read(dc.waitTimeoutMs), timeoutNs);
  limits.bell = reinterpret_cast<const void*>(read(dc.hostBell));
  return limits;
}

/// The limits made here, their loads with the handle's other fields (arch::compute_here): a
/// handle's posts and waits read them behind its tests.
CCO_DEVICE_API void compute_here(WaitLimits& limits) {
  arch::compute_here(limits.abortFlag);
  arch::compute_here(limits.timeoutNs);
  arch::compute_here(limits.bell);
}

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

/// Whether the communicator whose abort flag this is was aborted or failed (null: no flag, never).
CCO_DEVICE_API bool aborted(const uint32_t* abortFlag) {
  return abortFlag != nullptr && arch::load<order::Relaxed, scope::System>(abortFlag) != 0;
}

/// When a wait began: read at its first look at the limits (0 until then), and shared by the
/// polls of one wait that watch several words in turn (the LSA barrier's peers).
struct WaitStart {
  uint64_t ns = 0;
  bool known = false;
};

/// Whether the wait has run out of time (starting its clock at the first look).
CCO_DEVICE_API bool timed_out(const WaitLimits& limits, WaitStart& start) {
  if (limits.timeoutNs == 0) return false;
  const uint64_t now = arch::timer_ns();
  if (!start.known) {
    start.ns = now;
    start.known = true;
    return false;
  }
  return now - start.ns >= limits.timeoutNs;
}

/// Polls `done()` until it holds, or the abort flag is raised, `failed()` holds (ABORTED), or
/// limits.timeoutNs passed since `start` (TIMEOUT).
template <class Policy, class Done, class Failed>
CCO_DEVICE_API int32_t spin_wait(Done done, Failed failed, const WaitLimits& limits, WaitStart& start) {
  arch::WaitPause pause(limits.bell);
  int32_t status = CCO_DEVICE_STATUS_OK;
  for (uint32_t spins = 1; !done(); ++spins) {
    if (spins % Policy::kCheckInterval == 0 || spins >= arch::kSpinsBeforeLongPauses) {
      status = aborted(limits.abortFlag) || failed() ? CCO_DEVICE_STATUS_ABORTED
               : timed_out(limits, start)            ? CCO_DEVICE_STATUS_TIMEOUT
                                                     : CCO_DEVICE_STATUS_OK;
      if (status != CCO_DEVICE_STATUS_OK) break;
    }
    pause.after_poll(spins, Policy::kSpinsBeforeBackoff, Policy::kBackoffNs);
  }
  pause.end();
  return status;
}

/// The same for a wait of its own.
template <class Policy, class Done, class Failed>
CCO_DEVICE_API int32_t spin_wait(Done done, Failed failed, const WaitLimits& limits) {
  WaitStart start;
  return spin_wait<Policy>(done, failed, limits, start);
}

}  // namespace cco

#endif  // CCO_DEVICE_SPIN_WAIT_HPP_
