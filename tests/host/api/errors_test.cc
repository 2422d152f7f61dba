// SPDX-License-Identifier: MIT
// Bad input and misbehaving ranks: each is a clear error on every rank that is affected,
// and nothing hangs (CCO_TIMEOUT_MS is short here; RunRanks kills a rank that hangs).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "cco/cco.h"
#include "tests/host/testing/multiprocess.h"

namespace {

using cco_test::RunRanks;
using cco_test::RunRanksRaw;

bool LastErrorSays(const char* text) { return strstr(ccoGetLastError(), text) != nullptr; }

class ErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("CCO_PLATFORM", "cpu", 1);
    setenv("CCO_TIMEOUT_MS", "1500", 1);
  }
};

TEST_F(ErrorsTest, NullPointersAndBadRanks) {
  EXPECT_EQ(ccoGetUniqueId(nullptr), ccoInvalidArgument);
  ccoUniqueId id;
  ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  ccoComm* comm = nullptr;
  EXPECT_EQ(ccoCommCreate(id, 2, 0, 0, nullptr), ccoInvalidArgument);
  EXPECT_EQ(ccoCommCreate(id, 2, 2, 0, &comm), ccoInvalidArgument);
  EXPECT_TRUE(LastErrorSays("rank=2")) << ccoGetLastError();
  EXPECT_EQ(ccoCommCreate(id, 2, -1, 0, &comm), ccoInvalidArgument);
  EXPECT_EQ(ccoCommCreate(id, 0, 0, 0, &comm), ccoInvalidArgument);
  EXPECT_TRUE(LastErrorSays("nRanks=0")) << ccoGetLastError();
  EXPECT_EQ(ccoCommCreate(id, (1 << 20) + 1, 0, 0, &comm), ccoInvalidArgument);  // beyond what a root accepts
  EXPECT_TRUE(LastErrorSays("nRanks=1048577 (must be in [1, 1048576])")) << ccoGetLastError();
  EXPECT_EQ(comm, nullptr);
  int v;
  EXPECT_EQ(ccoCommRank(nullptr, &v), ccoInvalidUsage);
  EXPECT_EQ(ccoBarrierAll(nullptr), ccoInvalidUsage);
  EXPECT_TRUE(LastErrorSays("not a live communicator")) << ccoGetLastError();
  EXPECT_STREQ(ccoGetErrorString(ccoTimeout), "timeout");
}

