// SPDX-License-Identifier: MIT
// The GDA device API compiled for the host and run by ranks that are threads of one process,
// over real communicators on the cpu platform: the device posts into the rings, each
// communicator's proxy moves the bytes (the local backend) and applies signals on the target
// after the data. Exact data and signal values for put, put_value, get, signal, counters and
// flushes in every doorbell mode, the ordering rule, the GDA barrier, virtual nodes with
// CROSSNODE connections, bad descriptors and abort.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "device/cco_device.hpp"
#include "device/gda.hpp"
#include "tests/device/gda_ranks.h"

namespace {

using namespace cco::gda_test;

// Every test runs three times: with every operation through the proxy (CCO_GDA_DIRECT_MAX_BYTES=0),
// the same with the LSA senders' signal words in host memory (CCO_GDA_HOST_SIGNALS=1: the
// proxy's CPU stores), and with the default, where operations to peers of the LSA team may take
// the direct path (device/gda_direct.hpp). The semantics and the exact results are the same.
class GdaOnHost : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (strcmp(GetParam(), "direct") == 0) unsetenv("CCO_GDA_DIRECT_MAX_BYTES");
    else setenv("CCO_GDA_DIRECT_MAX_BYTES", "0", 1);
    if (strcmp(GetParam(), "hostwords") == 0) setenv("CCO_GDA_HOST_SIGNALS", "1", 1);
    else unsetenv("CCO_GDA_HOST_SIGNALS");
  }
  void TearDown() override {
    unsetenv("CCO_GDA_DIRECT_MAX_BYTES");
    unsetenv("CCO_GDA_HOST_SIGNALS");
  }
  bool direct() const { return strcmp(GetParam(), "direct") == 0; }
};

// put + signal to the right neighbour, wait for the left one's: data, then signal, exactly.
TEST_P(GdaOnHost, PutWithSignalRing) {
  for (int n : {1, 2, 4}) {
    EXPECT_EQ(RunGdaRanks(n, CCO_GDA_CONNECTION_FULL,
                          [](Rank& k) {
                            ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
                            Fill(k.mem, k.rank, 1024);
                            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                            const int right = (k.rank + 1) % k.n, left = (k.rank + k.n - 1) % k.n;
                            CHECK_OR_FAIL(gda.put(right, k.win, 4096, k.win, 0, 4096, CCO_SIGNAL_INC, 3) ==
                                          CCO_DEVICE_STATUS_OK);
                            CHECK_OR_FAIL(gda.wait_signal(3, 1) == CCO_DEVICE_STATUS_OK);
                            CHECK_OR_FAIL(Holds(k.mem + 4096, left, 1024));
                            CHECK_OR_FAIL(gda.read_signal(3) == 0);  // consumed
                            CHECK_OR_FAIL(gda.flush() == CCO_DEVICE_STATUS_OK);
                            return ccoBarrierAll(k.comm) == ccoSuccess;
                          }),
              0)
        << n << " ranks";
  }
}

