// SPDX-License-Identifier: MIT
// Communicators, symmetric memory and windows on the cpu platform, with ranks as real
// processes: creation and queries, peer writes read back exactly in the peer process,
// host barriers, many windows, the allocate-and-register form.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "bootstrap/fd_mesh.h"
#include "cco/cco.h"
#include "tests/host/testing/multiprocess.h"

namespace {

using cco_test::RunRanks;

class CommTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    setenv("CCO_PLATFORM", "cpu", 1);
    setenv("CCO_TIMEOUT_MS", "20000", 1);
  }
};

TEST_P(CommTest, CreateQueryDestroy) {
  EXPECT_TRUE(RunRanks(GetParam(), [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 64 << 20, &comm));
    int v = -1, nodes = -1;
    RANK_OK(ccoCommRank(comm, &v));
    RANK_CHECK(v == rank);
    RANK_OK(ccoCommSize(comm, &v));
    RANK_CHECK(v == n);
    RANK_OK(ccoCommLsaRank(comm, &v));
    RANK_CHECK(v == rank);  // one host: the LSA team is the world
    RANK_OK(ccoCommLsaSize(comm, &v));
    RANK_CHECK(v == n);
    RANK_OK(ccoCommNode(comm, &v, &nodes));
    RANK_CHECK(v == 0 && nodes == 1);
    ccoPlatform_t platform;
    RANK_OK(ccoCommPlatform(comm, &platform));
    RANK_CHECK(platform == ccoPlatformCpu);
    RANK_OK(ccoBarrierAll(comm));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

// Every rank's record lands in every rank at its rank's place; a rank with another size
// fails every rank; bad arguments are refused before any exchange.
TEST_P(CommTest, AllGatherHostHandsEveryRankEveryRecord) {
  EXPECT_TRUE(RunRanks(GetParam(), [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 64 << 20, &comm));
    std::vector<uint32_t> mine(1000), all(1000 * n);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = rank * 100000 + static_cast<uint32_t>(i);
    RANK_OK(ccoAllGatherHost(comm, mine.data(), mine.size() * 4, all.data()));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < mine.size(); ++i) RANK_CHECK(all[r * mine.size() + i] == r * 100000 + i);
    RANK_OK(ccoAllGatherHost(comm, nullptr, 0, nullptr));
    RANK_CHECK(ccoAllGatherHost(comm, mine.data(), CCO_ALLGATHER_HOST_MAX_BYTES + 1, all.data()) == ccoInvalidArgument);
    RANK_CHECK(ccoAllGatherHost(comm, nullptr, 4, all.data()) == ccoInvalidArgument);
    RANK_CHECK(ccoAllGatherHost(nullptr, mine.data(), 4, all.data()) == ccoInvalidUsage);
    if (n > 1) {
      const ccoResult_t r = ccoAllGatherHost(comm, mine.data(), rank == n - 1 ? 8 : 4, all.data());
      RANK_CHECK(r != ccoSuccess);
      RANK_CHECK(std::string(ccoGetLastError()).find("contributed") != std::string::npos);
    }
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

// Each rank writes rank*1000+i into its right neighbour's copy through the peer pointer;
// after a barrier each rank finds its left neighbour's values in its own memory.
TEST_P(CommTest, PeerWritesArriveExactly) {
  EXPECT_TRUE(RunRanks(GetParam(), [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 64 << 20, &comm));
    const size_t count = 300000;  // not a multiple of the page size
    void* mem = nullptr;
    RANK_OK(ccoMemAlloc(comm, count * sizeof(uint32_t), &mem));
    ccoWindow_t win = 0;
    RANK_OK(ccoWindowRegister(comm, mem, count * sizeof(uint32_t), &win));
    RANK_CHECK(win != 0);
    const int right = (rank + 1) % n, left = (rank + n - 1) % n;
    void* peer = nullptr;
    RANK_OK(ccoGetPeerPtr(comm, win, right, 0, &peer));
    void* self = nullptr;
    RANK_OK(ccoGetPeerPtr(comm, win, rank, 0, &self));
    RANK_CHECK(self == mem);
    for (size_t i = 0; i < count; ++i) static_cast<uint32_t*>(peer)[i] = rank * 1000 + static_cast<uint32_t>(i);
    RANK_OK(ccoBarrierAll(comm));
    for (size_t i = 0; i < count; ++i)
      RANK_CHECK(static_cast<uint32_t*>(mem)[i] == left * 1000 + static_cast<uint32_t>(i));
    // The window's device descriptor describes the same arithmetic.
    const ccoWindowDevice* desc = reinterpret_cast<const ccoWindowDevice*>(win);
    RANK_CHECK(desc->magic == CCO_WINDOW_MAGIC && desc->lsaRank == rank && desc->lsaSize == n);
    RANK_CHECK(desc->flatBase + right * desc->stride + desc->offset == reinterpret_cast<uint64_t>(peer));
    RANK_OK(ccoBarrierAll(comm));
    RANK_OK(ccoWindowDeregister(comm, win));
    RANK_OK(ccoMemFree(comm, mem));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

TEST_P(CommTest, ManyWindowsAndTheAllocRegisterForm) {
  EXPECT_TRUE(RunRanks(GetParam(), [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 64 << 20, &comm));
    // Two windows over one allocation, then windows of their own allocations.
    void* mem = nullptr;
    RANK_OK(ccoMemAlloc(comm, 1 << 20, &mem));
    ccoWindow_t a = 0, b = 0;
    RANK_OK(ccoWindowRegister(comm, mem, 4096, &a));
    RANK_OK(ccoWindowRegister(comm, static_cast<char*>(mem) + 8192, 65536, &b));
    std::vector<ccoWindow_t> owned(8);
    std::vector<void*> ptrs(8);
    for (int k = 0; k < 8; ++k) RANK_OK(ccoWindowAllocRegister(comm, 1000 + 4096 * k, &ptrs[k], &owned[k]));
    for (int k = 0; k < 8; ++k) {
      void* peer = nullptr;
      RANK_OK(ccoGetPeerPtr(comm, owned[k], (rank + 1) % n, 0, &peer));
      static_cast<int*>(peer)[k] = rank + 100 * k;
    }
    void* pb = nullptr;
    RANK_OK(ccoGetPeerPtr(comm, b, (rank + 1) % n, 100, &pb));
    *static_cast<int*>(pb) = -rank;
    RANK_OK(ccoBarrierAll(comm));
    const int left = (rank + n - 1) % n;
    for (int k = 0; k < 8; ++k) RANK_CHECK(static_cast<int*>(ptrs[k])[k] == left + 100 * k);
    RANK_CHECK(*reinterpret_cast<int*>(static_cast<char*>(mem) + 8192 + 100) == -left);
    RANK_OK(ccoBarrierAll(comm));
    for (int k = 7; k >= 0; --k) RANK_OK(ccoWindowDeregister(comm, owned[k]));
    RANK_OK(ccoWindowDeregister(comm, a));
    // The allocation still has window b: freeing it is refused.
    RANK_CHECK(ccoMemFree(comm, mem) == ccoInvalidUsage);
    RANK_OK(ccoWindowDeregister(comm, b));
    RANK_OK(ccoMemFree(comm, mem));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

TEST_P(CommTest, BarrierOrdersHostWrites) {
  EXPECT_TRUE(RunRanks(GetParam(), [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
    void* mem = nullptr;
    ccoWindow_t win = 0;
    RANK_OK(ccoWindowAllocRegister(comm, 4096, &mem, &win));
    // Round r: rank r % n writes r into every rank's slot 0; all others check after.
    for (int r = 0; r < 200; ++r) {
      if (rank == r % n) {
        for (int p = 0; p < n; ++p) {
          void* dst = nullptr;
          RANK_OK(ccoGetPeerPtr(comm, win, p, 0, &dst));
          *static_cast<volatile int*>(dst) = r;
        }
      }
      RANK_OK(ccoBarrierAll(comm));
      RANK_CHECK(*static_cast<volatile int*>(mem) == r);
      RANK_OK(ccoBarrierAll(comm));
    }
    RANK_OK(ccoWindowDeregister(comm, win));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

// The host mesh's descriptor exchange: a failure while taking one peer's descriptor (an
// import that fails) still receives every other peer's message, so the next exchange reads its
// own messages, not the failed one's leftovers (which would fail it: another operation's tag).
TEST(FdMeshTest, AFailedTakeLeavesTheNextExchangeInStep) {
  constexpr int kRanks = 3;
  std::vector<std::unique_ptr<cco::FdMesh>> meshes(kRanks);
  std::vector<cco::FdMesh::Member> team(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(cco::FdMesh::Listen(&meshes[r]).ok());
    team[r].name = meshes[r]->name();  // pid namespace 0: peers are not matched by pid here
  }
  cco::Key secret;
  secret.bytes[0] = 7;
  EXPECT_TRUE(cco_test::RunRanks(kRanks, [&](int rank, int n, const ccoUniqueId&) {
    cco::FdMesh& mesh = *meshes[rank];
    RANK_CHECK(mesh.Connect(secret, team, rank, 10000).ok());
    const int mine = open("/dev/null", O_RDONLY | O_CLOEXEC);
    RANK_CHECK(mine >= 0);
    int taken = 0;
    cco::Status s = mesh.AllExchange(mine, 1, [&](int member, int fd) {
      close(fd);
      ++taken;
      return rank == 0 && member == 1 ? cco::InternalError("refused") : cco::Status::Ok();
    });
    RANK_CHECK(rank == 0 ? !s.ok() && taken == 1 : s.ok() && taken == n - 1);
    taken = 0;
    s = mesh.AllExchange(mine, 2, [&](int, int fd) {
      close(fd);
      ++taken;
      return cco::Status::Ok();
    });
    RANK_CHECK(s.ok() && taken == n - 1);
    close(mine);
    return 0;
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommTest, ::testing::Values(1, 2, 4, 8), [](const ::testing::TestParamInfo<int>& info) {
  return std::to_string(info.param) + "ranks";
});

}  // namespace
