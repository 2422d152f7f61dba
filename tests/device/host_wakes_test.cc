// SPDX-License-Identifier: MIT
// The cpu platform's wake-ups, whose "device" code runs on host threads: a device wait that
// sleeps on its rank's bell (abi/devcomm.h) ends when the bell rings (a proxy's pass that did
// work, a direct signal, an abort), and a doorbell writes the eventfd of a proxy asleep on its
// ring (abi/ring.h). A wake that is lost would leave the sleeper to its sleep's bound; these
// tests lengthen the bound past their waits' timeouts, so that a lost wake fails them instead
// of slowing them.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "abi/gda.h"
#include "device/gda.hpp"  // the doorbell modes by their names
#include "device/ring.hpp"
#include "device/cco_device.hpp"
#include "device/spin_wait.hpp"
#include "proxy/host_bell.h"
#include "proxy/ring_consumer.h"
#include "tests/device/gda_ranks.h"
#include "tests/device/test_ring.h"

namespace cco {
namespace {

using Clock = std::chrono::steady_clock;

// A wait for `word` to reach `least` with the bell, as a device communicator's waits make it;
// its timeout (10 s) is shorter than the bell's sleeps.
int32_t WaitFor(const uint64_t* word, uint64_t least, const ccoHostBell* bell, const uint32_t* abort) {
  WaitLimits limits{abort, 10'000'000'000ull, bell};
  return spin_wait<RingSpin>([&] { return __atomic_load_n(word, __ATOMIC_ACQUIRE) >= least; }, [] { return false; },
                             limits);
}

// The bell's sleeps last 30 s at most while a test runs: longer than any wait it makes.
class LongBellSleeps : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = arch::host_detail::bell_sleep_bound_ns;
    arch::host_detail::bell_sleep_bound_ns = 30'000'000'000l;
  }
  void TearDown() override { arch::host_detail::bell_sleep_bound_ns = saved_; }