// Every other data operation, counters, ADD signals and resets.
TEST_P(GdaOnHost, PutValueGetSignalAndCounters) {
  EXPECT_EQ(
      RunGdaRanks(3, CCO_GDA_CONNECTION_FULL,
                  [](Rank& k) {
                    ccoGda<> gda(k.dc, 1, 10'000'000'000ull);
                    Fill(k.mem, k.rank, 1024);
                    CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                    const int right = (k.rank + 1) % k.n, left = (k.rank + k.n - 1) % k.n;
                    // put_value of 8 and of 2 bytes, each adding to signal 5 of the right neighbour.
                    CHECK_OR_FAIL(
                        gda.put_value(right, k.win, 8192, 0x1122334455667788ull + k.rank, CCO_SIGNAL_ADD, 5, 10) == 0);
                    CHECK_OR_FAIL(gda.put_value(right, k.win, 8200, 0xabcd, CCO_SIGNAL_ADD, 5, 7, 2) == 0);
                    CHECK_OR_FAIL(gda.wait_signal(5, 17) == 0);
                    CHECK_OR_FAIL(*reinterpret_cast<volatile uint64_t*>(k.mem + 8192) == 0x1122334455667788ull + left);
                    CHECK_OR_FAIL(*reinterpret_cast<volatile uint16_t*>(k.mem + 8200) == 0xabcd);
                    // get the right neighbour's first page into the third; counter 2 says when it is done.
                    CHECK_OR_FAIL(gda.get(right, k.win, 0, k.win, 12288, 4096) == 0);
                    CHECK_OR_FAIL(gda.counter(2) == 0);
                    CHECK_OR_FAIL(gda.wait_counter(2, 1) == 0);
                    CHECK_OR_FAIL(Holds(k.mem + 12288, right, 1024));
                    CHECK_OR_FAIL(gda.read_counter(2) == 0);
                    CHECK_OR_FAIL(gda.counter(2) == 0 && gda.counter(2) == 0 && gda.wait_counter(2, 2) == 0);
                    CHECK_OR_FAIL(gda.counter(99) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                    // signal alone: INC twice, ADD 40; read, then reset.
                    CHECK_OR_FAIL(gda.signal(right, 6) == 0 && gda.signal(right, 6) == 0 &&
                                  gda.signal(right, 6, CCO_SIGNAL_ADD, 40) == 0);
                    CHECK_OR_FAIL(gda.wait_signal(6, 42) == 0);
                    CHECK_OR_FAIL(gda.flush() == 0);
                    CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                    CHECK_OR_FAIL(gda.signal(right, 7, CCO_SIGNAL_ADD, 9) == 0 && gda.flush() == 0);
                    CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                    CHECK_OR_FAIL(gda.read_signal(7) == 9);
                    gda.reset_signal(7);
                    CHECK_OR_FAIL(gda.read_signal(7) == 0);
                    // Bad arguments touch nothing.
                    CHECK_OR_FAIL(gda.put(k.n, k.win, 0, k.win, 0, 8) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                    CHECK_OR_FAIL(gda.wait_signal(99, 1) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                    CHECK_OR_FAIL(gda.put_value(right, k.win, 0, 1, CCO_SIGNAL_NONE, 0, 0, 9) ==
                                  CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                    ccoGda<> noContext(k.dc, 7);
                    CHECK_OR_FAIL(noContext.flush() == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                    return ccoBarrierAll(k.comm) == ccoSuccess;
                  }),
      0);
}

// Every rank adds to one signal of every rank, from both contexts: each sender's running sum
// is its own word, and the signal is their sum (abi/gda.h), exact after many rounds, with
// waits consuming and a reset in between.
TEST_P(GdaOnHost, ManySendersOneSignal) {
  for (int n : {3, 5}) {
    EXPECT_EQ(RunGdaRanks(n, CCO_GDA_CONNECTION_FULL,
                          [](Rank& k) {
                            ccoGda<> c0(k.dc, 0, 10'000'000'000ull);
                            ccoGda<ccoGdaProxy, ccoGdaDeferred> c1(k.dc, 1, 10'000'000'000ull);
                            uint64_t perRound = 0;  // what every rank adds to each peer per round
                            for (int s = 0; s < k.n; ++s) perRound += 1 + 100 * (s + 1);
                            for (int round = 0; round < 20; ++round) {
                              for (int peer = 0; peer < k.n; ++peer) {
                                CHECK_OR_FAIL(c0.signal(peer, 4) == 0);
                                CHECK_OR_FAIL(c1.signal(peer, 4, CCO_SIGNAL_ADD, 100 * (k.rank + 1)) == 0);
                              }
                              CHECK_OR_FAIL(c1.flush() == 0);
                              CHECK_OR_FAIL(c0.wait_signal(4, perRound) == 0);
                            }
                            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                            CHECK_OR_FAIL(c0.read_signal(4) == 0);  // every round consumed exactly what it waited for
                            CHECK_OR_FAIL(c0.flush() == 0 && c1.flush() == 0);
                            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                            // Once more without waits: the sum is visible, then reset to zero.
                            for (int peer = 0; peer < k.n; ++peer)
                              CHECK_OR_FAIL(c0.signal(peer, 4, CCO_SIGNAL_ADD, 1ull << 40) == 0);
                            CHECK_OR_FAIL(c0.flush() == 0);
                            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                            CHECK_OR_FAIL(c0.read_signal(4) == static_cast<uint64_t>(k.n) << 40);
                            c0.reset_signal(4);
                            CHECK_OR_FAIL(c0.read_signal(4) == 0);
                            return ccoBarrierAll(k.comm) == ccoSuccess;
                          }),
              0)
        << n << " ranks";
  }
}

// A signal is never visible before the payloads of earlier puts on that context and peer:
// many puts of every mode, then one signal; its arrival means all landed.
template <ccoGdaDoorbellMode Mode> bool ManyPutsThenOneSignal(Rank& k, uint64_t round) {
  ccoGda<ccoGdaProxy, Mode> gda(k.dc, 0, 10'000'000'000ull);
  ccoGda<> ringer(k.dc, 0, 10'000'000'000ull);
  const int right = (k.rank + 1) % k.n, left = (k.rank + k.n - 1) % k.n;
  auto* mine = reinterpret_cast<volatile uint64_t*>(k.mem);
  for (int i = 0; i < 512; ++i) mine[i] = round * 1000000 + k.rank * 1000 + i;
  if (ccoBarrierAll(k.comm) != ccoSuccess) return false;
  for (int i = 0; i < 512; ++i)
    if (gda.put(right, k.win, 8192 + 8 * i, k.win, 8 * i, 8) != 0) return false;
  if (Mode == CCO_GDA_DOORBELL_CALLER_ORDERED) {
    if (gda.put(right, k.win, 16384, k.win, 0, 8, CCO_SIGNAL_INC, 0) != 0 || gda.flush() != 0) return false;
  } else if (ringer.signal(right, 0) != 0) {
    return false;
  }
  if (ringer.wait_signal(0, 1) != 0) return false;
  const auto* got = reinterpret_cast<const volatile uint64_t*>(k.mem + 8192);
  for (int i = 0; i < 512; ++i)
    if (got[i] != round * 1000000 + left * 1000 + static_cast<uint64_t>(i)) return false;
  return ringer.flush() == 0 && gda.flush() == 0 && ccoBarrierAll(k.comm) == ccoSuccess;
}

TEST_P(GdaOnHost, SignalsComeAfterEarlierPutsInEveryMode) {
  EXPECT_EQ(RunGdaRanks(4, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          for (uint64_t round = 1; round <= 6; ++round) {
                            const bool ok = round % 3 == 0   ? ManyPutsThenOneSignal<ccoGdaImmediate>(k, round)
                                            : round % 3 == 1 ? ManyPutsThenOneSignal<ccoGdaDeferred>(k, round)
                                                             : ManyPutsThenOneSignal<ccoGdaCallerOrdered>(k, round);
                            CHECK_OR_FAIL(ok);
                          }
                          return true;
                        }),
            0);
}

TEST_P(GdaOnHost, AggregatedThreadModeAndFlushAsync) {
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          ccoGda<ccoGdaProxy, ccoGdaDeferred> gda(k.dc, 0, 10'000'000'000ull);
                          Fill(k.mem, k.rank, 1024);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          const int peer = 1 - k.rank;
                          for (int i = 0; i < 16; ++i)
                            CHECK_OR_FAIL((gda.put<ccoCoopThread, CCO_THREAD_AGGREGATE>(peer, k.win, 4096 + 256 * i,
                                                                                        k.win, 256 * i, 256)) == 0);
                          CHECK_OR_FAIL(gda.flush_async() == 0);
                          CHECK_OR_FAIL(gda.flush_wait() == 0);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);  // the peer's puts landed too
                          CHECK_OR_FAIL(Holds(k.mem + 4096, peer, 1024));
                          return true;
                        }),
            0);
}

// The GDA barrier: in round r every rank writes r into its slot in every peer's window
// (plain puts), then syncs; afterwards its own slots must all hold r.
TEST_P(GdaOnHost, BarrierOrdersRounds) {
  EXPECT_EQ(RunGdaRanks(4, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
                          ccoGdaBarrierSession<ccoCoopThread> barrier(ccoCoopThread(), gda, 1);
                          auto* slots = reinterpret_cast<volatile uint64_t*>(k.mem + 32768);
                          for (uint64_t round = 1; round <= 200; ++round) {
                            *reinterpret_cast<volatile uint64_t*>(k.mem) = round;
                            for (int p = 0; p < k.n; ++p)
                              CHECK_OR_FAIL(gda.put(p, k.win, 32768 + 8 * k.rank, k.win, 0, 8) == 0);
                            CHECK_OR_FAIL(gda.flush() == 0);
                            CHECK_OR_FAIL(barrier.sync() == 0);
                            for (int p = 0; p < k.n; ++p) CHECK_OR_FAIL(slots[p] == round);
                            CHECK_OR_FAIL(barrier.sync() == 0);  // nobody writes round+1 before everyone checked
                          }
                          ccoGdaBarrierSession<ccoCoopThread> bad(ccoCoopThread(), gda, 2);
                          CHECK_OR_FAIL(bad.sync() == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                          return true;
                        }),
            0);
}

// Two virtual nodes of two ranks: CROSSNODE connects the ranks of the other node (and self).
TEST_P(GdaOnHost, CrossNodeOnVirtualNodes) {
  EXPECT_EQ(RunGdaRanks(
                4, CCO_GDA_CONNECTION_CROSSNODE,
                [](Rank& k) {
                  ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
                  CHECK_OR_FAIL(k.dc.nNodes == 2 && gda.team_size() == 3);
                  Fill(k.mem, k.rank, 512);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  const int across = (k.rank + 2) % 4, neighbour = k.rank ^ 1;
                  CHECK_OR_FAIL(gda.put(neighbour, k.win, 0, k.win, 0, 8) ==
                                CCO_DEVICE_STATUS_INVALID_ARGUMENT);  // same node
                  CHECK_OR_FAIL(gda.put(across, k.win, 4096, k.win, 0, 2048, CCO_SIGNAL_INC, 1) == 0);
                  CHECK_OR_FAIL(gda.wait_signal(1, 1) == 0);
                  CHECK_OR_FAIL(Holds(k.mem + 4096, across, 512));
                  CHECK_OR_FAIL(gda.flush() == 0);
                  return ccoBarrierAll(k.comm) == ccoSuccess;
                },
                /*nodesPerHost=*/2),
            0);
}

// A descriptor the proxy cannot honour fails its ring: the flush ends instead of hanging.
// A wait for a signal that never comes ends on ccoCommAbort.
// Which path an operation took, seen from the ring: the direct path leaves the ring's
// head where it was; the proxy path takes a ticket. A put above the bound and a counter
// always take the ring.
uint64_t RingHead(const ccoDevComm& dc, int context, int peerIndex) {
  const uint32_t ring = cco_gda_ring_index(context, peerIndex, dc.gdaPeerCount);
  // An atomic load: other threads of the rank may be posting (TSan).
  return __atomic_load_n(
      &reinterpret_cast<const ccoGdaRingDevice*>(cco_gda_ring_device_address(dc.gdaRingDevice, ring))->head,
      __ATOMIC_RELAXED);
}

// Posts `d` into context `context`'s ring to GDA-team index `peerIndex` as it is, with no
// check: what a scribbled descriptor does to the proxy.
int32_t PostRaw(const ccoDevComm& dc, int context, int peerIndex, const ccoGdaDesc& d) {
  const cco::ring::View r = cco::ring::At(dc.gdaRingSlots, dc.gdaRingHost, dc.gdaRingDevice, dc.gdaRingDepth,
                                          cco_gda_ring_index(context, peerIndex, dc.gdaPeerCount));
  uint64_t ticket;
  return cco::ring::Post<ccoGdaImmediate>(r, d, cco::WaitLimits{nullptr, 10'000'000'000ull}, &ticket);
}
// A put of 64 bytes to 8 bytes before the window's end.
ccoGdaDesc PastTheWindow(ccoWindow_t win) {
  ccoGdaDesc d = {};
  d.op = CCO_GDA_OP_PUT;
  d.dstWindow = d.srcWindow = reinterpret_cast<const ccoWindowDevice*>(win)->id;
  d.dstOffset = kWindow - 8;
  d.bytes = 64;
  return d;
}

TEST_P(GdaOnHost, BadDescriptorsAndAbortEndWaits) {
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          ccoGda<> gda(k.dc, 1, 10'000'000'000ull);
                          CHECK_OR_FAIL(PostRaw(k.dc, 1, 1 - k.rank, PastTheWindow(k.win)) ==
                                        0);  // what the proxy must refuse itself
                          CHECK_OR_FAIL(gda.flush() == CCO_DEVICE_STATUS_ABORTED);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          ccoGda<> other(k.dc, 0, 10'000'000'000ull);  // context 0 is unaffected
                          CHECK_OR_FAIL(other.put(1 - k.rank, k.win, 0, k.win, 0, 64) == 0 && other.flush() == 0);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          k.aborted = true;
                          if (k.rank == 0) {
                            std::thread aborter([&] {
                              std::this_thread::sleep_for(std::chrono::milliseconds(50));
                              ccoCommAbort(k.comm);
                            });
                            const int32_t s = other.wait_signal(0, 1);
                            aborter.join();
                            CHECK_OR_FAIL(s == CCO_DEVICE_STATUS_ABORTED);
                          } else {
                            ccoCommAbort(k.comm);
                          }
                          return true;
                        }),
            0);
}

TEST_P(GdaOnHost, TheDirectPathTakesNoTicket) {
  const bool direct = this->direct();
  EXPECT_EQ(
      RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                  [direct](Rank& k) {
                    ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
                    CHECK_OR_FAIL(k.dc.gdaDirectMaxBytes == (direct ? 4096u : 0u));
                    Fill(k.mem, k.rank, 4096);
                    CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                    const int peer = 1 - k.rank;
                    const uint64_t before = RingHead(k.dc, 0, peer);
                    CHECK_OR_FAIL(gda.signal(peer, 2) == 0);
                    CHECK_OR_FAIL(gda.put_value(peer, k.win, 8192, 77 + k.rank, CCO_SIGNAL_ADD, 2, 5) == 0);
                    CHECK_OR_FAIL(gda.put(peer, k.win, 12288, k.win, 0, 4096, CCO_SIGNAL_INC, 2) == 0);  // at the bound
                    CHECK_OR_FAIL(gda.get(peer, k.win, 0, k.win, 20480, 4096) == 0);  // the peer's first 4 KiB
                    CHECK_OR_FAIL(gda.flush() == 0);
                    CHECK_OR_FAIL(RingHead(k.dc, 0, peer) - before == (direct ? 0u : 4u));
                    CHECK_OR_FAIL(Holds(k.mem + 20480, peer, 1024));
                    CHECK_OR_FAIL(gda.put(peer, k.win, 16384 + 12288, k.win, 0, 4100, CCO_SIGNAL_INC, 2) ==
                                  0);  // above: the ring
                    CHECK_OR_FAIL(RingHead(k.dc, 0, peer) - before == (direct ? 1u : 5u));
                    CHECK_OR_FAIL(gda.wait_signal(2, 8) == 0);
                    CHECK_OR_FAIL(*reinterpret_cast<volatile uint64_t*>(k.mem + 8192) == 77u + peer);
                    CHECK_OR_FAIL(Holds(k.mem + 12288, peer, 1024) && Holds(k.mem + 16384 + 12288, peer, 1025));
                    CHECK_OR_FAIL(gda.flush() == 0);
                    return ccoBarrierAll(k.comm) == ccoSuccess;
                  }),
      0);
}

// Where each path's signal lands. Ranks as threads share their host words through the
// process's registry: asked for (hostwords), a signal alone through the proxy, whose stream
// has nothing running (the cpu platform's never has), lands in the target's host word of its
// sender (abi/gda.h), not in its proxy word in device memory; without them, there; with the
// direct path on, a signal the device sends itself lands in its direct word.
TEST_P(GdaOnHost, SignalsOfLsaPeersLandInTheHostWords) {
  const bool direct = this->direct(), hostWords = strcmp(GetParam(), "hostwords") == 0;
  EXPECT_EQ(RunGdaRanks(3, CCO_GDA_CONNECTION_FULL,
                        [direct, hostWords](Rank& k) {
                          ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
                          CHECK_OR_FAIL((k.dc.gdaHostSignals != 0) == hostWords);
                          const int n = k.dc.worldSize;
                          for (int p = 0; p < n; ++p)
                            if (p != k.rank) CHECK_OR_FAIL(gda.signal(p, 3, CCO_SIGNAL_ADD, 10 + k.rank) == 0);
                          uint64_t want = 0;
                          for (int p = 0; p < n; ++p) want += p == k.rank ? 0 : 10 + p;
                          CHECK_OR_FAIL(gda.wait_signal(3, want) == 0);
                          const auto* host = reinterpret_cast<const volatile uint64_t*>(k.dc.gdaHostSignals);
                          const auto* words = reinterpret_cast<const volatile uint64_t*>(k.dc.gdaSignals);
                          const uint32_t ids = k.dc.gdaSignalCount + k.dc.gdaBarrierCount;
                          for (int p = 0; p < n; ++p) {
                            if (p == k.rank) continue;
                            const uint64_t mine = direct      ? words[cco_gda_direct_signal_word(ids, n, 3, p, n)]
                                                  : hostWords ? host[cco_gda_host_signal_word(3, p, n)]
                                                              : words[cco_gda_signal_word(3, p, n)];
                            CHECK_OR_FAIL(mine == 10u + p);
                            if (direct || hostWords) CHECK_OR_FAIL(words[cco_gda_signal_word(3, p, n)] == 0);
                          }
                          CHECK_OR_FAIL(gda.flush() == 0);
                          return ccoBarrierAll(k.comm) == ccoSuccess;
                        }),
            0);
}

// A put or get whose copy a warp or block shares goes direct up to gdaDirectGroupMaxBytes
// (65536 by default), one thread's copy up to gdaDirectMaxBytes (4096). On the cpu platform a
// warp and a block are groups of one host thread, but they take the shared path all the same.
TEST_P(GdaOnHost, GroupCopiesTakeTheGroupBound) {
  const bool direct = this->direct();
  EXPECT_EQ(
      RunGdaRanks(
          2, CCO_GDA_CONNECTION_FULL,
          [direct](Rank& k) {
            ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
            CHECK_OR_FAIL(k.dc.gdaDirectGroupMaxBytes == 65536u);  // what the direct path would use
            Fill(k.mem, k.rank, 4096);                             // 16 KiB
            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
            const int peer = 1 - k.rank;
            const uint64_t before = RingHead(k.dc, 0, peer);
            CHECK_OR_FAIL((gda.put<ccoCoopWarp>(peer, k.win, 16384, k.win, 0, 16384, CCO_SIGNAL_INC, 2)) == 0);
            CHECK_OR_FAIL((gda.put<ccoCoopBlock>(peer, k.win, 32768, k.win, 0, 16384, CCO_SIGNAL_INC, 2)) == 0);
            CHECK_OR_FAIL(gda.flush() == 0);
            CHECK_OR_FAIL(RingHead(k.dc, 0, peer) - before == (direct ? 0u : 2u));
            CHECK_OR_FAIL(gda.put(peer, k.win, 49152, k.win, 0, 8192, CCO_SIGNAL_INC, 2) == 0);  // one thread: the ring
            CHECK_OR_FAIL(RingHead(k.dc, 0, peer) - before == (direct ? 1u : 3u));
            CHECK_OR_FAIL(gda.wait_signal(2, 3) == 0);
            CHECK_OR_FAIL(Holds(k.mem + 16384, peer, 4096) && Holds(k.mem + 32768, peer, 4096) &&
                          Holds(k.mem + 49152, peer, 2048));
            CHECK_OR_FAIL(gda.flush() == 0 && ccoBarrierAll(k.comm) == ccoSuccess);  // the peer read what it got
            const uint64_t got = RingHead(k.dc, 0, peer);
            CHECK_OR_FAIL((gda.get<ccoCoopWarp>(peer, k.win, 0, k.win, 57344, 8192)) == 0);  // the peer's first 8 KiB
            CHECK_OR_FAIL(gda.flush() == 0);
            CHECK_OR_FAIL(RingHead(k.dc, 0, peer) - got == (direct ? 0u : 1u));
            CHECK_OR_FAIL(Holds(k.mem + 57344, peer, 2048));
            return ccoBarrierAll(k.comm) == ccoSuccess;
          }),
      0);
}

// The paths interleave on one ring: puts above the bound (the ring) and small puts with a
// signal right behind them (direct only once the ring is idle), in both orders, with sizes
// that vary per round so that the proxy is sometimes done and sometimes not. A signal,
// whichever path carried it, is never visible before any earlier payload to that peer.
TEST_P(GdaOnHost, MixedPathsKeepTheOrderingRule) {
  EXPECT_EQ(
      RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                  [](Rank& k) {
                    ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
                    const int peer = 1 - k.rank;
                    auto* mine = reinterpret_cast<volatile uint32_t*>(k.mem);
                    for (uint32_t round = 1; round <= 60; ++round) {
                      const uint64_t big = 4096 + 8 + 4096 * (round % 5);  // above the bound
                      for (uint64_t i = 0; i < big / 4; ++i)
                        mine[i] = round * 100000u + k.rank * 50000u + static_cast<uint32_t>(i);
                      CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                      if (round % 2) {  // big (ring) then small + signal
                        CHECK_OR_FAIL(gda.put(peer, k.win, 32768, k.win, 0, big) == 0);
                        CHECK_OR_FAIL(gda.put(peer, k.win, 32768 + big, k.win, 0, 64, CCO_SIGNAL_INC, 3) == 0);
                      } else {  // small (direct when idle), then big + signal through the ring
                        CHECK_OR_FAIL(gda.put(peer, k.win, 32768 + big, k.win, 0, 64) == 0);
                        CHECK_OR_FAIL(gda.put(peer, k.win, 32768, k.win, 0, big, CCO_SIGNAL_INC, 3) == 0);
                      }
                      CHECK_OR_FAIL(gda.wait_signal(3, 1) == 0);
                      const auto* got = reinterpret_cast<const volatile uint32_t*>(k.mem + 32768);
                      for (uint64_t i = 0; i < big / 4; ++i)
                        CHECK_OR_FAIL(got[i] == round * 100000u + peer * 50000u + static_cast<uint32_t>(i));
                      for (uint64_t i = 0; i < 16; ++i)
                        CHECK_OR_FAIL(got[big / 4 + i] == round * 100000u + peer * 50000u + static_cast<uint32_t>(i));
                      CHECK_OR_FAIL(gda.flush() == 0 && ccoBarrierAll(k.comm) == ccoSuccess);
                    }
                    return true;
                  }),
      0);
}

// A Deferred handle's signal rings: the put before it and the signal reach the peer with no
// flush (through the proxy they waited for a ring that never came, and both ranks' waits
// timed out).
TEST_P(GdaOnHost, ADeferredSignalReleasesTheEarlierPosts) {
  EXPECT_EQ(
      RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                  [](Rank& k) {
                    ccoGda<ccoGdaProxy, ccoGdaDeferred> gda(k.dc, 0, 5'000'000'000ull);
                    const int peer = 1 - k.rank;
                    Fill(k.mem, k.rank, 256);
                    CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                    CHECK_OR_FAIL(gda.put(peer, k.win, 2048, k.win, 0, 1024) == CCO_DEVICE_STATUS_OK);  // 256 words
                    CHECK_OR_FAIL(gda.signal(peer, 2) == CCO_DEVICE_STATUS_OK);
                    CHECK_OR_FAIL(gda.wait_signal(2, 1) == CCO_DEVICE_STATUS_OK);
                    CHECK_OR_FAIL(Holds(k.mem + 2048, peer, 256));
                    CHECK_OR_FAIL(gda.flush() == CCO_DEVICE_STATUS_OK);
                    return ccoBarrierAll(k.comm) == ccoSuccess;
                  }),
      0);
}

// Threads of one rank (blocks, on a GPU) flush one context at once, each with flush_async then
// flush_wait: when its flush_wait returns, every ticket it took before its flush_async is
// consumed (the shared target only rises: were it a plain store, a thread that read the head
// earlier could store a lower target after a later one, and that one's wait would return early).
TEST_P(GdaOnHost, ConcurrentAsyncFlushesEachWaitForTheirOwnPosts) {
  EXPECT_EQ(
      RunGdaRanks(
          2, CCO_GDA_CONNECTION_FULL,
          [](Rank& k) {
            const int peer = 1 - k.rank;
            const uint32_t r = cco_gda_ring_index(0, peer, k.dc.gdaPeerCount);
            const auto* host = reinterpret_cast<const ccoGdaRingHost*>(cco_gda_ring_host_address(k.dc.gdaRingHost, r));
            std::atomic<int> failures{0};
            std::vector<std::thread> blocks;
            for (int b = 0; b < 6; ++b) {
              blocks.emplace_back([&, b] {
                ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
                for (int i = 0; i < 150; ++i) {
                  const uint64_t before = RingHead(k.dc, 0, peer);  // at least this many tickets are below mine
                  if (gda.put(peer, k.win, 8192 + 64 * b, k.win, 0, 5000) != 0 ||  // above the direct bound: the ring
                      gda.flush_async() != 0 || gda.flush_wait() != 0 ||
                      __atomic_load_n(&host->consumed, __ATOMIC_ACQUIRE) < before + 1)
                    ++failures;
                }
              });
            }
            for (auto& t : blocks) t.join();
            CHECK_OR_FAIL(failures.load() == 0);
            return ccoBarrierAll(k.comm) == ccoSuccess;
          }),
      0);
}

// What the device refuses takes no ticket and leaves the ring healthy: a signal on a
// barrier's word, and windows that are not live windows of this communicator holding the
// bytes (null, past the end, an offset that wraps, another communicator's, a deregistered
// one's); where the proxy had to refuse them it failed the ring, and every later call on it
// looked like a lost peer.
TEST_P(GdaOnHost, WhatTheDeviceRefusesTakesNoTicket) {
  EXPECT_EQ(
      RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                  [](Rank& k) {
                    ccoGda<> gda(k.dc, 1, 10'000'000'000ull);
                    const int peer = 1 - k.rank;
                    const uint64_t before = RingHead(k.dc, 1, peer);
                    const int32_t barrierWord = static_cast<int32_t>(k.dc.gdaSignalCount);
                    constexpr int32_t kBad = CCO_DEVICE_STATUS_INVALID_ARGUMENT;
                    CHECK_OR_FAIL(gda.signal(peer, barrierWord) == kBad);
                    CHECK_OR_FAIL(gda.signal(peer, 0, static_cast<ccoSignalOp>(7)) == kBad);
                    CHECK_OR_FAIL(gda.put_value(peer, k.win, 0, 1, CCO_SIGNAL_INC, barrierWord) == kBad);
                    CHECK_OR_FAIL(gda.put(peer, k.win, 0, k.win, 0, 8, CCO_SIGNAL_ADD, barrierWord, 5) == kBad);
                    CHECK_OR_FAIL(gda.put_value(peer, k.win, kWindow, 7) == kBad);      // one byte past the end
                    CHECK_OR_FAIL(gda.put_value(peer, k.win, kWindow - 4, 7) == kBad);  // 8 bytes over the end
                    CHECK_OR_FAIL(gda.put_value(peer, 0, 0, 7) == kBad);                // no window
                    CHECK_OR_FAIL(gda.put(peer, k.win, kWindow - 8, k.win, 0, 64) == kBad);
                    CHECK_OR_FAIL(gda.put(peer, k.win, 0, 0, 0, 8) == kBad);                     // no source window
                    CHECK_OR_FAIL(gda.put(peer, k.win, 8, k.win, ~uint64_t{0} - 3, 8) == kBad);  // offset + bytes wraps
                    CHECK_OR_FAIL(gda.get(peer, k.win, 0, k.win, kWindow - 8, 16) == kBad);
                    CHECK_OR_FAIL(gda.get(peer, 0, 0, k.win, 0, 8) == kBad);
                    ccoWindowDevice other;  // another communicator's window: the same id, other addresses
                    memcpy(&other, reinterpret_cast<const void*>(k.win), sizeof(other));
                    other.flatBase += 1ull << 40;
                    const ccoWindow_t foreign = reinterpret_cast<ccoWindow_t>(&other);
                    CHECK_OR_FAIL(gda.put(peer, foreign, 0, k.win, 0, 8) == kBad &&
                                  gda.get(peer, k.win, 0, foreign, 0, 8) == kBad);
                    ccoWindowDevice stale{};  // what a deregistered window's descriptor holds
                    CHECK_OR_FAIL(gda.put_value(peer, reinterpret_cast<ccoWindow_t>(&stale), 0, 7) == kBad);
                    CHECK_OR_FAIL(RingHead(k.dc, 1, peer) == before);
                    CHECK_OR_FAIL(gda.put_value(peer, k.win, kWindow - 8, 7) == 0 &&
                                  gda.flush() == 0);  // the last word: fine
                    return ccoBarrierAll(k.comm) == ccoSuccess;
                  }),
      0);
}

// What the device cannot vouch for (a descriptor scribbled into the ring) the proxy refuses:
// the ring fails, its flush reports ABORTED, and so do its later operations, on the direct
// path too (they take the ring, whose flush reports the error).
TEST_P(GdaOnHost, ADescriptorTheProxyRefusesFailsTheRing) {
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          ccoGda<> gda(k.dc, 1, 10'000'000'000ull);
                          const int peer = 1 - k.rank;
                          const uint64_t before = RingHead(k.dc, 1, peer);
                          ccoGdaDesc noWindow = PastTheWindow(k.win);
                          noWindow.dstWindow = 0x7fffffff;
                          CHECK_OR_FAIL(PostRaw(k.dc, 1, peer, noWindow) == 0);
                          CHECK_OR_FAIL(gda.flush() == CCO_DEVICE_STATUS_ABORTED);
                          CHECK_OR_FAIL(gda.signal(peer, 0) == 0 && RingHead(k.dc, 1, peer) - before == 2u);
                          CHECK_OR_FAIL(gda.flush() == CCO_DEVICE_STATUS_ABORTED);
                          return ccoBarrierAll(k.comm) == ccoSuccess;
                        }),
            0);
}

// Calls of a context out of range, a signal width other than 32 or 64, or a device
// communicator of another ABI are refused (reads give 0) and touch nothing: a barrier of a
// bad context leaves its epoch, so the next good round still pairs with the peers'.
TEST_P(GdaOnHost, BadContextsWidthsAndDevCommsAreRefused) {
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          constexpr int32_t kBad = CCO_DEVICE_STATUS_INVALID_ARGUMENT;
                          const int peer = 1 - k.rank;
                          for (int32_t ctx : {-1, 2, 1 << 30}) {
                            ccoGda<> bad(k.dc, ctx, 1'000'000'000ull);
                            CHECK_OR_FAIL(bad.wait_signal(0, 1) == kBad && bad.wait_counter(0, 1) == kBad);
                            CHECK_OR_FAIL(bad.read_signal(0) == 0 && bad.read_counter(0) == 0);
                            CHECK_OR_FAIL(bad.reset_signal(0) == kBad && bad.reset_counter(0) == kBad);
                            CHECK_OR_FAIL(bad.put_value(peer, k.win, 0, 1) == kBad && bad.flush() == kBad &&
                                          bad.counter(0) == kBad);
                            CHECK_OR_FAIL(ccoGdaBarrierSession<ccoCoopThread>(ccoCoopThread(), bad, 0).sync() == kBad);
                          }
                          ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
                          CHECK_OR_FAIL(gda.reset_signal(1 << 20) == kBad && gda.reset_counter(-1) == kBad);
                          CHECK_OR_FAIL(gda.reset_signal(0) == 0 && gda.reset_counter(0) == 0);
                          for (int32_t bits : {0, 16, -1, 128})
                            CHECK_OR_FAIL(gda.wait_signal(0, 1, bits) == kBad && gda.read_signal(0, bits) == 0);
                          CHECK_OR_FAIL(gda.wait_signal(0, uint64_t{1} << 32, 32) == kBad);  // does not fit the width
                          ccoDevComm other = k.dc;
                          other.abiVersion += 1;
                          ccoGda<> foreign(other, 0, 1'000'000'000ull);
                          CHECK_OR_FAIL(foreign.put_value(peer, k.win, 0, 1) == kBad &&
                                        foreign.wait_signal(0, 1) == kBad && foreign.flush() == kBad);
                          other = k.dc;
                          other.magic = 0;
                          CHECK_OR_FAIL(ccoGda<>(other, 0).signal(peer, 0) == kBad);
                          // The good barrier still pairs its rounds with the peer's.
                          for (int round = 0; round < 3; ++round)
                            CHECK_OR_FAIL(ccoGdaBarrierSession<ccoCoopThread>(ccoCoopThread(), gda, 0).sync() == 0);
                          return ccoBarrierAll(k.comm) == ccoSuccess;
                        }),
            0);
}

// Puts of 1 to 8 bytes travel as values (the device reads the source when it posts): every
// size at every source and destination alignment lands exactly its bytes and nothing around
// them.
TEST_P(GdaOnHost, SmallPutsLandExactlyAtEveryAlignment) {
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
                          const int peer = 1 - k.rank;
                          constexpr uint64_t kSlots = 32768, kSlot = 32;
                          for (int i = 0; i < 64; ++i) k.mem[i] = static_cast<unsigned char>(k.rank * 100 + i * 3 + 1);
                          memset(k.mem + kSlots, 0xEE, 8 * 8 * 8 * kSlot);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          // Every (size, source alignment, destination alignment) once, each into a slot of its own.
                          auto every_case = [&](auto&& step) {
                            uint64_t slot = 0;
                            for (uint64_t bytes = 1; bytes <= 8; ++bytes)
                              for (uint64_t from = 0; from < 8; ++from)
                                for (uint64_t to = 0; to < 8; ++to, ++slot)
                                  if (!step(kSlots + slot * kSlot, bytes, from, to)) return false;
                            return true;
                          };
                          CHECK_OR_FAIL(every_case([&](uint64_t at, uint64_t bytes, uint64_t from, uint64_t to) {
                            return gda.put(peer, k.win, at + 8 + to, k.win, from, bytes) == 0;
                          }));
                          CHECK_OR_FAIL(gda.flush() == 0 && ccoBarrierAll(k.comm) == ccoSuccess);
                          CHECK_OR_FAIL(every_case([&](uint64_t at, uint64_t bytes, uint64_t from, uint64_t to) {
                            for (uint64_t i = 0; i < kSlot; ++i) {
                              const bool inside = i >= 8 + to && i < 8 + to + bytes;
                              const unsigned char want =
                                  inside ? static_cast<unsigned char>(peer * 100 + (from + i - 8 - to) * 3 + 1) : 0xEE;
                              if (k.mem[at + i] != want) return false;
                            }
                            return true;
                          }));
                          return ccoBarrierAll(k.comm) == ccoSuccess;
                        }),
            0);
}

