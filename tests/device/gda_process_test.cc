// SPDX-License-Identifier: MIT
// The GDA device API with ranks as processes on the cpu platform: the rings, windows and
// signal words cross process boundaries (sealed memfds), as they do between GPU processes.
// Exact data over many rounds and sizes on FULL and CROSSNODE connections, and a peer that
// dies: the survivor's puts still complete, its wait for the dead peer ends at its timeout,
// and the survivor tears down without hanging.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "cco/cco.h"
#include "device/cco_device.hpp"
#include "device/gda.hpp"
#include "tests/host/testing/multiprocess.h"

namespace {

constexpr size_t kWindow = 1 << 20;
constexpr uint64_t kWaitNs = 10'000'000'000ull;

struct RankState {
  ccoComm* comm = nullptr;
  ccoDevComm dc{};
  ccoWindow_t win = 0;
  unsigned char* mem = nullptr;
};

int Create(int rank, int n, const ccoUniqueId& id, int type, RankState* s) {
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = type;
  reqs.gdaContextCount = 1;
  void* mem = nullptr;
  RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &s->comm));
  RANK_OK(ccoWindowAllocRegister(s->comm, kWindow, &mem, &s->win));
  RANK_OK(ccoDevCommCreate(s->comm, &reqs, &s->dc));
  s->mem = static_cast<unsigned char*>(mem);
  return 0;
}

int Destroy(RankState* s) {
  RANK_OK(ccoDevCommDestroy(s->comm, &s->dc));
  RANK_OK(ccoWindowDeregister(s->comm, s->win));
  RANK_OK(ccoCommDestroy(s->comm));
  return 0;
}

unsigned char Byte(int rank, int round, size_t i) { return static_cast<unsigned char>(rank * 31 + round * 7 + i * 13); }

// Each round: a put of a different size (1 byte to 512 KiB) with a signal to the right
// neighbour, a wait for the left one's, and a byte-exact check of what arrived.
int RingRounds(int rank, int n, const ccoUniqueId& id, int type) {
  RankState s;
  if (Create(rank, n, id, type, &s) != 0) return 1;
  ccoGda<> gda(s.dc, 0, kWaitNs);
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  const size_t half = kWindow / 2;
  constexpr int kRounds = 40;
  for (int round = 0; round < kRounds; ++round) {
    const size_t bytes = size_t{1} << (round % 20);
    for (size_t i = 0; i < bytes; ++i) s.mem[i] = Byte(rank, round, i);
    RANK_CHECK(gda.put(right, s.win, half, s.win, 0, bytes, CCO_SIGNAL_INC, 0) == CCO_DEVICE_STATUS_OK);
    RANK_CHECK(gda.wait_signal(0, 1) == CCO_DEVICE_STATUS_OK);
    for (size_t i = 0; i < bytes; ++i)
      if (reinterpret_cast<volatile unsigned char*>(s.mem)[half + i] != Byte(left, round, i)) {
        fprintf(stderr, "rank %d round %d: byte %zu of %zu differs\n", rank, round, i, bytes);
        return 1;
      }
    RANK_CHECK(gda.flush() == CCO_DEVICE_STATUS_OK);
    // The left neighbour's next put lands where this round's was read: meet first.
    RANK_OK(ccoBarrierAll(s.comm));
  }
  RANK_CHECK(gda.read_signal(0) == 0);
  return Destroy(&s);
}

class GdaProcesses : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("CCO_PLATFORM", "cpu", 1);
    setenv("CCO_TIMEOUT_MS", "20000", 1);
    unsetenv("CCO_TEST_NODES_PER_HOST");
  }
  void TearDown() override { unsetenv("CCO_TEST_NODES_PER_HOST"); }
};

TEST_F(GdaProcesses, FullRingExactData) {
  for (int n : {2, 3}) {
    EXPECT_TRUE(cco_test::RunRanks(
        n, [](int rank, int n, const ccoUniqueId& id) { return RingRounds(rank, n, id, CCO_GDA_CONNECTION_FULL); }))
        << n << " ranks";
  }
}

