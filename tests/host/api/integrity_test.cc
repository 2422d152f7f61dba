// SPDX-License-Identifier: MIT
// Memory safety and integrity of the host SDK: abort racing destroy, peers' unterminated
// strings, memory descriptors a peer could truncate, windows over allocations that differ
// between ranks or that would expose more than the window, slice sizes and timeouts that
// would overflow, a hung rank 0, ranks the rendezvous never heard, stale handles that must
// not reach newer communicators, requirements that match only after rounding, and 128 ranks
// as threads of one process running out of file descriptors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/socket.h"
#include "cco/cco.h"
#include "platform/platform.h"
#include "tests/host/testing/multiprocess.h"
#include "topology/topology.h"

namespace {

using cco_test::RunRanks;
using cco_test::RunRanksRaw;
using Clock = std::chrono::steady_clock;

bool LastErrorSays(const char* text) { return strstr(ccoGetLastError(), text) != nullptr; }
double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Whether `size` bytes at `p` can be read by this process (EFAULT instead of a crash).
bool Readable(const void* p, size_t size) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const bool ok = write(fds[1], p, size) == static_cast<ssize_t>(size);
  close(fds[0]);
  close(fds[1]);
  return ok;
}

class IntegrityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("CCO_PLATFORM", "cpu", 1);
    setenv("CCO_TIMEOUT_MS", "2000", 1);
    setenv("CCO_SOCKET_IFNAME", "=lo", 1);
  }
};

// Makes a one-rank communicator 50 times and destroys it while `racers` threads call
// call(comm) until it fails, which must be as "not a live communicator" (the calls overlap the
// whole teardown; ASan and TSan in CI see what they touch).
void RacingADestroy(int racers, const std::function<ccoResult_t(ccoComm*)>& call) {
  for (int round = 0; round < 50; ++round) {
    ccoUniqueId id;
    ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
    ccoComm* comm = nullptr;
    ASSERT_EQ(ccoCommCreate(id, 1, 0, 16 << 20, &comm), ccoSuccess);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < racers; ++t) {
      threads.emplace_back([&] {
        ++ready;
        for (ccoResult_t r = ccoSuccess; r == ccoSuccess;) {
          r = call(comm);
          if (r != ccoSuccess) {
            EXPECT_EQ(r, ccoInvalidUsage);
          }
        }
      });
    }
    while (ready < racers) {
    }
    EXPECT_EQ(ccoCommDestroy(comm), ccoSuccess);
    for (auto& t : threads) t.join();
  }
}

// ccoCommAbort may be called from any thread, a destroy racing it.
TEST_F(IntegrityTest, AbortRacingDestroy) {
  RacingADestroy(1, [](ccoComm* comm) { return ccoCommAbort(comm); });
}

// ccoCommGetAsyncError is a watchdog's poll, from any thread: racing a destroy, it must not
// read the proxy as the destroy lets go of it. It reports OK or "not a live communicator".
TEST_F(IntegrityTest, AsyncErrorPollsRacingDestroy) {
  RacingADestroy(3, [](ccoComm* comm) {
    ccoResult_t async = ccoInternalError;
    const ccoResult_t r = ccoCommGetAsyncError(comm, &async);
    if (r == ccoSuccess) {
      EXPECT_EQ(async, ccoSuccess);
    }
    return r;
  });
}

// A stale handle never reaches the communicator created after it, wherever that one lives.
TEST_F(IntegrityTest, StaleHandlesStayDead) {
  std::vector<ccoComm*> dead;
  for (int i = 0; i < 20; ++i) {
    ccoUniqueId id;
    ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
    ccoComm* comm = nullptr;
    ASSERT_EQ(ccoCommCreate(id, 1, 0, 16 << 20, &comm), ccoSuccess);
    for (ccoComm* old : dead) {
      EXPECT_NE(old, comm);
      int rank = -1;
      EXPECT_EQ(ccoCommRank(old, &rank), ccoInvalidUsage);
      EXPECT_EQ(ccoBarrierAll(old), ccoInvalidUsage);
    }
    int rank = -1;
    EXPECT_EQ(ccoCommRank(comm, &rank), ccoSuccess);
    ASSERT_EQ(ccoCommDestroy(comm), ccoSuccess);
    dead.push_back(comm);
  }
  EXPECT_EQ(ccoCommDestroy(dead.back()), ccoInvalidUsage);
}