// Gets of every size around the direct path's bound, an odd one among them, by several
// threads of a rank at once (as a kernel's threads each post their own), each into its own
// destination: once a thread's flush returned, its get landed the peer's bytes exactly and
// nothing past them.
bool GetsOfEverySize(Rank& k) {
  const int peer = 1 - k.rank;
  constexpr uint64_t kSource = 8256, kSlack = 64, kMost = 8200;
  constexpr int kThreads = 4;
  static_assert(kSource + kThreads * (kMost + kSlack) <= kWindow, "the destinations fit the window");
  Fill(k.mem, k.rank, kSource / 4);
  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
  unsigned char want[kSource];
  Fill(want, peer, kSource / 4);
  for (uint64_t bytes : {uint64_t{13}, uint64_t{4096}, uint64_t{4100}, kMost}) {
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        unsigned char* dst = k.mem + kSource + t * (kMost + kSlack);
        memset(dst, 0xEE, bytes + kSlack);
        ccoGda<> gda(k.dc, 0, 10'000'000'000ull);
        if (gda.get(peer, k.win, 0, k.win, dst - k.mem, bytes) != 0 || gda.flush() != 0 ||
            memcmp(dst, want, bytes) != 0)
          ++failed;
        for (uint64_t i = bytes; i < bytes + kSlack; ++i)
          if (dst[i] != 0xEE) ++failed;
      });
    for (auto& t : threads) t.join();
    CHECK_OR_FAIL(failed == 0);
  }
  return ccoBarrierAll(k.comm) == ccoSuccess;
}