// Every operation through the proxy (the direct path off), with host signal words
// (CCO_GDA_HOST_SIGNALS=1): a signal to an LSA peer that follows no work still on the proxy's
// stream is a CPU store into the target's host word of its sender (abi/gda.h); one behind a
// put's data goes to the sender's proxy word in device memory on the stream. A wait sums both,
// so signals alone, signals behind data, and the two taking turns on one signal id (a put with
// INC, flushed, then ADD 5 alone) all count exactly, with the data exact. On the cpu platform
// a stream runs each submission at once, so which word takes each signal is known: the test
// checks each word's running sum. With CCO_GDA_HOST_SIGNALS=0 on one rank, neither rank uses
// host words, and every signal lands in the device-memory proxy words.
int HostWordRounds(int rank, int n, const ccoUniqueId& id, bool hostWords) {
  if (!hostWords && rank == 1) setenv("CCO_GDA_HOST_SIGNALS", "0", 1);  // one rank is enough
  RankState s;
  if (Create(rank, n, id, CCO_GDA_CONNECTION_FULL, &s) != 0) return 1;
  RANK_CHECK((s.dc.gdaHostSignals != 0) == hostWords && s.dc.gdaDirectMaxBytes == 0);
  constexpr int kPings = 300, kPuts = 20;
  constexpr uint64_t kAlone = 5;  // what the signal after each put adds
  {
    ccoGda<> gda(s.dc, 0, kWaitNs);
    const int peer = 1 - rank;
    constexpr size_t kBytes = 64 << 10;
    for (int i = 0; i < kPings; ++i) {  // signal 1 alone, back and forth
      if (rank == 1) RANK_CHECK(gda.wait_signal(1, 1) == CCO_DEVICE_STATUS_OK);
      RANK_CHECK(gda.signal(peer, 1) == CCO_DEVICE_STATUS_OK);
      if (rank == 0) RANK_CHECK(gda.wait_signal(1, 1) == CCO_DEVICE_STATUS_OK);
    }
    for (int round = 0; round < kPuts; ++round) {  // signal 0 behind 64 KiB, then alone
      for (size_t i = 0; i < kBytes; ++i) s.mem[i] = Byte(rank, round, i);
      RANK_CHECK(gda.put(peer, s.win, kBytes, s.win, 0, kBytes, CCO_SIGNAL_INC, 0) == CCO_DEVICE_STATUS_OK);
      RANK_CHECK(gda.flush() == CCO_DEVICE_STATUS_OK);  // the proxy's stream has run dry
      RANK_CHECK(gda.signal(peer, 0, CCO_SIGNAL_ADD, kAlone) == CCO_DEVICE_STATUS_OK);
      RANK_CHECK(gda.wait_signal(0, 1 + kAlone) == CCO_DEVICE_STATUS_OK);
      for (size_t i = 0; i < kBytes; ++i)
        RANK_CHECK(reinterpret_cast<volatile unsigned char*>(s.mem)[kBytes + i] == Byte(peer, round, i));
      RANK_CHECK(gda.flush() == CCO_DEVICE_STATUS_OK);
      RANK_OK(ccoBarrierAll(s.comm));  // the peer's next put lands where this one was read
    }
    // The peer's running sums in its proxy words in device memory, and in its host words.
    const auto* proxy = reinterpret_cast<const volatile uint64_t*>(s.dc.gdaSignals);
    const uint64_t pings = proxy[cco_gda_signal_word(1, peer, n)], puts = proxy[cco_gda_signal_word(0, peer, n)];
    if (hostWords) {
      const auto* host = reinterpret_cast<const volatile uint64_t*>(s.dc.gdaHostSignals);
      const int32_t peerLsa = peer;  // one node: a rank's LSA rank is its world rank
      RANK_CHECK(pings == 0 && host[cco_gda_host_signal_word(1, peerLsa, s.dc.lsaSize)] == kPings);
      RANK_CHECK(puts == kPuts && host[cco_gda_host_signal_word(0, peerLsa, s.dc.lsaSize)] == kAlone * kPuts);
    } else {
      RANK_CHECK(pings == kPings && puts == (1 + kAlone) * kPuts);
    }
    RANK_CHECK(gda.read_signal(0) == 0 && gda.read_signal(1) == 0);
  }
  RANK_OK(ccoBarrierAll(s.comm));
  return Destroy(&s);
}

TEST_F(GdaProcesses, ProxySignalsOfLsaPeersLandInHostWords) {
  setenv("CCO_GDA_DIRECT_MAX_BYTES", "0", 1);
  setenv("CCO_GDA_HOST_SIGNALS", "1", 1);
  for (bool hostWords : {true, false})
    EXPECT_TRUE(cco_test::RunRanks(
        2, [hostWords](int rank, int n, const ccoUniqueId& id) { return HostWordRounds(rank, n, id, hostWords); }))
        << (hostWords ? "with" : "without") << " host words";
  unsetenv("CCO_GDA_DIRECT_MAX_BYTES");
  unsetenv("CCO_GDA_HOST_SIGNALS");
}