// An id serves one communicator: its rendezvous root closes once every rank has its answer.
// A second ccoCommCreate with it says so at once, not after the whole bound (60 s here).
TEST_F(ErrorsTest, ReusedIdFailsAtOnceAndSaysSo) {
  setenv("CCO_TIMEOUT_MS", "60000", 1);
  ccoUniqueId id;
  ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  ccoComm* comm = nullptr;
  ASSERT_EQ(ccoCommCreate(id, 1, 0, 0, &comm), ccoSuccess) << ccoGetLastError();
  ASSERT_EQ(ccoCommDestroy(comm), ccoSuccess);
  const auto start = std::chrono::steady_clock::now();
  comm = nullptr;
  EXPECT_EQ(ccoCommCreate(id, 1, 0, 0, &comm), ccoInvalidUsage);
  EXPECT_TRUE(LastErrorSays("the id was used already")) << ccoGetLastError();
  EXPECT_EQ(comm, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  // Two ranks, two processes: the second job with the first job's id fails on every rank.
  EXPECT_TRUE(RunRanks(2, [](int rank, int nRanks, const ccoUniqueId& shared) {
    ccoComm* c = nullptr;
    RANK_OK(ccoCommCreate(shared, nRanks, rank, 0, &c));
    RANK_OK(ccoBarrierAll(c));
    RANK_OK(ccoCommDestroy(c));
    const auto again = std::chrono::steady_clock::now();
    RANK_CHECK(ccoCommCreate(shared, nRanks, rank, 0, &c) == ccoInvalidUsage);
    RANK_CHECK(LastErrorSays("the id was used already"));
    RANK_CHECK(std::chrono::steady_clock::now() - again < std::chrono::seconds(10));
    return 0;
  }));
}

TEST_F(ErrorsTest, CorruptedAndForeignIds) {
  ccoUniqueId id;
  ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  ccoComm* comm = nullptr;
  ccoUniqueId corrupted = id;
  corrupted.internal[20] ^= 0x5a;
  EXPECT_EQ(ccoCommCreate(corrupted, 1, 0, 0, &comm), ccoInvalidArgument);
  EXPECT_TRUE(LastErrorSays("corrupted")) << ccoGetLastError();
  ccoUniqueId foreign;
  for (size_t i = 0; i < sizeof(foreign.internal); ++i) foreign.internal[i] = static_cast<char>(i * 7 + 3);
  EXPECT_EQ(ccoCommCreate(foreign, 1, 0, 0, &comm), ccoInvalidArgument);
  EXPECT_TRUE(LastErrorSays("not a CCO id")) << ccoGetLastError();
  ccoUniqueId zero = {};
  EXPECT_EQ(ccoCommCreate(zero, 1, 0, 0, &comm), ccoInvalidArgument);
  // The untouched id still works.
  ASSERT_EQ(ccoCommCreate(id, 1, 0, 16 << 20, &comm), ccoSuccess);
  EXPECT_EQ(ccoCommDestroy(comm), ccoSuccess);
}

TEST_F(ErrorsTest, MemoryArguments) {
  ccoUniqueId id;
  ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  ccoComm* comm = nullptr;
  ASSERT_EQ(ccoCommCreate(id, 1, 0, 16 << 20, &comm), ccoSuccess);
  void* p = nullptr;
  EXPECT_EQ(ccoMemAlloc(comm, 0, &p), ccoInvalidArgument);
  EXPECT_EQ(ccoMemAlloc(comm, 1024, nullptr), ccoInvalidArgument);
  EXPECT_EQ(ccoMemAlloc(comm, size_t{1} << 40, &p), ccoOutOfMemory);
  EXPECT_TRUE(LastErrorSays("perRankVmmSize")) << ccoGetLastError();
  // Fill the heap, then one more is out of memory, and freeing makes room again.
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(ccoMemAlloc(comm, 4 << 20, &p), ccoSuccess);
    blocks.push_back(p);
  }
  EXPECT_EQ(ccoMemAlloc(comm, 1, &p), ccoOutOfMemory);
  EXPECT_EQ(ccoMemFree(comm, blocks[1]), ccoSuccess);
  ASSERT_EQ(ccoMemAlloc(comm, 4 << 20, &p), ccoSuccess);
  EXPECT_EQ(p, blocks[1]);  // first fit reuses the freed slot
  // Freeing an interior pointer, a foreign pointer, twice.
  EXPECT_EQ(ccoMemFree(comm, static_cast<char*>(blocks[0]) + 64), ccoInvalidArgument);
  int local = 0;
  EXPECT_EQ(ccoMemFree(comm, &local), ccoInvalidArgument);
  EXPECT_EQ(ccoMemFree(comm, blocks[0]), ccoSuccess);
  EXPECT_EQ(ccoMemFree(comm, blocks[0]), ccoInvalidArgument);
  EXPECT_TRUE(LastErrorSays("freed twice")) << ccoGetLastError();
  EXPECT_EQ(ccoMemFree(comm, nullptr), ccoInvalidArgument);
  // Windows: outside the allocation, zero size, a foreign pointer, a bad handle.
  ccoWindow_t win = 0;
  EXPECT_EQ(ccoWindowRegister(comm, blocks[2], (4 << 20) + 1, &win), ccoInvalidArgument);
  EXPECT_TRUE(LastErrorSays("past the end")) << ccoGetLastError();
  EXPECT_EQ(ccoWindowRegister(comm, blocks[2], 0, &win), ccoInvalidArgument);
  EXPECT_EQ(ccoWindowRegister(comm, static_cast<char*>(blocks[2]) + 8, 64, &win), ccoInvalidArgument);
  EXPECT_TRUE(LastErrorSays("16-byte aligned")) << ccoGetLastError();
  EXPECT_EQ(ccoWindowRegister(comm, &local, 4, &win), ccoInvalidArgument);
  EXPECT_EQ(ccoWindowRegister(comm, blocks[2], 4, nullptr), ccoInvalidArgument);
  EXPECT_EQ(ccoWindowDeregister(comm, 12345), ccoInvalidArgument);
  ASSERT_EQ(ccoWindowRegister(comm, static_cast<char*>(blocks[2]) + 4096, 4096, &win), ccoSuccess);
  void* q = nullptr;
  EXPECT_EQ(ccoGetPeerPtr(comm, win, 1, 0, &q), ccoInvalidArgument);  // lsaSize is 1
  EXPECT_EQ(ccoGetPeerPtr(comm, win, 0, 4096, &q), ccoInvalidArgument);
  EXPECT_EQ(ccoGetPeerPtr(comm, win, 0, 4095, &q), ccoSuccess);
  EXPECT_EQ(ccoWindowDeregister(comm, win), ccoSuccess);
  EXPECT_EQ(ccoWindowDeregister(comm, win), ccoInvalidArgument);
  EXPECT_EQ(ccoCommDestroy(comm), ccoSuccess);
}