TEST_P(GdaOnHost, GetsOfEverySizeLandExactly) {
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL, GetsOfEverySize), 0);
}

// The same between two nodes, through the tcp backend: each get's bytes come back through
// the peer's pinned chunks and land through this rank's.
TEST(GdaOverTcp, GetsOfEverySizeLandExactly) {
  setenv("CCO_NET", "tcp", 1);
  setenv("CCO_SOCKET_IFNAME", "=lo", 1);  // loopback only, whatever else the machine has
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL, GetsOfEverySize, /*nodesPerHost=*/2), 0);
  unsetenv("CCO_NET");
  unsetenv("CCO_SOCKET_IFNAME");
}

INSTANTIATE_TEST_SUITE_P(Paths, GdaOnHost, ::testing::Values("proxy", "hostwords", "direct"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

// The direct path's copy: every size from 0 to 80 bytes at every alignment of source and
// destination, by a group of 1, 3 or 32 threads (each share copied in turn), lands exactly
// those bytes and nothing around them.
TEST(GdaDirectCopy, EverySizeAndAlignment) {
  alignas(16) unsigned char src[128];
  alignas(16) unsigned char dst[128];
  for (int i = 0; i < 128; ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
  for (uint32_t group : {1u, 3u, 32u})
    for (int so = 0; so < 16; ++so)
      for (int d0 = 0; d0 < 16; ++d0)
        for (uint64_t bytes = 0; bytes <= 80; ++bytes) {
          memset(dst, 0xEE, sizeof(dst));
          for (uint32_t rank = 0; rank < group; ++rank)
            cco::gda::CopyShare(reinterpret_cast<uint64_t>(dst + d0), reinterpret_cast<uint64_t>(src + so), bytes, rank,
                                group);
          for (int i = 0; i < 128; ++i) {
            const bool inside = i >= d0 && static_cast<uint64_t>(i - d0) < bytes;
            ASSERT_EQ(dst[i], inside ? src[so + i - d0] : 0xEE)
                << "group " << group << " src +" << so << " dst +" << d0 << " bytes " << bytes << " at " << i;
          }
        }
}

// The value a small put carries: every size at every alignment, little-endian.
TEST(GdaPutAsValue, LoadValueEverySizeAndAlignment) {
  alignas(16) unsigned char src[32];
  for (int i = 0; i < 32; ++i) src[i] = static_cast<unsigned char>(i * 11 + 5);
  for (uint32_t bytes = 1; bytes <= 8; ++bytes)
    for (int at = 0; at < 16; ++at) {
      uint64_t want = 0;
      for (uint32_t i = 0; i < bytes; ++i) want |= uint64_t{src[at + i]} << (8 * i);
      ASSERT_EQ(cco::gda::LoadValue(reinterpret_cast<uint64_t>(src + at), bytes), want) << bytes << " at +" << at;
    }
}

// ccoDevCommRequirements.gdaDirectMaxBytes sets the bound per device communicator (what cco
// perf uses to measure both paths in one run); -1 defers to the variable; out of range is refused.
TEST(GdaDirectBound, RequirementsFieldOverridesTheVariable) {
  setenv("CCO_GDA_DIRECT_MAX_BYTES", "512", 1);
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          CHECK_OR_FAIL(k.dc.gdaDirectMaxBytes == 512u);  // made with -1: the variable
                          for (int bound : {0, 16, 1 << 20}) {
                            ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
                            reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
                            reqs.gdaDirectMaxBytes = bound;
                            ccoDevComm dc;
                            CHECK_OR_FAIL(ccoDevCommCreate(k.comm, &reqs, &dc) == ccoSuccess);
                            CHECK_OR_FAIL(dc.gdaDirectMaxBytes == static_cast<uint32_t>(bound));
                            CHECK_OR_FAIL(ccoDevCommDestroy(k.comm, &dc) == ccoSuccess);
                          }
                          for (int bad : {-2, (1 << 20) + 1}) {
                            ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
                            reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
                            reqs.gdaDirectMaxBytes = bad;
                            ccoDevComm dc;
                            CHECK_OR_FAIL(ccoDevCommCreate(k.comm, &reqs, &dc) == ccoInvalidArgument);
                            CHECK_OR_FAIL(strstr(ccoGetLastError(), "gdaDirectMaxBytes") != nullptr);
                          }
                          return true;
                        }),
            0);
  unsetenv("CCO_GDA_DIRECT_MAX_BYTES");
}

