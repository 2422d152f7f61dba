// SPDX-License-Identifier: MIT
#include "proxy/help_gate.h"

#include "common/process_registry.h"
#include "proxy/proxy.h"

namespace cco {
namespace {

// The cpu platform's proxies by their rank's bell, for the device threads that help them
// (cco_host_proxy_help, cco_host_proxy_nap).
ProcessRegistry<uint64_t, std::shared_ptr<HelpGate>>& Helped() {
  static auto* helped = new ProcessRegistry<uint64_t, std::shared_ptr<HelpGate>>();  // never destroyed
  return *helped;
}

// The same proxies by their wake-up eventfd, which their rings name (abi/ring.h), for the
// device threads that ring them (cco_host_proxy_pass_by_wake).
ProcessRegistry<int32_t, std::shared_ptr<HelpGate>>& HelpedByWakeFd() {
  static auto* helped = new ProcessRegistry<int32_t, std::shared_ptr<HelpGate>>();  // never destroyed
  return *helped;
}

// After a release of `gate`: where the proxy thread found it held and went to sleep
// (Proxy::StandAside), a doorbell rung before it slept may be in a ring the pass had read
// already, so one more pass is owed. It is made here, or, where another holds the gate by now,
// left to that holder's release: the flag raised again, then one more try. Each side raises the
// flag, or releases the gate, before a full fence and then looks at the other's: one of them
// always sees the other. After its own pass it looks again: the thread may have stood aside
// meanwhile.
void PassOwedToThreadAside(HelpGate& gate) {
  for (;;) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!gate.threadAside.load(std::memory_order_relaxed) || !gate.threadAside.exchange(false)) return;
    std::unique_lock<std::mutex> held(gate.mu, std::try_to_lock);
    if (!held.owns_lock()) {
      gate.threadAside.store(true);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (!held.try_lock()) return;  // the holder owes it now
      gate.threadAside.store(false);
    }
    if (gate.proxy == nullptr) return;
    (void)gate.proxy->Help();
  }
}

// What every hook does: finds the gate under `key`, and where no pass is in progress and the
// proxy is not going, calls pass(proxy) holding it; 0 where it did not get that far.
template <class Table, class Key, class Pass> int WithGate(Table& table, const Key& key, Pass pass) {
  std::shared_ptr<HelpGate> gate;
  if (!table.Find(key, &gate)) return 0;
  std::unique_lock<std::mutex> held(gate->mu, std::try_to_lock);  // the thread or another helper is in one
  if (!held.owns_lock() || gate->proxy == nullptr) return 0;
  const int did = pass(*gate->proxy);
  held.unlock();
  PassOwedToThreadAside(*gate);
  return did;
}

}  // namespace

void PublishHelpGate(uint64_t bell, int32_t wakeFd, const std::shared_ptr<HelpGate>& gate) {
  if (bell != 0) Helped().Publish(bell, gate);
  if (wakeFd >= 0) HelpedByWakeFd().Publish(wakeFd, gate);
}

void WithdrawHelpGate(uint64_t bell, int32_t wakeFd) {
  if (bell != 0) Helped().Withdraw(bell);
  if (wakeFd >= 0) HelpedByWakeFd().Withdraw(wakeFd);
}

}  // namespace cco

// A device thread's wait on the cpu platform (device/arch/host.h), before it yields or sleeps:
// one pass of the proxy of the rank whose bell it waits on; non-zero where it did anything.
extern "C" int cco_host_proxy_help(const void* bell) {
  return cco::WithGate(cco::Helped(), reinterpret_cast<uint64_t>(bell),
                       [](cco::Proxy& proxy) { return proxy.HelpWait() ? 1 : 0; });
}

// A device thread's doorbell on the cpu platform, its proxy asleep (device/arch/host.h): the
// proxy's passes, made by the ringing thread unless one is in progress, as the thread would make
// them had it been woken: until one finds nothing (a pass that applied a peer's request leaves
// the rest of its work to the next), a few at most. Non-zero where it made them.
extern "C" int cco_host_proxy_pass_by_wake(int32_t fd) {
  return cco::WithGate(cco::HelpedByWakeFd(), fd, [](cco::Proxy& proxy) {
    constexpr int kMostPasses = 4;
    for (int i = 0; i < kMostPasses && proxy.Help(); ++i) {
    }
    return 1;
  });
}

// The same wait, where it would sleep on its bell: asleep on its proxy's network input
// instead, then a pass (Proxy::HelpNap); non-zero where it slept so.
extern "C" int cco_host_proxy_nap(const void* bell, uint32_t seen, long bound_ns) {
  return cco::WithGate(cco::Helped(), reinterpret_cast<uint64_t>(bell),
                       [&](cco::Proxy& proxy) { return proxy.HelpNap(bell, seen, bound_ns) ? 1 : 0; });
}
