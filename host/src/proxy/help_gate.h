// SPDX-License-Identifier: MIT
// The cpu platform, where the "device" code runs on host threads: how a device thread makes its
// rank's proxy's pass itself instead of waking the proxy thread (device/arch/host.h calls the
// hooks, help_gate.cc answers them). Each proxy's gate is the pass's mutex: the proxy thread holds
// it for each pass, a device thread try-locks it; a process table finds the gate by the rank's
// bell (a wait) or by the proxy's wake-up eventfd (a doorbell, which names it: abi/ring.h).
#ifndef CCO_HOST_PROXY_HELP_GATE_H_
#define CCO_HOST_PROXY_HELP_GATE_H_

#include <stdint.h>

#include <atomic>
#include <memory>
#include <mutex>

namespace cco {

class Proxy;

// The pass's mutex, and the proxy, null once it is going (the table may hold the gate longer).
struct HelpGate {
  std::mutex mu;
  Proxy* proxy = nullptr;
  // Raised by the proxy thread that found the gate held and sleeps (Proxy::StandAside): the
  // holder, after its release, makes one more pass for a doorbell rung before the thread slept.
  std::atomic<bool> threadAside{false};
};

// Makes `gate` found by `bell` (0: none) and by `wakeFd` (negative: none); Withdraw undoes it.
void PublishHelpGate(uint64_t bell, int32_t wakeFd, const std::shared_ptr<HelpGate>& gate);
void WithdrawHelpGate(uint64_t bell, int32_t wakeFd);

}  // namespace cco

#endif  // CCO_HOST_PROXY_HELP_GATE_H_
