// SPDX-License-Identifier: MIT
// Every device wait is bounded, and an abort ends every wait (ranks as threads on the cpu
// platform, the device API compiled for the host):
//   - a wait whose call gives no timeout ends at the device communicator's bound
//     (ccoDevComm.waitTimeoutMs, from CCO_TIMEOUT_MS) with CCO_DEVICE_STATUS_TIMEOUT; a call's
//     own timeout overrides it, and CCO_NO_TIMEOUT sets none;
//   - ccoCommAbort from any thread ends every wait of every device communicator of the
//     communicator (GDA signal, counter and barrier waits, LSA barriers, SDMA signal waits) and
//     its blocked host calls. The target is 100 ms; asserted below 1 s, which holds on a loaded
//     2-core machine, and each figure is printed ("wait_bounds: ... ended N ms after").
#include <gtest/gtest.h>
#include <stdio.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "device/cco_device.hpp"
#include "device/gda.hpp"
#include "device/lsa_barrier.hpp"
#include "device/sdma.hpp"
#include "tests/device/gda_ranks.h"

namespace {

using namespace cco::gda_test;
using Clock = std::chrono::steady_clock;

int64_t MsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

constexpr int kBoundMs = 600;  // CCO_TIMEOUT_MS of the first test

// How long `wait` took, and what it returned.
struct Timed {
  int32_t status;
  int64_t ms;
};
Timed Time(const std::function<int32_t()>& wait) {
  const auto start = Clock::now();
  const int32_t status = wait();
  return Timed{status, MsBetween(start, Clock::now())};
}

// Both ranks wait for what neither sends, so that they reach their host calls together (the
// host calls' bound is the same CCO_TIMEOUT_MS).
TEST(WaitBounds, AWaitWithoutATimeoutEndsAtTheDeviceCommunicatorsBound) {
  EXPECT_EQ(RunGdaRanks(
                2, CCO_GDA_CONNECTION_FULL,
                [](Rank& k) {
                  CHECK_OR_FAIL(k.dc.waitTimeoutMs == static_cast<uint32_t>(kBoundMs));
                  const int peer = 1 - k.rank;
                  auto bounded = [&](const char* what, Timed t, int64_t least, int64_t below) {
                    printf("wait_bounds: rank %d: %s ended after %lld ms (status %d)\n", k.rank, what,
                           static_cast<long long>(t.ms), t.status);
                    return t.status == CCO_DEVICE_STATUS_TIMEOUT && t.ms >= least && t.ms < below;
                  };
                  // No timeout of their own: the device communicator's.
                  ccoGda<> gda(k.dc, 0);
                  CHECK_OR_FAIL(bounded("a GDA signal wait", Time([&] { return gda.wait_signal(0, 1); }), kBoundMs,
                                        kBoundMs + 1000));
                  CHECK_OR_FAIL(bounded("a GDA counter wait", Time([&] { return gda.wait_counter(0, 1); }), kBoundMs,
                                        kBoundMs + 1000));
                  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
                  reqs.lsaBarrierCount = 1;
                  ccoDevComm withBarrier{};
                  CHECK_OR_FAIL(ccoDevCommCreate(k.comm, &reqs, &withBarrier) == ccoSuccess);
                  CHECK_OR_FAIL(withBarrier.waitTimeoutMs == static_cast<uint32_t>(kBoundMs));
                  ccoLsaBarrierSession<ccoCoopThread> barrier(ccoCoopThread(), withBarrier, 0);
                  CHECK_OR_FAIL(bounded("an LSA barrier wait", Time([&] { return barrier.wait(); }), kBoundMs,
                                        kBoundMs + 1000));  // nobody arrived
                  ccoSdma sdma(k.dc);
                  CHECK_OR_FAIL(bounded("an SDMA signal wait", Time([&] { return sdma.wait_signal(peer, 0, 1); }),
                                        kBoundMs, kBoundMs + 1000));
                  // A call's own timeout overrides it.
                  ccoGda<> brief(k.dc, 0, 50'000'000ull);
                  CHECK_OR_FAIL(bounded("a GDA signal wait of 50 ms", Time([&] { return brief.wait_signal(0, 1); }), 50,
                                        kBoundMs));
                  CHECK_OR_FAIL(bounded("an LSA barrier wait of 50 ms",
                                        Time([&] { return barrier.wait(50'000'000ull); }), 50, kBoundMs));
                  CHECK_OR_FAIL(ccoDevCommDestroy(k.comm, &withBarrier) == ccoSuccess);
                  // CCO_NO_TIMEOUT: no bound at all. Rank 1 signals well after the bound.
                  if (k.rank == 1) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(2 * kBoundMs));
                    CHECK_OR_FAIL(gda.signal(peer, 0) == CCO_DEVICE_STATUS_OK);
                    CHECK_OR_FAIL(gda.flush() == CCO_DEVICE_STATUS_OK);
                  } else {
                    ccoGda<> forever(k.dc, 0, CCO_NO_TIMEOUT);
                    const Timed t = Time([&] { return forever.wait_signal(0, 1); });
                    printf("wait_bounds: a GDA signal wait with CCO_NO_TIMEOUT ended after %lld ms (status %d)\n",
                           static_cast<long long>(t.ms), t.status);
                    CHECK_OR_FAIL(t.status == CCO_DEVICE_STATUS_OK && t.ms >= kBoundMs);
                  }
                  return ccoBarrierAll(k.comm) == ccoSuccess;
                },
                1, /*sdmaQueues=*/1, kBoundMs),
            0);
}

