// SPDX-License-Identifier: MIT
// SDMA on the CPU: the device API compiled for the host, ranks as threads of one process on
// the cpu platform, the proxy running each queue on a stream of its own (memcpy here). Exact
// data and pool counts for put and get in every coop with and without signals, the LOCAL
// and AGGREGATE flags (nothing of an aggregated post is seen before commit), quiet and
// quiet_queue, many queues and rounds, bad arguments, and SDMA switched off.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "device/cco_device.hpp"
#include "device/sdma.hpp"
#include "tests/device/gda_ranks.h"

namespace {

using namespace cco::gda_test;

constexpr uint64_t kChunk = 512;
constexpr uint64_t kInbox = 8192;    // put from (sender s, queue q) lands at kInbox + (s * queues + q) * kChunk
constexpr uint64_t kGotBox = 32768;  // get from (peer p, queue q) lands at kGotBox + (p * queues + q) * kChunk

uint64_t Box(uint64_t base, int rank, int queue, int queues) {
  return base + (static_cast<uint64_t>(rank) * queues + queue) * kChunk;
}
int Owner(int rank, int round) { return rank * 97 + round; }  // whose pattern a source holds in a round

// Every rank puts to and gets from every LSA peer (itself too) on every queue, signalled,
// in coop `Coop`; then waits for its pools and checks every byte.
template <class Coop> bool PutsAndGetsEverywhere(Rank& k, int round) {
  ccoSdma sdma(k.dc, 10'000'000'000ull);
  const int queues = sdma.queue_count();
  Fill(k.mem, Owner(k.rank, round), kChunk / 4);
  memset(k.mem + kInbox, 0, kChunk * queues * k.n);
  memset(k.mem + kGotBox, 0, kChunk * queues * k.n);
  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
  for (int p = 0; p < k.n; ++p) {
    for (int q = 0; q < queues; ++q) {
      CHECK_OR_FAIL((sdma.put<Coop, true>(p, k.win, Box(kInbox, k.rank, q, queues), k.win, 0, kChunk, q)) == 0);
      CHECK_OR_FAIL((sdma.get<Coop, true>(p, k.win, Box(kGotBox, p, q, queues), k.win, 0, kChunk, q)) == 0);
    }
  }
  for (int p = 0; p < k.n; ++p) {
    for (int q = 0; q < queues; ++q) {
      CHECK_OR_FAIL(sdma.wait_signal<Coop>(p, q, 1) == 0);  // p's put on q landed here
      CHECK_OR_FAIL(sdma.wait_local<Coop>(p, q, 1) == 0);   // this rank's get from p on q landed
      CHECK_OR_FAIL(Holds(k.mem + Box(kInbox, p, q, queues), Owner(p, round), kChunk / 4));
      CHECK_OR_FAIL(Holds(k.mem + Box(kGotBox, p, q, queues), Owner(p, round), kChunk / 4));
      CHECK_OR_FAIL(sdma.read_signal(p, q) == 0 && sdma.read_local(p, q) == 0);
    }
    CHECK_OR_FAIL(sdma.quiet<Coop>(p) == 0);
  }
  return ccoBarrierAll(k.comm) == ccoSuccess;
}

TEST(SdmaOnHost, PutAndGetEveryPeerQueueAndCoop) {
  for (int n : {2, 3}) {
    EXPECT_EQ(RunGdaRanks(
                  n, CCO_GDA_CONNECTION_NONE,
                  [](Rank& k) {
                    ccoSdma sdma(k.dc);
                    CHECK_OR_FAIL(sdma.queue_count() == 3 && k.dc.sdmaQueueCount == 3);
                    for (int round = 0; round < 4; ++round) {
                      CHECK_OR_FAIL(PutsAndGetsEverywhere<ccoCoopThread>(k, round));
                      CHECK_OR_FAIL(PutsAndGetsEverywhere<ccoCoopWarp>(k, round + 10));
                      CHECK_OR_FAIL(PutsAndGetsEverywhere<ccoCoopBlock>(k, round + 20));
                    }
                    return true;
                  },
                  1, /*sdmaQueues=*/3),
              0)
        << n << " ranks";
  }
}

// Many unsignalled puts in a row to one place, then quiet: the last one wins (a queue runs
// in order), and nothing was counted in any pool.
TEST(SdmaOnHost, UnsignalledPutsRunInOrderAndQuietCompletesThem) {
  EXPECT_EQ(
      RunGdaRanks(
          2, CCO_GDA_CONNECTION_NONE,
          [](Rank& k) {
            ccoSdma sdma(k.dc, 10'000'000'000ull);
            const int peer = 1 - k.rank;
            for (int i = 0; i < 40; ++i) Fill(k.mem + i * kChunk, Owner(k.rank, i), kChunk / 4);
            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
            for (int i = 0; i < 40; ++i)
              CHECK_OR_FAIL((sdma.put<ccoCoopThread, false>(peer, k.win, kGotBox, k.win, i * kChunk, kChunk, 1)) == 0);
            CHECK_OR_FAIL(sdma.quiet_queue(peer, 1) == 0);
            // The queue's ring is mirrored (its waits polled the device's copy of `consumed`),
            // and the proxy's copy says what host memory says: all 40 done.
            const uint32_t slot = cco_sdma_slot(peer, 1, k.dc.sdmaQueueCount);
            const auto* dev =
                reinterpret_cast<const ccoGdaRingDevice*>(cco_gda_ring_device_address(k.dc.sdmaRingDevice, slot));
            const auto* host =
                reinterpret_cast<const ccoGdaRingHost*>(cco_gda_ring_host_address(k.dc.sdmaRingHost, slot));
            CHECK_OR_FAIL(dev->consumedCache == 40 && host->consumed == 40);
            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
            CHECK_OR_FAIL(Holds(k.mem + kGotBox, Owner(peer, 39), kChunk / 4));
            CHECK_OR_FAIL(sdma.read_signal(peer, 1) == 0 && sdma.read_local(peer, 1) == 0);
            return ccoBarrierAll(k.comm) == ccoSuccess;
          },
          1, 2),
      0);
}

// AGGREGATE posts wait for commit: the target sees neither data nor signal before it.
// LOCAL puts count in the sender's local pool once complete.
TEST(SdmaOnHost, AggregatedPostsWaitForCommitAndLocalCounts) {
  EXPECT_EQ(RunGdaRanks(
                2, CCO_GDA_CONNECTION_NONE,
                [](Rank& k) {
                  ccoSdma sdma(k.dc, 10'000'000'000ull);
                  const int peer = 1 - k.rank;
                  Fill(k.mem, Owner(k.rank, 7), kChunk / 4);
                  memset(k.mem + kInbox, 0, kChunk);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  for (int i = 0; i < 3; ++i)
                    CHECK_OR_FAIL((sdma.put<ccoCoopThread, true>(peer, k.win, kInbox, k.win, 0, kChunk, 0,
                                                                 CCO_SDMA_FLAG_AGGREGATE | CCO_SDMA_FLAG_LOCAL)) == 0);
                  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // a proxy that took them would have
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  CHECK_OR_FAIL(sdma.read_signal(peer, 0) == 0 && sdma.read_local(peer, 0) == 0);
                  for (size_t i = 0; i < kChunk; ++i) CHECK_OR_FAIL(k.mem[kInbox + i] == 0);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  CHECK_OR_FAIL(sdma.commit(peer, 0) == 0);
                  CHECK_OR_FAIL(sdma.wait_signal(peer, 0, 3) == 0);
                  CHECK_OR_FAIL(Holds(k.mem + kInbox, Owner(peer, 7), kChunk / 4));
                  CHECK_OR_FAIL(sdma.wait_local(peer, 0, 3) == 0);
                  // reset: a count read, then set aside.
                  CHECK_OR_FAIL((sdma.put<ccoCoopThread, true>(peer, k.win, kInbox, k.win, 0, 8, 0)) == 0 &&
                                sdma.quiet(peer) == 0);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  CHECK_OR_FAIL(sdma.read_signal(peer, 0) == 1);
                  sdma.reset_signal(peer, 0);
                  CHECK_OR_FAIL(sdma.read_signal(peer, 0) == 0);
                  return ccoBarrierAll(k.comm) == ccoSuccess;
                },
                1, 1),
            0);
}

// Whether the count of (peer, queue) reaches `least` within 10 s, read without consuming it
// (as cco.ops's kernels read it: every program of a rank polls the same count).
bool Reaches(const ccoSdma& sdma, int peer, int queue, uint64_t least) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (sdma.read_signal(peer, queue) < least) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// The pattern of cco.ops's reduce pair over SDMA, which stalled on an H100: per call, several
// "programs" (threads) of a rank post signalled puts to its peer at once, first on queue 0
// (partials), then, once the peer's queue-0 puts of the call landed, on queue 1 (sums); each
// waits for the call's count on both queues and one of them quiets while the others may still
// post. Six calls, sources and landing areas in halves by the call's parity (as the kernels'
// workspaces: a half is rewritten two calls later, after the call between quieted every post
// made before it); every count exact and every byte the call's.
TEST(SdmaOnHost, ConcurrentPostersOnTwoQueuesCallAfterCall) {
  constexpr int kPosters = 4, kCalls = 6;
  constexpr uint64_t kHalf = 2 * kPosters * kChunk;  // one call's sources (or landings): 2 queues x posters
  static_assert(2 * kHalf <= kInbox, "the sources' halves below the landing areas");
  EXPECT_EQ(RunGdaRanks(
                2, CCO_GDA_CONNECTION_NONE,
                [](Rank& k) {
                  const int peer = 1 - k.rank;
                  for (int call = 1; call <= kCalls; ++call) {
                    const uint64_t half = kInbox + (call % 2) * kHalf, source = (call % 2) * kHalf;
                    for (int t = 0; t < 2 * kPosters; ++t)
                      Fill(k.mem + source + t * kChunk, Owner(k.rank, call * 16 + t), kChunk / 4);
                    CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);  // sources in place, last call read
                    std::atomic<int> failed{0};
                    std::vector<std::thread> programs;
                    for (int t = 0; t < kPosters; ++t) {
                      programs.emplace_back([&, t] {
                        ccoSdma sdma(k.dc, 10'000'000'000ull);
                        for (int q = 0; q < 2; ++q) {
                          const uint64_t slot = q * kPosters + t;
                          if ((sdma.put<ccoCoopThread, true>(peer, k.win, half + slot * kChunk, k.win,
                                                             source + slot * kChunk, kChunk, q)) != 0 ||
                              !Reaches(sdma, peer, q, static_cast<uint64_t>(call) * kPosters))
                            ++failed;
                        }
                        if (t == 0 && sdma.quiet(peer) != 0) ++failed;  // while the others may still post
                      });
                    }
                    for (auto& p : programs) p.join();
                    CHECK_OR_FAIL(failed == 0);
                    for (int t = 0; t < 2 * kPosters; ++t)
                      CHECK_OR_FAIL(Holds(k.mem + half + t * kChunk, Owner(peer, call * 16 + t), kChunk / 4));
                  }
                  return ccoBarrierAll(k.comm) == ccoSuccess;
                },
                1, 2),
            0);
}

// Put and get on resolved pointers (the LSA pointers of the window): the same bytes and
// counts as the window forms. A pointer in the wrong rank's memory, or none in the flat range
// at all, is refused on the device; one outside every live window, or spanning two windows,
// fails its queue's ring (quiet ends ABORTED; other queues go on).
TEST(SdmaOnHost, PutAndGetOnResolvedPointers) {
  EXPECT_EQ(
      RunGdaRanks(
          2, CCO_GDA_CONNECTION_NONE,
          [](Rank& k) {
            ccoSdma sdma(k.dc, 10'000'000'000ull);
            const int peer = 1 - k.rank;
            auto at = [&](ccoWindow_t w, int rank, uint64_t offset) {
              return reinterpret_cast<char*>(
                  cco::lsa_peer_address(reinterpret_cast<const ccoWindowDevice*>(w), rank, offset));
            };
            // Two more windows, adjacent in the flat range: [0, 4096) and [4096, 8192) of one allocation.
            void* pair = nullptr;
            ccoWindow_t first = 0, second = 0;
            CHECK_OR_FAIL(ccoMemAlloc(k.comm, 8192, &pair) == ccoSuccess);
            CHECK_OR_FAIL(ccoWindowRegister(k.comm, pair, 4096, &first) == ccoSuccess);
            CHECK_OR_FAIL(ccoWindowRegister(k.comm, static_cast<char*>(pair) + 4096, 4096, &second) == ccoSuccess);
            CHECK_OR_FAIL(at(first, peer, 4096) == at(second, peer, 0));

            Fill(k.mem, Owner(k.rank, 3), kChunk / 4);
            memset(k.mem + kInbox, 0, 2 * kChunk);
            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
            CHECK_OR_FAIL(
                (sdma.put<ccoCoopWarp, true>(peer, at(k.win, peer, kInbox), at(k.win, k.rank, 0), kChunk, 0)) == 0);
            CHECK_OR_FAIL((sdma.get<ccoCoopThread, true>(peer, at(k.win, k.rank, kInbox + kChunk), at(k.win, peer, 0),
                                                         kChunk, 0)) == 0);
            CHECK_OR_FAIL(sdma.wait_signal(peer, 0, 1) == 0 && sdma.wait_local(peer, 0, 1) == 0);
            CHECK_OR_FAIL(Holds(k.mem + kInbox, Owner(peer, 3), kChunk / 4));           // peer's put
            CHECK_OR_FAIL(Holds(k.mem + kInbox + kChunk, Owner(peer, 3), kChunk / 4));  // this rank's get
            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);

            // In the wrong rank's memory (a put into this rank's own copy; a get from it), or no
            // flat-range pointer at all: refused before anything is posted.
            const int bad = CCO_DEVICE_STATUS_INVALID_ARGUMENT;
            CHECK_OR_FAIL(
                (sdma.put<ccoCoopThread, true>(peer, at(k.win, k.rank, kInbox), at(k.win, k.rank, 0), 8, 1)) == bad);
            CHECK_OR_FAIL((sdma.get<ccoCoopThread, true>(peer, at(k.win, k.rank, 0), at(k.win, k.rank, 64), 8, 1)) ==
                          bad);
            CHECK_OR_FAIL((sdma.get<ccoCoopThread, true>(peer, reinterpret_cast<void*>(8), at(k.win, peer, 0), 8, 0)) ==
                          bad);
            CHECK_OR_FAIL(sdma.quiet_queue(peer, 1) == 0);  // nothing was posted there
            // Past the window's end, and across the boundary of two adjacent windows: the proxy refuses.
            CHECK_OR_FAIL(
                (sdma.put<ccoCoopThread, true>(peer, at(k.win, peer, kWindow - 8), at(k.win, k.rank, 0), 64, 1)) == 0);
            CHECK_OR_FAIL(sdma.quiet_queue(peer, 1) == CCO_DEVICE_STATUS_ABORTED);
            CHECK_OR_FAIL((sdma.put<ccoCoopThread, true>(peer, at(first, peer, 4088), at(k.win, k.rank, 0), 16, 2)) ==
                          0);
            CHECK_OR_FAIL(sdma.quiet_queue(peer, 2) == CCO_DEVICE_STATUS_ABORTED);
            // Queue 0 is unharmed, and nothing of the refused puts was counted.
            CHECK_OR_FAIL((sdma.put<ccoCoopThread, true>(peer, at(second, peer, 0), at(k.win, k.rank, 0), 8, 0)) == 0);
            CHECK_OR_FAIL(sdma.quiet_queue(peer, 0) == 0 && sdma.wait_signal(peer, 0, 1) == 0);
            CHECK_OR_FAIL(sdma.read_signal(peer, 1) == 0 && sdma.read_signal(peer, 2) == 0);
            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
            CHECK_OR_FAIL(ccoWindowDeregister(k.comm, second) == ccoSuccess &&
                          ccoWindowDeregister(k.comm, first) == ccoSuccess);
            CHECK_OR_FAIL(ccoMemFree(k.comm, pair) == ccoSuccess);
            return ccoBarrierAll(k.comm) == ccoSuccess;
          },
          1, 3),
      0);
}

// Out-of-range peers, queues and flags, and windows that are not live windows of this
// communicator holding the bytes, are refused on the device and post nothing; a pointer post
// into the peer's slice but outside its windows (the device cannot tell) fails the queue's
// ring, so quiet ends ABORTED instead of hanging; other queues go on.
TEST(SdmaOnHost, BadArgumentsAndBadDescriptors) {
  EXPECT_EQ(
      RunGdaRanks(
          2, CCO_GDA_CONNECTION_NONE,
          [](Rank& k) {
            ccoSdma sdma(k.dc, 10'000'000'000ull);
            const int peer = 1 - k.rank;
            CHECK_OR_FAIL(sdma.put(2, k.win, 0, k.win, 0, 8, 0) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            CHECK_OR_FAIL(sdma.put(peer, k.win, 0, k.win, 0, 8, 2) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            CHECK_OR_FAIL(sdma.get(peer, k.win, 0, k.win, 0, 8, -1) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            CHECK_OR_FAIL(sdma.put(peer, k.win, 0, k.win, 0, 8, 0, 4) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            CHECK_OR_FAIL(sdma.wait_signal(peer, 5, 1) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            CHECK_OR_FAIL(sdma.put(peer, 0, 0, k.win, 0, 8, 0) ==
                          CCO_DEVICE_STATUS_INVALID_ARGUMENT);  // null handles were read
            CHECK_OR_FAIL(sdma.get(peer, k.win, 0, 0, 0, 8, 0) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            CHECK_OR_FAIL(sdma.put(peer, k.win, kWindow - 8, k.win, 0, 64, 0) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            CHECK_OR_FAIL(sdma.get(peer, k.win, 0, k.win, ~uint64_t{0} - 3, 8, 0) ==
                          CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            ccoWindowDevice other;  // another communicator's window: the same id, other addresses
            memcpy(&other, reinterpret_cast<const void*>(k.win), sizeof(other));
            other.flatBase += 1ull << 40;
            CHECK_OR_FAIL(sdma.put(peer, reinterpret_cast<ccoWindow_t>(&other), 0, k.win, 0, 8, 0) ==
                          CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            ccoWindowDevice stale{};  // what a deregistered window's descriptor holds
            CHECK_OR_FAIL(sdma.get(peer, k.win, 0, reinterpret_cast<ccoWindow_t>(&stale), 0, 8, 0) ==
                          CCO_DEVICE_STATUS_INVALID_ARGUMENT);
            CHECK_OR_FAIL(sdma.reset_signal(peer, 5) == CCO_DEVICE_STATUS_INVALID_ARGUMENT &&
                          sdma.reset_local(-1, 0) != 0);
            CHECK_OR_FAIL(sdma.quiet(peer) == 0);  // nothing was posted
            // The end of the peer's slice: in its slice, in none of its windows.
            void* nowhere = reinterpret_cast<void*>(k.dc.lsaFlatBase + (peer + 1) * k.dc.lsaStride - 8);
            const void* mine = reinterpret_cast<const void*>(
                cco::lsa_local_address(reinterpret_cast<const ccoWindowDevice*>(k.win), 0));
            CHECK_OR_FAIL(sdma.put(peer, nowhere, mine, 8, 0) == 0);
            CHECK_OR_FAIL(sdma.quiet(peer) == CCO_DEVICE_STATUS_ABORTED);
            CHECK_OR_FAIL(sdma.put(peer, k.win, 0, k.win, 64, 64, 1) == 0 && sdma.quiet_queue(peer, 1) == 0);
            return ccoBarrierAll(k.comm) == ccoSuccess;
          },
          1, 2),
      0);
}

// Without CCO_ENABLE_SDMA a device communicator has no queues (every call is refused), and
// asking for queues is an error that says how to enable them.
TEST(SdmaOnHost, OffUnlessEnabled) {
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_NONE,
                        [](Rank& k) {
                          ccoSdma sdma(k.dc);
                          CHECK_OR_FAIL(sdma.queue_count() == 0 && k.dc.sdmaRingSlots == 0);
                          CHECK_OR_FAIL(sdma.put(0, k.win, 0, k.win, 0, 8, 0) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                          ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
                          reqs.sdmaQueueCount = 2;
                          ccoDevComm dc;
                          CHECK_OR_FAIL(ccoDevCommCreate(k.comm, &reqs, &dc) == ccoInvalidUsage);
                          CHECK_OR_FAIL(strstr(ccoGetLastError(), "CCO_ENABLE_SDMA") != nullptr);
                          return true;
                        }),
            0);
}

}  // namespace