// What a peer announces is checked before it is read as text.
TEST_F(IntegrityTest, PeerInfoMustBeWellFormed) {
  cco::RankInfo info;
  memset(&info, 0, sizeof(info));
  info.pid = 42;
  info.platform = ccoPlatformCpu;
  info.granularity = 4096;
  info.totalMemory = 1 << 30;
  strcpy(info.meshName, "cco-mesh-0123abcd");
  EXPECT_TRUE(cco::ValidateRankInfo(info, 3).ok());
  cco::RankInfo bad = info;
  memset(bad.meshName, 'a', sizeof(bad.meshName));  // no terminating NUL
  cco::Status s = cco::ValidateRankInfo(bad, 3);
  EXPECT_EQ(s.code(), ccoRemoteError);
  EXPECT_NE(s.message().find("rank 3"), std::string::npos);
  bad = info;
  memset(bad.busId, '7', sizeof(bad.busId));
  EXPECT_FALSE(cco::ValidateRankInfo(bad, 3).ok());
  bad = info;
  strcpy(bad.meshName, "../etc/passwd");
  EXPECT_FALSE(cco::ValidateRankInfo(bad, 3).ok());
  bad = info;
  bad.granularity = 3000;
  EXPECT_FALSE(cco::ValidateRankInfo(bad, 3).ok());
  bad = info;
  bad.platform = 9;
  EXPECT_FALSE(cco::ValidateRankInfo(bad, 3).ok());
}

// The cpu platform's memory cannot be truncated by a peer holding its descriptor, and a
// descriptor that could be (or of the wrong size, or no memory at all) is refused.
TEST_F(IntegrityTest, MemoryDescriptorsAreSealedAndChecked) {
  cco::Platform* p = nullptr;
  ASSERT_TRUE(cco::CreateCpuPlatform(&p).ok());
  cco::MemHandle mine = 0;
  ASSERT_TRUE(p->Create(0, 1 << 16, &mine).ok());
  int exported = -1;
  ASSERT_TRUE(p->Export(0, mine, &exported).ok());
  EXPECT_EQ(ftruncate(exported, 0), -1) << "a peer could shrink this rank's memory";
  EXPECT_EQ(errno, EPERM);
  cco::MemHandle imported = 0;
  int again = dup(exported);
  EXPECT_TRUE(p->Import(0, again, 1 << 16, &imported).ok());
  EXPECT_TRUE(p->Destroy(0, imported).ok());
  EXPECT_EQ(p->Import(0, exported, 1 << 15, &imported).code(), ccoRemoteError);  // wrong size (and closed)
  int unsealed = memfd_create("x", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(unsealed, 1 << 16), 0);
  cco::Status s = p->Import(0, unsealed, 1 << 16, &imported);
  EXPECT_EQ(s.code(), ccoRemoteError);
  EXPECT_NE(s.message().find("not sealed"), std::string::npos) << s.message();
  int pipes[2];
  ASSERT_EQ(pipe(pipes), 0);
  EXPECT_EQ(p->Import(0, pipes[0], 1 << 16, &imported).code(), ccoRemoteError);
  close(pipes[1]);
  EXPECT_TRUE(p->Destroy(0, mine).ok());
  delete p;
}