// Rank 0 waits in every kind of device wait, on two device communicators, and in a host call,
// each on a thread of its own, for things rank 1 never does; another thread aborts rank 0's
// communicator.
TEST(WaitBounds, AbortEndsEveryWaitOfEveryDeviceCommunicatorAndHostCall) {
  std::atomic<bool> zeroDone{false};
  EXPECT_EQ(RunGdaRanks(
                2, CCO_GDA_CONNECTION_FULL,
                [&](Rank& k) {
                  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
                  reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
                  reqs.gdaBarrierCount = 1;
                  reqs.lsaBarrierCount = 1;
                  ccoDevComm other{};
                  CHECK_OR_FAIL(ccoDevCommCreate(k.comm, &reqs, &other) == ccoSuccess);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  k.aborted = true;  // rank 0 aborts: both tear down locally
                  if (k.rank == 1) {
                    while (!zeroDone) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    return true;
                  }
                  const int peer = 1;
                  struct Waiter {
                    const char* what;
                    std::function<int32_t()> wait;
                    int32_t expected;
                  };
                  // Every device wait without a timeout of its own (the communicator's, 20 s).
                  std::vector<Waiter> waiters(6);
                  waiters[0] = {"GDA signal wait (first device communicator)",
                                [&] {
                                  ccoGda<> gda(k.dc, 0);
                                  return gda.wait_signal(0, 1);
                                },
                                CCO_DEVICE_STATUS_ABORTED};
                  waiters[1] = {"GDA counter wait (second)",
                                [&] {
                                  ccoGda<> gda(other, 0);
                                  return gda.wait_counter(0, 1);
                                },
                                CCO_DEVICE_STATUS_ABORTED};
                  waiters[2] = {"GDA barrier (second)",
                                [&] {
                                  ccoGda<> gda(other, 0);
                                  ccoGdaBarrierSession<ccoCoopThread> barrier(ccoCoopThread(), gda, 0);
                                  return barrier.sync();
                                },
                                CCO_DEVICE_STATUS_ABORTED};
                  waiters[3] = {"LSA barrier (second)",
                                [&] {
                                  ccoLsaBarrierSession<ccoCoopThread> barrier(ccoCoopThread(), other, 0);
                                  return barrier.sync();
                                },
                                CCO_DEVICE_STATUS_ABORTED};
                  waiters[4] = {"SDMA signal wait (first)",
                                [&] {
                                  ccoSdma sdma(k.dc);
                                  return sdma.wait_signal(peer, 0, 1);
                                },
                                CCO_DEVICE_STATUS_ABORTED};
                  waiters[5] = {"ccoBarrierAll (host)", [&] { return static_cast<int32_t>(ccoBarrierAll(k.comm)); },
                                static_cast<int32_t>(ccoAborted)};
                  // What each returned, and when: its thread's until joined.
                  std::vector<int32_t> status(waiters.size(), -1);
                  std::vector<Clock::time_point> ended(waiters.size());
                  std::vector<std::thread> threads;
                  for (size_t i = 0; i < waiters.size(); ++i)
                    threads.emplace_back([&, i] {
                      status[i] = waiters[i].wait();
                      ended[i] = Clock::now();
                    });
                  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all of them inside
                  Clock::time_point aborted;
                  std::thread([&] {
                    aborted = Clock::now();
                    ccoCommAbort(k.comm);
                  }).join();
                  for (auto& t : threads) t.join();
                  bool ok = true;
                  for (size_t i = 0; i < waiters.size(); ++i) {
                    const Waiter& w = waiters[i];
                    const int64_t ms = MsBetween(aborted, ended[i]);
                    printf("wait_bounds: %s ended %lld ms after ccoCommAbort (status %d)\n", w.what,
                           static_cast<long long>(ms), status[i]);
                    if (status[i] != w.expected || ms >= 1000) {
                      fprintf(stderr, "rank 0: %s: status %d (expected %d) after %lld ms\n", w.what, status[i],
                              w.expected, static_cast<long long>(ms));
                      ok = false;
                    }
                  }
                  zeroDone = true;
                  return ok;
                },
                1, /*sdmaQueues=*/1),
            0);
}

}  // namespace