TEST_F(ErrorsTest, UseAfterDestroy) {
  ccoUniqueId id;
  ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  ccoComm* comm = nullptr;
  ASSERT_EQ(ccoCommCreate(id, 1, 0, 16 << 20, &comm), ccoSuccess);
  ASSERT_EQ(ccoCommDestroy(comm), ccoSuccess);
  void* p = nullptr;
  EXPECT_EQ(ccoMemAlloc(comm, 64, &p), ccoInvalidUsage);
  EXPECT_EQ(ccoBarrierAll(comm), ccoInvalidUsage);
  EXPECT_EQ(ccoCommDestroy(comm), ccoInvalidUsage);
  EXPECT_TRUE(LastErrorSays("not a live communicator")) << ccoGetLastError();
}

TEST_F(ErrorsTest, MismatchedWindowSizesFailOnEveryRank) {
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
    void* mem = nullptr;
    RANK_OK(ccoMemAlloc(comm, 1 << 20, &mem));
    ccoWindow_t win = 0;
    ccoResult_t r = ccoWindowRegister(comm, mem, rank == 0 ? 4096 : 8192, &win);
    RANK_CHECK(r == ccoInvalidUsage);
    RANK_CHECK(LastErrorSays("rank 1 has size 8192") && LastErrorSays("rank 0 has size 4096"));
    return 0;
  }));
}

TEST_F(ErrorsTest, MismatchedCallsFailOnEveryRank) {
  EXPECT_TRUE(RunRanks(3, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
    void* mem = nullptr;
    RANK_OK(ccoMemAlloc(comm, 1 << 20, &mem));
    ccoWindow_t win = 0;
    // Rank 2 registers while the others are in a barrier.
    ccoResult_t r = rank == 2 ? ccoWindowRegister(comm, mem, 4096, &win) : ccoBarrierAll(comm);
    RANK_CHECK(r == ccoInvalidUsage);
    RANK_CHECK(LastErrorSays("ccoBarrierAll") && LastErrorSays("ccoWindowRegister") && LastErrorSays("rank 2"));
    // The communicator stays failed: later collectives report the first failure.
    RANK_CHECK(ccoBarrierAll(comm) != ccoSuccess);
    return 0;
  }));
}