// Same window region, different allocations behind it: refused on every rank.
TEST_F(IntegrityTest, WindowsAgreeOnTheAllocationBehindThem) {
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
    void* mem = nullptr;
    RANK_OK(ccoMemAlloc(comm, rank == 0 ? 8192 : 16384, &mem));  // the same offset, other sizes
    ccoWindow_t win = 0;
    RANK_CHECK(ccoWindowRegister(comm, mem, 8192, &win) == ccoInvalidUsage);
    RANK_CHECK(LastErrorSays("allocation behind the window") && LastErrorSays("8192") && LastErrorSays("16384"));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

// A peer's copy is reachable exactly over the window's granules, nothing else of its
// allocation; a second window extends what is reachable, deregistering both removes it.
TEST_F(IntegrityTest, AWindowExposesOnlyItsGranules) {
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
    const size_t page = 4096;
    char* mem = nullptr;
    RANK_OK(ccoMemAlloc(comm, 16 * page, reinterpret_cast<void**>(&mem)));
    ccoWindow_t win = 0;
    RANK_OK(ccoWindowRegister(comm, mem + 4 * page, 2 * page, &win));
    char* peer = nullptr;  // the peer's copy of the allocation's first byte
    RANK_OK(ccoGetPeerPtr(comm, win, 1 - rank, 0, reinterpret_cast<void**>(&peer)));
    peer -= 4 * page;
    RANK_CHECK(Readable(peer + 4 * page, 2 * page));
    RANK_CHECK(!Readable(peer + 3 * page, 1));
    RANK_CHECK(!Readable(peer + 6 * page, 1));
    RANK_CHECK(!Readable(peer, 1));
    ccoWindow_t second = 0;
    RANK_OK(ccoWindowRegister(comm, mem + 10 * page, 100, &second));
    RANK_CHECK(Readable(peer + 10 * page, page));
    RANK_CHECK(!Readable(peer + 8 * page, 1));
    RANK_OK(ccoWindowDeregister(comm, win));
    RANK_OK(ccoWindowDeregister(comm, second));
    RANK_CHECK(!Readable(peer + 4 * page, 1));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

TEST_F(IntegrityTest, SliceSizesThatWouldWrapAreRefused) {
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_CHECK(ccoCommCreate(id, n, rank, SIZE_MAX - 100, &comm) == ccoInvalidArgument);
    RANK_CHECK(LastErrorSays("perRankVmmSize") && LastErrorSays("address space"));
    RANK_CHECK(comm == nullptr);
    return 0;
  }));
}

// Anyone can fill the queue of a listener on an abstract unix name (the descriptor mesh's):
// a blocking connect to it would sleep until the queue drained, past its deadline. The connect
// gives up at the deadline.
TEST_F(IntegrityTest, AConnectToAFullUnixQueueEndsAtItsDeadline) {
  const std::string name = cco::RandomSocketName("cco-test-full-");
  cco::Fd listener;
  ASSERT_TRUE(cco::ListenUnix(name, &listener).ok());
  rlimit saved;  // the queue (1025) and its clients need more descriptors than a default 1024
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit more = saved;
  more.rlim_cur = std::min<rlim_t>(saved.rlim_max, 8192);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &more), 0);
  std::vector<cco::Fd> filling;  // never accepted
  cco::Status filled;
  for (int i = 0; i < 4096 && filled.ok(); ++i) {
    cco::Fd fd;
    filled = cco::ConnectUnix(name, cco::DeadlineIn(0), &fd);
    if (filled.ok()) filling.push_back(std::move(fd));
  }
  ASSERT_EQ(filled.code(), ccoTimeout) << "the listener's queue never filled: " << filled.message();
  const auto start = std::chrono::steady_clock::now();
  cco::Fd fd;
  const cco::Status s = cco::ConnectUnix(name, cco::DeadlineIn(200), &fd);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), ccoTimeout) << s.message();
  EXPECT_NE(s.message().find("queue stayed full"), std::string::npos) << s.message();
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  EXPECT_GE(took, std::chrono::milliseconds(190));
  filling.clear();
  setrlimit(RLIMIT_NOFILE, &saved);
}