  // Waits (bounded) until `sleepers` waits sleep on the bell: in short sleeps of its own, so
  // that on a loaded machine the waiter gets the core it needs to get there.
  bool AwaitSleepers(uint32_t sleepers) {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (__atomic_load_n(&bell_.sleepers, __ATOMIC_SEQ_CST) < sleepers) {
      if (Clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return true;
  }
  // A word written and the bell rung, as a proxy does.
  void Write(uint64_t* word, uint64_t value) {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
    RingHostBell(reinterpret_cast<uint64_t>(&bell_));
  }

  // A wait for a word to reach 1, asleep on the bell when `wake` runs (given the word and the
  // abort flag): its status, and how long it took from `wake` on.
  template <class Wake> int32_t WaitWokenBy(Wake wake, Clock::duration* took) {
    alignas(8) uint64_t word = 0;
    uint32_t abort = 0;
    int32_t status = -1;
    std::thread waiter([&] { status = WaitFor(&word, 1, &bell_, &abort); });
    if (!AwaitSleepers(1)) ADD_FAILURE() << "the wait never slept on the bell";
    const auto start = Clock::now();
    wake(&word, &abort);
    waiter.join();
    *took = Clock::now() - start;
    return status;
  }

  ccoHostBell bell_{};
  long saved_ = 0;
};

TEST_F(LongBellSleeps, AWordTheHostWritesEndsTheSleepAtOnce) {
  Clock::duration took;
  const int32_t status = WaitWokenBy([&](uint64_t* word, uint32_t*) { Write(word, 1); }, &took);
  EXPECT_EQ(status, CCO_DEVICE_STATUS_OK);
  EXPECT_LT(took, std::chrono::seconds(5));                           // not the 10 s timeout
  EXPECT_EQ(__atomic_load_n(&bell_.sleepers, __ATOMIC_SEQ_CST), 0u);  // it left the count
}

// Writes in turn with a waiter, as a ping-pong makes them: no write may be missed, whether it
// lands while the waiter sleeps (every other round waits for that), or at any moment of its
// way there (a pause of 0 to 50 us: before its last poll, between that poll and its sleep).
TEST_F(LongBellSleeps, NoWriteIsMissedAcrossManyHandOffs) {
  alignas(8) uint64_t ping = 0;
  alignas(8) uint64_t pong = 0;
  uint32_t abort = 0;
  constexpr uint64_t kRounds = 500;
  std::atomic<int32_t> worst{CCO_DEVICE_STATUS_OK};
  std::thread answerer([&] {
    for (uint64_t i = 1; i <= kRounds; ++i) {
      const int32_t s = WaitFor(&ping, i, &bell_, &abort);
      if (s != CCO_DEVICE_STATUS_OK) {
        worst = s;
        return;
      }
      Write(&pong, i);
    }
  });
  const auto start = Clock::now();
  std::minstd_rand pauses(7);
  for (uint64_t i = 1; i <= kRounds && worst == CCO_DEVICE_STATUS_OK; ++i) {
    if (i % 2 == 0) {
      ASSERT_TRUE(AwaitSleepers(1));
    } else {
      const auto until = Clock::now() + std::chrono::microseconds(pauses() % 50);
      while (Clock::now() < until) {
      }
    }
    Write(&ping, i);
    const int32_t s = WaitFor(&pong, i, &bell_, &abort);
    if (s != CCO_DEVICE_STATUS_OK) worst = s;
  }
  answerer.join();
  EXPECT_EQ(worst.load(), CCO_DEVICE_STATUS_OK);
  EXPECT_EQ(__atomic_load_n(&pong, __ATOMIC_ACQUIRE), kRounds);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(60));
  EXPECT_EQ(__atomic_load_n(&bell_.sleepers, __ATOMIC_SEQ_CST), 0u);
}

// A direct signal is the device code's own store into the peer's memory: it rings the
// peer's bell itself.
TEST_F(LongBellSleeps, TheDeviceCodesOwnStoreRingsToo) {
  Clock::duration took;
  const int32_t status = WaitWokenBy(
      [&](uint64_t* word, uint32_t*) {
        arch::add<order::Release, scope::System>(word, uint64_t{1});
        arch::ring_bell(&bell_);
      },
      &took);
  EXPECT_EQ(status, CCO_DEVICE_STATUS_OK);
  EXPECT_LT(took, std::chrono::seconds(5));
}

// The abort flag: ccoCommAbort and a proxy that fails the communicator ring the bell.
TEST_F(LongBellSleeps, RingingEndsAWaitThatOnlyTheAbortFlagEnds) {
  Clock::duration took;
  const int32_t status = WaitWokenBy(
      [&](uint64_t*, uint32_t* abort) {
        __atomic_store_n(abort, 1u, __ATOMIC_RELEASE);
        RingHostBell(reinterpret_cast<uint64_t>(&bell_));
      },
      &took);
  EXPECT_EQ(status, CCO_DEVICE_STATUS_ABORTED);
  EXPECT_LT(took, std::chrono::seconds(5));
}

// End to end, ranks as threads on the cpu platform: a put+signal ping-pong through the
// proxies (the direct path off) and one by direct signals, each wait asleep on the bell until
// the proxy's pass or the peer's signal rings it.
TEST_F(LongBellSleeps, PingPongsThroughTheProxyAndDirectWakeEveryWait) {
  for (const char* direct : {"0", "4096"}) {
    setenv("CCO_GDA_DIRECT_MAX_BYTES", direct, 1);
    const auto start = Clock::now();
    EXPECT_EQ(gda_test::RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                                    [](gda_test::Rank& k) {
                                      ccoGda<> gda(k.dc, 0);
                                      const int peer = 1 - k.rank;
                                      auto send = [&] {
                                        return gda.put(peer, k.win, 64, k.win, 0, 8, CCO_SIGNAL_INC, 0);
                                      };
                                      for (int i = 0; i < 200; ++i) {
                                        if (k.rank == 0) CHECK_OR_FAIL(send() == CCO_DEVICE_STATUS_OK);
                                        CHECK_OR_FAIL(gda.wait_signal(0, 1) == CCO_DEVICE_STATUS_OK);
                                        if (k.rank == 1) CHECK_OR_FAIL(send() == CCO_DEVICE_STATUS_OK);
                                      }
                                      CHECK_OR_FAIL(gda.flush() == CCO_DEVICE_STATUS_OK);
                                      return ccoBarrierAll(k.comm) == ccoSuccess;
                                    }),
              0)
        << "direct max bytes " << direct;
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(20)) << "direct max bytes " << direct;
  }
  unsetenv("CCO_GDA_DIRECT_MAX_BYTES");
}