TEST_F(GdaProcesses, CrossNodeOnVirtualNodes) {
  // Four ranks as two "nodes" of two: CROSSNODE connects each rank to the other node's ranks
  // only, and a ring whose neighbours sit on the other node (rank r -> r + 2) uses them.
  setenv("CCO_TEST_NODES_PER_HOST", "2", 1);
  EXPECT_TRUE(cco_test::RunRanks(4, [](int rank, int n, const ccoUniqueId& id) {
    RankState s;
    if (Create(rank, n, id, CCO_GDA_CONNECTION_CROSSNODE, &s) != 0) return 1;
    ccoGda<> gda(s.dc, 0, kWaitNs);
    const int peer = (rank + 2) % n;
    for (size_t i = 0; i < 4096; ++i) s.mem[i] = Byte(rank, 0, i);
    RANK_OK(ccoBarrierAll(s.comm));
    RANK_CHECK(gda.put(peer, s.win, 8192, s.win, 0, 4096, CCO_SIGNAL_ADD, 2, 5) == CCO_DEVICE_STATUS_OK);
    RANK_CHECK(gda.wait_signal(2, 5) == CCO_DEVICE_STATUS_OK);
    for (size_t i = 0; i < 4096; ++i) RANK_CHECK(s.mem[8192 + i] == Byte(peer, 0, i));
    // A peer on this rank's own node is not connected under CROSSNODE.
    RANK_CHECK(gda.put(rank ^ 1, s.win, 0, s.win, 0, 8) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
    RANK_CHECK(gda.flush() == CCO_DEVICE_STATUS_OK);
    RANK_OK(ccoBarrierAll(s.comm));
    return Destroy(&s);
  }));
}

TEST_F(GdaProcesses, DeadPeerFailsItsRingsAndEndsWaitsForIt) {
  setenv("CCO_TIMEOUT_MS", "3000", 1);  // the survivor's teardown gives up on the dead rank
  // The proxy pauses between naming rank 1 and failing its rings: the error must not be
  // reported before the rings fail (a put to rank 1 would take the direct path and succeed).
  setenv("CCO_TEST_LOSS_PAUSE_MS", "200", 1);
  const std::vector<int> status = cco_test::RunRanksRaw(
      2,
      [](int rank, int n, const ccoUniqueId& id) {
        RankState s;
        if (Create(rank, n, id, CCO_GDA_CONNECTION_FULL, &s) != 0) return 1;
        RANK_OK(ccoBarrierAll(s.comm));
        if (rank == 1) _exit(7);  // dies holding everything: no destroy, no goodbye
        // The proxy notices within milliseconds (the host mesh's socket hangs up) and says so.
        ccoResult_t async = ccoSuccess;
        for (int i = 0; i < 2000 && async == ccoSuccess; ++i) {
          RANK_OK(ccoCommGetAsyncError(s.comm, &async));
          if (async == ccoSuccess) usleep(1000);
        }
        RANK_CHECK(async == ccoRemoteError);
        RANK_CHECK(strstr(ccoGetLastError(), "rank 1") != nullptr);
        // Every ring to it has failed: posts and flushes end at once, not at a timeout.
        ccoGda<> gda(s.dc, 0, 60'000'000'000ull);
        const int32_t put = gda.put(1, s.win, 0, s.win, 0, 4096, CCO_SIGNAL_INC, 0);
        RANK_CHECK(put == CCO_DEVICE_STATUS_ABORTED || gda.flush() == CCO_DEVICE_STATUS_ABORTED);
        // A signal from it can never come: a wait ends at once (its context's ring to the dead
        // rank failed), even with no timeout (it waited for the handle's timeout, or forever).
        ccoGda<> noTimeout(s.dc, 0, 0);
        const auto start = std::chrono::steady_clock::now();
        RANK_CHECK(noTimeout.wait_signal(0, 1) == CCO_DEVICE_STATUS_ABORTED);
        RANK_CHECK(noTimeout.wait_counter(0, 1) == CCO_DEVICE_STATUS_ABORTED);
        ccoGdaBarrierSession<ccoCoopThread> barrier(ccoCoopThread(), noTimeout, 0);
        RANK_CHECK(barrier.sync() == CCO_DEVICE_STATUS_ABORTED);
        RANK_CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
        // Teardown agrees with a dead rank: it fails within CCO_TIMEOUT_MS instead of hanging,
        // and the communicator is still destroyed.
        RANK_CHECK(ccoDevCommDestroy(s.comm, &s.dc) != ccoSuccess);
        ccoCommDestroy(s.comm);
        return 0;
      },
      60);
  unsetenv("CCO_TEST_LOSS_PAUSE_MS");
  ASSERT_EQ(status.size(), 2u);
  EXPECT_EQ(status[0], 0);
  EXPECT_EQ(status[1], 7);
}

}  // namespace