// A malformed bound is refused, never read as some default.
TEST(GdaDirectBound, MalformedIsRefused) {
  for (const char* name : {"CCO_GDA_DIRECT_MAX_BYTES", "CCO_GDA_DIRECT_GROUP_MAX_BYTES"}) {
    for (const char* bad : {"lots", "-1", "2000000"}) {
      setenv(name, bad, 1);
      EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL, [](Rank&) { return true; }), 2) << name << "=" << bad;
    }
    unsetenv(name);
  }
}

// Puts of `bytes` by a warp on a device communicator with these bounds: how many took the
// ring (0: the direct path), after checking the data landed.
int WarpPutTickets(Rank& k, int single, int group, uint64_t bytes) {
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
  reqs.gdaDirectMaxBytes = single;
  reqs.gdaDirectGroupMaxBytes = group;
  ccoDevComm dc;
  if (ccoDevCommCreate(k.comm, &reqs, &dc) != ccoSuccess) return -1;
  const int peer = 1 - k.rank;
  int tickets = -1;
  {
    ccoGda<> gda(dc, 0, 10'000'000'000ull);
    memset(k.mem + 32768, 0, bytes);
    const uint64_t before = RingHead(dc, 0, peer);
    const bool ok = ccoBarrierAll(k.comm) == ccoSuccess &&
                    (gda.put<ccoCoopWarp>(peer, k.win, 32768, k.win, 0, bytes, CCO_SIGNAL_INC, 0)) == 0 &&
                    gda.wait_signal(0, 1) == 0 && Holds(k.mem + 32768, peer, bytes / 4) && gda.flush() == 0;
    if (ok) tickets = static_cast<int>(RingHead(dc, 0, peer) - before);
  }
  const bool closed = ccoBarrierAll(k.comm) == ccoSuccess && ccoDevCommDestroy(k.comm, &dc) == ccoSuccess;
  return closed ? tickets : -1;
}

// gdaDirectGroupMaxBytes: the requirement overrides CCO_GDA_DIRECT_GROUP_MAX_BYTES; a group
// copy goes direct up to the larger of the two bounds, and never while gdaDirectMaxBytes is
// 0; out of range is refused, naming the field.
TEST(GdaDirectBound, GroupBoundFromTheRequirementOrTheVariable) {
  setenv("CCO_GDA_DIRECT_GROUP_MAX_BYTES", "8192", 1);
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          CHECK_OR_FAIL(k.dc.gdaDirectGroupMaxBytes == 8192u);  // made with -1: the variable
                          Fill(k.mem, k.rank, 4096);
                          CHECK_OR_FAIL(WarpPutTickets(k, -1, -1, 8192) == 0);  // the variable's 8192
                          CHECK_OR_FAIL(WarpPutTickets(k, -1, -1, 8196) == 1);
                          CHECK_OR_FAIL(WarpPutTickets(k, -1, 16384, 16384) == 0);  // the field's
                          CHECK_OR_FAIL(WarpPutTickets(k, -1, 0, 4096) == 0);  // the larger bound: gdaDirectMaxBytes
                          CHECK_OR_FAIL(WarpPutTickets(k, -1, 0, 4100) == 1);
                          CHECK_OR_FAIL(WarpPutTickets(k, 12288, 16, 12288) == 0);
                          CHECK_OR_FAIL(WarpPutTickets(k, 0, 16384, 16) == 1);        // the direct path off
                          CHECK_OR_FAIL(WarpPutTickets(k, -1, 1 << 20, 16384) == 0);  // the largest bound taken
                          for (int bad : {-2, (1 << 20) + 1}) {
                            ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
                            reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
                            reqs.gdaDirectGroupMaxBytes = bad;
                            ccoDevComm dc;
                            CHECK_OR_FAIL(ccoDevCommCreate(k.comm, &reqs, &dc) == ccoInvalidArgument);
                            CHECK_OR_FAIL(strstr(ccoGetLastError(), "gdaDirectGroupMaxBytes") != nullptr);
                          }
                          return true;
                        }),
            0);
  unsetenv("CCO_GDA_DIRECT_GROUP_MAX_BYTES");
}

}  // namespace