// Takes every released descriptor of `r`, as the proxy would, and says so in `consumed`.
int Drain(TestRing& r) {
  int taken = 0;
  ccoGdaDesc d;
  uint64_t ticket;
  while (r.consumer.Next(&d, &ticket)) {
    r.Complete(ticket);
    ++taken;
  }
  return taken;
}

// How many times the eventfd was written since it was last read (0: not readable).
uint64_t Rung(int eventFd) {
  pollfd p{eventFd, POLLIN, 0};
  if (poll(&p, 1, 0) != 1) return 0;
  uint64_t count = 0;
  return read(eventFd, &count, sizeof(count)) == sizeof(count) ? count : 0;
}

ccoGdaDesc APut() {
  ccoGdaDesc d = {};
  d.op = CCO_GDA_OP_PUT;
  d.bytes = 8;
  return d;
}

class Doorbells : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(eventFd_, 0); }
  void TearDown() override { close(eventFd_); }
  const int eventFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
};

TEST_F(Doorbells, ADoorbellWritesTheEventfdOnlyWhileTheProxySleeps) {
  TestRing r(8);
  r.consumer.WakeBy(eventFd_);
  uint64_t ticket;
  // Awake: a post's doorbell makes no system call.
  ASSERT_EQ(ring::Post<ccoGdaImmediate>(r.view(), APut(), r.limits(), &ticket), CCO_DEVICE_STATUS_OK);
  EXPECT_EQ(Rung(eventFd_), 0u);
  EXPECT_EQ(Drain(r), 1);
  // Asleep: each doorbell writes it.
  r.consumer.Asleep(true);
  ASSERT_EQ(ring::Post<ccoGdaImmediate>(r.view(), APut(), r.limits(), &ticket), CCO_DEVICE_STATUS_OK);
  ASSERT_EQ(ring::Post<ccoGdaImmediate>(r.view(), APut(), r.limits(), &ticket), CCO_DEVICE_STATUS_OK);
  EXPECT_EQ(Rung(eventFd_), 2u);
  r.consumer.Asleep(false);
  EXPECT_EQ(Drain(r), 2);
}

// A deferred post rings nothing; the flush that releases it does, and the proxy it woke
// completes it.
TEST_F(Doorbells, TheFlushOfDeferredPostsWakesTheProxy) {
  TestRing r(8);
  r.consumer.WakeBy(eventFd_);
  r.consumer.Asleep(true);
  uint64_t ticket;
  ASSERT_EQ(ring::Post<ccoGdaDeferred>(r.view(), APut(), r.limits(), &ticket), CCO_DEVICE_STATUS_OK);
  ASSERT_EQ(ring::Post<ccoGdaDeferred>(r.view(), APut(), r.limits(), &ticket), CCO_DEVICE_STATUS_OK);
  EXPECT_EQ(Rung(eventFd_), 0u);
  EXPECT_EQ(Drain(r), 0);  // not released
  int32_t flushed = -1;
  std::thread poster([&] { flushed = ring::Flush<ccoGdaDeferred>(r.view(), r.limits()); });
  // The proxy's side: it sleeps on the eventfd until the flush's doorbell writes it.
  pollfd p{eventFd_, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10'000), 1);
  r.consumer.Asleep(false);
  EXPECT_GE(Rung(eventFd_), 1u);
  EXPECT_EQ(Drain(r), 2);
  poster.join();
  EXPECT_EQ(flushed, CCO_DEVICE_STATUS_OK);
}

}  // namespace
}  // namespace cco