// A handle kept after its window or device communicator was destroyed must not name the next
// one made (were the descriptor slot, or the resource carve, reused at once, deregistering it
// again would tear down the live window, and a peer pointer would read past its end). It names
// nothing, and the communicator goes on.
TEST_F(IntegrityTest, StaleWindowAndDevCommHandlesNameNothing) {
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
    const int peer = 1 - rank;
    void* memA = nullptr;
    ccoWindow_t a = 0;
    RANK_OK(ccoWindowAllocRegister(comm, 4096, &memA, &a));
    RANK_OK(ccoWindowDeregister(comm, a));
    void* memB = nullptr;
    ccoWindow_t b = 0;
    RANK_OK(ccoWindowAllocRegister(comm, 8192, &memB, &b));
    RANK_CHECK(b != a);
    void* p = nullptr;
    RANK_CHECK(ccoGetPeerPtr(comm, a, peer, 5000, &p) == ccoInvalidArgument);
    RANK_CHECK(LastErrorSays("not a live window"));
    RANK_CHECK(ccoWindowDeregister(comm, a) == ccoInvalidArgument);  // every rank: agreed, not torn
    RANK_OK(ccoGetPeerPtr(comm, b, peer, 5000, &p));                 // b is untouched
    ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
    reqs.lsaBarrierCount = 1;
    ccoDevComm first, stale, second;
    RANK_OK(ccoDevCommCreate(comm, &reqs, &first));
    stale = first;
    RANK_OK(ccoDevCommDestroy(comm, &first));
    RANK_OK(ccoDevCommCreate(comm, &reqs, &second));
    // The device copy's place is quarantined (memory/descriptor_pool.h): the next one is
    // elsewhere, and the stale handle names nothing live.
    RANK_CHECK(second.ptr != stale.ptr);
    RANK_CHECK(ccoDevCommDestroy(comm, &stale) == ccoInvalidArgument);
    // Once the place is reused, only the serial tells them apart.
    for (int i = 0; i < 1024 && second.ptr != stale.ptr; ++i) {
      RANK_OK(ccoDevCommDestroy(comm, &second));
      RANK_OK(ccoDevCommCreate(comm, &reqs, &second));
    }
    RANK_CHECK(second.ptr == stale.ptr);  // the same place: only the serial tells them apart
    RANK_CHECK(ccoDevCommDestroy(comm, &stale) == ccoInvalidArgument);
    RANK_CHECK(LastErrorSays("not a live device communicator"));
    RANK_OK(ccoDevCommDestroy(comm, &second));
    RANK_OK(ccoWindowDeregister(comm, b));
    RANK_OK(ccoBarrierAll(comm));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

// One rank passes a NULL output pointer to a collective call: returning before the call's
// agreement would leave its peers to time out and the bootstrap out of step for every later
// call. Every rank fails at once, the NULL named, and the communicator goes on.
TEST_F(IntegrityTest, ANullOutputOnOneRankFailsTheCallNotTheCommunicator) {
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
    void* mem = nullptr;
    RANK_OK(ccoMemAlloc(comm, 4096, &mem));
    const bool culprit = rank == 0;
    const auto start = Clock::now();
    ccoWindow_t win = 0;
    RANK_CHECK(ccoWindowRegister(comm, mem, 4096, culprit ? nullptr : &win) != ccoSuccess);
    if (culprit) RANK_CHECK(LastErrorSays("win (the output pointer) is NULL"));
    void* owned = nullptr;
    RANK_CHECK(ccoWindowAllocRegister(comm, 4096, culprit ? nullptr : &owned, &win) != ccoSuccess);
    ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
    ccoDevComm dc;
    RANK_CHECK(ccoDevCommCreate(comm, &reqs, culprit ? nullptr : &dc) != ccoSuccess);
    if (culprit) RANK_CHECK(LastErrorSays("devComm (the output pointer) is NULL"));
    RANK_CHECK(SecondsSince(start) < 1.0);  // CCO_TIMEOUT_MS is 2 s: nobody waited for it
    RANK_OK(ccoBarrierAll(comm));
    RANK_OK(ccoWindowRegister(comm, mem, 4096, &win));
    RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
    RANK_OK(ccoDevCommDestroy(comm, &dc));
    RANK_OK(ccoWindowDeregister(comm, win));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

// A numeric or on/off variable that holds something else must not read as unset, silently (a
// timeout of "1500ms" would wait the default; CCO_ENABLE_SDMA=2 would leave SDMA off): the
// communicator is refused, naming the variable as it was set.
TEST_F(IntegrityTest, MalformedVariablesAreRefusedByName) {
  const struct {
    const char* name;
    const char* value;
  } bad[] = {{"CCO_TIMEOUT_MS", "1500ms"}, {"CCO_TIMEOUT_MS", "-1"},        {"CCO_NET_TIMEOUT_MS", "abc"},
             {"CCO_ENABLE_SDMA", "2"},     {"MORI_ENABLE_SDMA", "garbage"}, {"CCO_TCP_STAGING_BYTES", "64M"}};
  for (const auto& b : bad) {
    const std::string saved = getenv("CCO_TIMEOUT_MS");
    setenv(b.name, b.value, 1);
    ccoUniqueId id;
    ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
    ccoComm* comm = nullptr;
    EXPECT_EQ(ccoCommCreate(id, 1, 0, 16 << 20, &comm), ccoInvalidArgument) << b.name;
    EXPECT_TRUE(LastErrorSays(b.name) && LastErrorSays(b.value)) << ccoGetLastError();
    unsetenv(b.name);
    setenv("CCO_TIMEOUT_MS", saved.c_str(), 1);
  }
  setenv("CCO_ENABLE_SDMA", "Off", 1);  // every accepted spelling, any case
  setenv("CCO_TRACE_PHASES", "", 1);
  ccoUniqueId id;
  ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  ccoComm* comm = nullptr;
  EXPECT_EQ(ccoCommCreate(id, 1, 0, 16 << 20, &comm), ccoSuccess) << ccoGetLastError();
  EXPECT_EQ(ccoCommDestroy(comm), ccoSuccess);
  unsetenv("CCO_ENABLE_SDMA");
  unsetenv("CCO_TRACE_PHASES");
}

// The verbs backend's numbers are refused out of range at creation even where verbs is never
// used (the cpu platform, no RDMA device): a job that runs here fails there otherwise. The
// guide's MORI_ spellings too, named as they were set; the range's ends are accepted.
TEST_F(IntegrityTest, RdmaNumbersOutOfRangeAreRefusedWithoutVerbs) {
  const struct {
    const char* name;
    const char* value;
  } bad[] = {{"MORI_RDMA_TC", "300"}, {"CCO_RDMA_TC", "-1"},         {"CCO_RDMA_SL", "16"},
             {"MORI_RDMA_SL", "x"},   {"CCO_RDMA_GID_INDEX", "256"}, {"CCO_RDMA_TC", ""}};
  // One id throughout: a refused call never reaches its rendezvous root, so the id stays
  // fresh for the accepted call at the end (and no unused root is left running).
  ccoUniqueId id;
  ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  ccoComm* comm = nullptr;
  for (const auto& b : bad) {
    setenv(b.name, b.value, 1);
    EXPECT_EQ(ccoCommCreate(id, 1, 0, 16 << 20, &comm), ccoInvalidArgument) << b.name << "=" << b.value;
    EXPECT_TRUE(LastErrorSays(b.name) && LastErrorSays("not a whole number in 0..")) << ccoGetLastError();
    unsetenv(b.name);
  }
  setenv("MORI_RDMA_TC", "255", 1);
  setenv("CCO_RDMA_SL", "15", 1);
  setenv("CCO_RDMA_GID_INDEX", "0", 1);
  EXPECT_EQ(ccoCommCreate(id, 1, 0, 16 << 20, &comm), ccoSuccess) << ccoGetLastError();
  EXPECT_EQ(ccoCommDestroy(comm), ccoSuccess);
  unsetenv("MORI_RDMA_TC");
  unsetenv("CCO_RDMA_SL");
  unsetenv("CCO_RDMA_GID_INDEX");
}

// A bound of 9.3e12 ms would overflow the clock (undefined behaviour; UBSan in CI): it is
// clamped, means "no bound", and everything works.
TEST_F(IntegrityTest, HugeTimeoutsAreClamped) {
  setenv("CCO_TIMEOUT_MS", "9300000000000", 1);
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
    RANK_OK(ccoBarrierAll(comm));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

// Rank 0 stops answering: the others fail after the bound plus a small margin, naming
// rank 0, not after twice the bound.
TEST_F(IntegrityTest, AHungRankZeroCostsOneBound) {
  std::vector<int> st = RunRanksRaw(
      3,
      [](int rank, int n, const ccoUniqueId& id) {
        ccoComm* comm = nullptr;
        RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
        if (rank == 0) {
          sleep(6);  // hung: never joins the barrier
          return 0;
        }
        const auto start = Clock::now();
        RANK_CHECK(ccoBarrierAll(comm) == ccoTimeout);
        const double s = SecondsSince(start);
        RANK_CHECK(LastErrorSays("rank 0 did not answer"));
        RANK_CHECK(s >= 2.0 && s < 2.6);  // CCO_TIMEOUT_MS = 2000, margin 250 ms
        return 0;
      },
      30);
  EXPECT_EQ(st, (std::vector<int>{0, 0, 0}));
}

// A rank that reaches a failed rendezvous late still hears its verdict.
TEST_F(IntegrityTest, LateRanksHearTheRendezvousVerdict) {
  std::vector<int> st = RunRanksRaw(
      3,
      [](int rank, int, const ccoUniqueId& id) {
        if (rank == 2) usleep(300 * 1000);  // after the root has judged the first two
        ccoComm* comm = nullptr;
        RANK_CHECK(ccoCommCreate(id, rank == 0 ? 2 : 3, rank, 0, &comm) == ccoInvalidUsage);
        RANK_CHECK(LastErrorSays("nRanks=3") && LastErrorSays("nRanks=2"));
        if (rank == 0) usleep(1000 * 1000);  // the root lives in this process: keep it alive
        return 0;
      },
      30);
  EXPECT_EQ(st, (std::vector<int>{0, 0, 0}));
}

// Requirements that differ only below the layout's rounding are still a mismatch.
TEST_F(IntegrityTest, DevCommRequirementsMustMatchExactly) {
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
    ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
    reqs.gdaConnectionType = CCO_GDA_CONNECTION_NONE;
    reqs.lsaBarrierCount = rank == 0 ? 4 : 3;
    ccoDevComm dc;
    RANK_CHECK(ccoDevCommCreate(comm, &reqs, &dc) == ccoInvalidUsage);
    RANK_CHECK(LastErrorSays("lsaBarrierCount=3") && LastErrorSays("lsaBarrierCount") && LastErrorSays("rank 1"));
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

// 128 ranks as threads of one process, one LSA team, under a 1024-descriptor limit: ranks
// of one process map each other's memory without passing descriptors.
TEST_F(IntegrityTest, ManyRanksAsThreadsOfOneProcess) {
  constexpr int kRanks = 128;
  std::vector<int> st = RunRanksRaw(
      1,
      [](int, int, const ccoUniqueId&) {
        rlimit limit;
        getrlimit(RLIMIT_NOFILE, &limit);
        limit.rlim_cur = 1024;
        RANK_CHECK(setrlimit(RLIMIT_NOFILE, &limit) == 0);
        ccoUniqueId id;
        RANK_OK(ccoGetUniqueId(&id));
        std::vector<int> failures(kRanks, -1);
        std::vector<std::thread> threads;
        for (int r = 0; r < kRanks; ++r) {
          threads.emplace_back([&, r] {
            auto fail = [&](int line) {
              fprintf(stderr, "rank %d: line %d: %s\n", r, line, ccoGetLastError());
              failures[r] = line;
            };
            ccoComm* comm = nullptr;
            if (ccoCommCreate(id, kRanks, r, 1 << 20, &comm) != ccoSuccess) return fail(__LINE__);
            void* mem = nullptr;
            ccoWindow_t win = 0;
            if (ccoWindowAllocRegister(comm, 4096, &mem, &win) != ccoSuccess) return fail(__LINE__);
            void* right = nullptr;
            if (ccoGetPeerPtr(comm, win, (r + 1) % kRanks, 0, &right) != ccoSuccess) return fail(__LINE__);
            *static_cast<volatile int*>(right) = r;
            if (ccoBarrierAll(comm) != ccoSuccess) return fail(__LINE__);
            if (*static_cast<volatile int*>(mem) != (r + kRanks - 1) % kRanks) return fail(__LINE__);
            if (ccoBarrierAll(comm) != ccoSuccess) return fail(__LINE__);  // all read before any unmaps
            if (ccoWindowDeregister(comm, win) != ccoSuccess) return fail(__LINE__);
            if (ccoCommDestroy(comm) != ccoSuccess) return fail(__LINE__);
            failures[r] = 0;
          });
        }
        for (auto& t : threads) t.join();
        for (int r = 0; r < kRanks; ++r) RANK_CHECK(failures[r] == 0);
        return 0;
      },
      120);
  EXPECT_EQ(st, std::vector<int>{0});
}

// Out of descriptors in a rank that must export and receive one: the error says what limit
// it hit, and its peer hears at once that it sent no descriptor (it waited for the timeout).
// The frames whose descriptors were lost are still read whole, so the mesh stays in step:
// once descriptors are back, the next registration works (later exchanges failed, reading
// the leftovers as another operation's).
TEST_F(IntegrityTest, DescriptorExhaustionIsNamed) {
  std::vector<int> st = RunRanksRaw(
      2,
      [](int rank, int n, const ccoUniqueId& id) {
        ccoComm* comm = nullptr;
        RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
        void* mem = nullptr;
        RANK_OK(ccoMemAlloc(comm, 4096, &mem));
        std::vector<int> hog;
        rlimit saved;
        getrlimit(RLIMIT_NOFILE, &saved);
        if (rank == 1) {
          // No descriptor left to export or receive memory with.
          for (int fd; (fd = dup(0)) >= 0;) hog.push_back(fd);
          rlimit limit = saved;
          limit.rlim_cur = static_cast<rlim_t>(hog.empty() ? 3 : hog.back() + 1);
          setrlimit(RLIMIT_NOFILE, &limit);
        }
        ccoWindow_t win = 0;
        const auto start = Clock::now();
        RANK_CHECK(ccoWindowRegister(comm, mem, 4096, &win) != ccoSuccess);
        if (rank == 1) RANK_CHECK(LastErrorSays("RLIMIT_NOFILE"));
        if (rank == 0) {
          RANK_CHECK(LastErrorSays("sent no descriptor"));
          RANK_CHECK(SecondsSince(start) < 1.5);  // CCO_TIMEOUT_MS is 2 s
        }
        for (int fd : hog) close(fd);
        setrlimit(RLIMIT_NOFILE, &saved);
        RANK_OK(ccoWindowRegister(comm, mem, 4096, &win));
        RANK_OK(ccoWindowDeregister(comm, win));
        RANK_OK(ccoCommDestroy(comm));
        return 0;
      },
      30);
  EXPECT_EQ(st, (std::vector<int>{0, 0}));
}

}  // namespace