TEST_F(ErrorsTest, MismatchedNRanksAndDuplicateRanks) {
  std::vector<int> st = RunRanksRaw(
      2,
      [](int rank, int, const ccoUniqueId& id) {
        ccoComm* comm = nullptr;
        RANK_CHECK(ccoCommCreate(id, rank == 0 ? 2 : 3, rank, 0, &comm) == ccoInvalidUsage);
        RANK_CHECK(LastErrorSays("nRanks=3") && LastErrorSays("nRanks=2"));
        return 0;
      },
      30);
  EXPECT_EQ(st, (std::vector<int>{0, 0}));
  st = RunRanksRaw(
      3,
      [](int rank, int, const ccoUniqueId& id) {
        ccoComm* comm = nullptr;
        RANK_CHECK(ccoCommCreate(id, 3, rank == 2 ? 1 : rank, 0, &comm) == ccoInvalidUsage);
        RANK_CHECK(LastErrorSays("two processes called it as rank 1"));
        return 0;
      },
      30);
  EXPECT_EQ(st, (std::vector<int>{0, 0, 0}));
}

TEST_F(ErrorsTest, MismatchedPerRankVmm) {
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_CHECK(ccoCommCreate(id, n, rank, rank == 0 ? (16 << 20) : (32 << 20), &comm) == ccoInvalidUsage);
    RANK_CHECK(LastErrorSays("perRankVmmSize"));
    return 0;
  }));
}

// A rank that never comes: everyone else learns which one, within the timeout.
TEST_F(ErrorsTest, MissingRankIsNamed) {
  std::vector<int> st = RunRanksRaw(
      3,
      [](int rank, int n, const ccoUniqueId& id) {
        if (rank == 1) return 0;  // never calls ccoCommCreate
        ccoComm* comm = nullptr;
        RANK_CHECK(ccoCommCreate(id, n, rank, 0, &comm) == ccoTimeout);
        RANK_CHECK(LastErrorSays("rank 1 did not arrive"));
        return 0;
      },
      30);
  EXPECT_EQ(st, (std::vector<int>{0, 0, 0}));
}

// A rank that exits after creation: the others' next collective names it; no hang.
TEST_F(ErrorsTest, RankThatExitsEarlyIsNamed) {
  std::vector<int> st = RunRanksRaw(
      4,
      [](int rank, int n, const ccoUniqueId& id) {
        ccoComm* comm = nullptr;
        RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
        RANK_OK(ccoBarrierAll(comm));
        if (rank == 2) _exit(0);  // leaves without a word
        ccoResult_t r = ccoBarrierAll(comm);
        RANK_CHECK(r == ccoRemoteError);
        RANK_CHECK(LastErrorSays("rank 2 left") || (rank != 0 && LastErrorSays("rank 2")));
        RANK_OK(ccoCommDestroy(comm));
        return 0;
      },
      30);
  EXPECT_EQ(st, (std::vector<int>{0, 0, 0, 0}));
}

// Rank 0 leaves: the others' waits end with an error saying so.
TEST_F(ErrorsTest, HubThatExitsIsNamed) {
  std::vector<int> st = RunRanksRaw(
      3,
      [](int rank, int n, const ccoUniqueId& id) {
        ccoComm* comm = nullptr;
        RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
        if (rank == 0) _exit(0);
        RANK_CHECK(ccoBarrierAll(comm) == ccoRemoteError);
        RANK_CHECK(LastErrorSays("rank 0"));
        RANK_OK(ccoCommDestroy(comm));
        return 0;
      },
      30);
  EXPECT_EQ(st, (std::vector<int>{0, 0, 0}));
}

// A rank that stays alive but never reaches the barrier: a timeout naming it.
TEST_F(ErrorsTest, RankThatNeverReachesABarrierIsNamed) {
  std::vector<int> st = RunRanksRaw(
      3,
      [](int rank, int n, const ccoUniqueId& id) {
        ccoComm* comm = nullptr;
        RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
        if (rank == 1) {
          sleep(6);  // longer than any wait below
          return 0;
        }
        RANK_CHECK(ccoBarrierAll(comm) == ccoTimeout);
        RANK_CHECK(LastErrorSays("rank 1 did not reach it"));
        return 0;
      },
      30);
  EXPECT_EQ(st, (std::vector<int>{0, 0, 0}));
}

}  // namespace
