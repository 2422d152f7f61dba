// SPDX-License-Identifier: MIT
// Lifecycles: 200 create/destroy cycles leave no descriptor, mapping, thread or memory
// behind; communicators created and driven from many threads at once; ranks that share
// one process; abort wakes a blocked call.
#include <dirent.h>
#include <malloc.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "tests/host/testing/multiprocess.h"

namespace {

using cco_test::RunRanks;

int CountEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  for (dirent* e; (e = readdir(d)) != nullptr;) n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

// CCO's own mappings: symmetric memory (memfd) and address-space reservations (16 MiB
// and up, inaccessible). Counting every line would count malloc arenas and cached thread
// stacks, which glibc keeps and reuses on its own schedule.
int CountCcoMappings() {
  std::ifstream in("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    const bool reservation = std::string(perms) == "---p" && hi - lo >= (16ul << 20);
    n += reservation || line.find("memfd:cco") != std::string::npos;
  }
  return n;
}

// Heap bytes in use, over every malloc arena. Exact where RSS is not: RSS moves with
// arenas that glibc keeps for threads and trims on its own schedule.
size_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

struct Footprint {
  int fds, maps, threads;
  size_t heap;
};

// Taken where every rank is inside a live communicator, before a barrier: no peer can
// yet connect to the next cycle's rendezvous root, so nothing is in flight. Each rank then
// runs its own threads and its communicator's proxy thread (which watches the host peers),
// and rank 0 the watch of the next id's root, which waits for its ranks; the root of the
// cycle just joined may still be on its way out, so wait for it (a loaded CI machine can
// take a while to schedule it).
int g_baseThreads = 1;  // the rank process's own threads before any communicator (see CyclesLeaveNothingBehind)
Footprint Measure(int rank) {
  const int expectedThreads = g_baseThreads + (rank == 0 ? 2 : 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (CountEntries("/proc/self/task") > expectedThreads && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return Footprint{CountEntries("/proc/self/fd"), CountCcoMappings(), CountEntries("/proc/self/task"), HeapInUse()};
}

// One full cycle: create, allocate, register, write a peer, devcomm, tear down. Rank 0
// mints the next cycle's id and hands it over through symmetric memory. With `footprint`
// set, the cycle measures itself at the quiet point described at Measure.
// keepDevComm: the device communicator has GDA rings and SDMA queues, and is left for
// ccoCommDestroy to free (what a caller that failed or was aborted mid-step does).
int Cycle(int rank, int n, ccoUniqueId* id, Footprint* footprint = nullptr, bool keepDevComm = false) {
  ccoComm* comm = nullptr;
  RANK_OK(ccoCommCreate(*id, n, rank, 8 << 20, &comm));
  void* mem = nullptr;
  ccoWindow_t win = 0;
  RANK_OK(ccoWindowAllocRegister(comm, sizeof(ccoUniqueId) + 4096, &mem, &win));
  ccoUniqueId next;
  if (rank == 0) {
    RANK_OK(ccoGetUniqueId(&next));
    for (int p = 1; p < n; ++p) {
      void* dst = nullptr;
      RANK_OK(ccoGetPeerPtr(comm, win, p, 0, &dst));
      memcpy(dst, &next, sizeof(next));
    }
  }
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = 2;
  if (keepDevComm) {
    reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
    reqs.sdmaQueueCount = 2;
  }
  ccoDevComm dc;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
  RANK_OK(ccoBarrierAll(comm));
  if (rank != 0) memcpy(&next, mem, sizeof(next));
  if (!keepDevComm) RANK_OK(ccoDevCommDestroy(comm, &dc));
  RANK_OK(ccoWindowDeregister(comm, win));
  if (footprint != nullptr) *footprint = Measure(rank);
  RANK_OK(ccoBarrierAll(comm));
  RANK_OK(ccoCommDestroy(comm));
  *id = next;
  return 0;
}

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One malloc arena: otherwise a thread that meets contention gets a new 64 MiB arena,
    // which looks like a reservation to CountCcoMappings and is glibc's, not ours.
    mallopt(M_ARENA_MAX, 1);
    setenv("CCO_PLATFORM", "cpu", 1);
    setenv("CCO_TIMEOUT_MS", "20000", 1);
  }
};

// `cycles` cycles, each creating and destroying everything (or, keepDevComm, leaving its
// device communicator to ccoCommDestroy), leave no descriptor, mapping, thread or heap behind.
void CyclesLeaveNothingBehind(int cycles, bool keepDevComm) {
  EXPECT_TRUE(RunRanks(
      2,
      [cycles, keepDevComm](int rank, int n, const ccoUniqueId& first) {
        // A sanitizer may keep a thread of its own, started with the first thread it sees.
        std::thread([] {}).join();
        g_baseThreads = CountEntries("/proc/self/task");
        ccoUniqueId id = first;
        for (int i = 0; i < 10; ++i) RANK_CHECK(Cycle(rank, n, &id, nullptr, keepDevComm) == 0);  // warm up allocators
        Footprint before{}, after{};
        RANK_CHECK(Cycle(rank, n, &id, &before, keepDevComm) == 0);
        for (int i = 0; i < cycles; ++i) RANK_CHECK(Cycle(rank, n, &id, nullptr, keepDevComm) == 0);
        RANK_CHECK(Cycle(rank, n, &id, &after, keepDevComm) == 0);
        fprintf(stderr, "rank %d: fds %d->%d maps %d->%d threads %d->%d heap %zu->%zu B\n", rank, before.fds, after.fds,
                before.maps, after.maps, before.threads, after.threads, before.heap, after.heap);
        RANK_CHECK(after.fds == before.fds);
        RANK_CHECK(after.maps == before.maps);
        RANK_CHECK(after.threads == before.threads);
#if defined(__SANITIZE_ADDRESS__)
    // ASan's allocator is not glibc's, so mallinfo2 sees none of it; its leak checker
    // judges the heap at exit instead.
#else
        // 200 cycles: a leak of 82 bytes or more a cycle passes the bound (20: 820 bytes).
        RANK_CHECK(after.heap <= before.heap + 16384);
#endif
        // The last minted id's root still waits for its ranks: use it so it ends too.
        ccoComm* comm = nullptr;
        RANK_OK(ccoCommCreate(id, n, rank, 8 << 20, &comm));
        RANK_OK(ccoCommDestroy(comm));
        return 0;
      },
      120));
}

TEST_F(LifecycleTest, TwoHundredCyclesLeaveNothingBehind) { CyclesLeaveNothingBehind(200, false); }

// ccoCommDestroy freed a live device communicator's GDA rings but not its SDMA queues
// (their streams, rings and signal pools: ~75 KB a cycle on the cpu platform). Fewer cycles:
// each starts a proxy thread, which spins a while after its last work.
TEST_F(LifecycleTest, DeviceCommunicatorsLeftToCommDestroyLeaveNothingBehind) {
  setenv("CCO_ENABLE_SDMA", "1", 1);
  CyclesLeaveNothingBehind(20, true);
  unsetenv("CCO_ENABLE_SDMA");
}

// Four communicators per process, each driven by its own thread, all at once.
TEST_F(LifecycleTest, CommunicatorsInThreadsAtOnce) {
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    constexpr int kComms = 4;
    ccoComm* world = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 8 << 20, &world));
    void* mem = nullptr;
    ccoWindow_t win = 0;
    RANK_OK(ccoWindowAllocRegister(world, kComms * sizeof(ccoUniqueId), &mem, &win));
    if (rank == 0) {
      void* dst = nullptr;
      RANK_OK(ccoGetPeerPtr(world, win, 1, 0, &dst));
      for (int k = 0; k < kComms; ++k) RANK_OK(ccoGetUniqueId(static_cast<ccoUniqueId*>(dst) + k));
      memcpy(mem, dst, kComms * sizeof(ccoUniqueId));
    }
    RANK_OK(ccoBarrierAll(world));
    std::vector<ccoUniqueId> ids(static_cast<ccoUniqueId*>(mem), static_cast<ccoUniqueId*>(mem) + kComms);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < kComms; ++k) {
      threads.emplace_back([&, k] {
        ccoComm* comm = nullptr;
        if (ccoCommCreate(ids[k], n, rank, 8 << 20, &comm) != ccoSuccess) {
          fprintf(stderr, "thread %d: %s\n", k, ccoGetLastError());
          ++failures;
          return;
        }
        for (int round = 0; round < 20; ++round) {
          void* m = nullptr;
          ccoWindow_t w = 0;
          bool ok = ccoWindowAllocRegister(comm, 4096 * (k + 1), &m, &w) == ccoSuccess;
          void* peer = nullptr;
          ok = ok && ccoGetPeerPtr(comm, w, 1 - rank, 0, &peer) == ccoSuccess;
          if (ok) static_cast<int*>(peer)[0] = k * 100 + round + rank;
          ok = ok && ccoBarrierAll(comm) == ccoSuccess;
          ok = ok && static_cast<int*>(m)[0] == k * 100 + round + (1 - rank);
          ok = ok && ccoWindowDeregister(comm, w) == ccoSuccess;
          if (!ok) {
            fprintf(stderr, "thread %d round %d: %s\n", k, round, ccoGetLastError());
            ++failures;
            break;
          }
        }
        if (ccoCommDestroy(comm) != ccoSuccess) ++failures;
      });
    }
    for (auto& t : threads) t.join();
    RANK_CHECK(failures == 0);
    RANK_OK(ccoWindowDeregister(world, win));
    RANK_OK(ccoCommDestroy(world));
    return 0;
  }));
}

// Ranks of one communicator as threads of one process (what `cco perf` does when ranks
// share a GPU): one LSA team, and writes through peer pointers arrive.
TEST_F(LifecycleTest, RanksAsThreadsOfOneProcess) {
  constexpr int kRanks = 4;
  ccoUniqueId id;
  ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      ccoComm* comm = nullptr;
      void* mem = nullptr;
      ccoWindow_t win = 0;
      void* peer = nullptr;
      bool ok = ccoCommCreate(id, kRanks, r, 8 << 20, &comm) == ccoSuccess &&
                ccoWindowAllocRegister(comm, 8192, &mem, &win) == ccoSuccess &&
                ccoGetPeerPtr(comm, win, (r + 1) % kRanks, 0, &peer) == ccoSuccess;
      if (ok) static_cast<int*>(peer)[1] = 7000 + r;
      ok = ok && ccoBarrierAll(comm) == ccoSuccess;
      ok = ok && static_cast<int*>(mem)[1] == 7000 + (r + kRanks - 1) % kRanks;
      ok = ok && ccoWindowDeregister(comm, win) == ccoSuccess && ccoCommDestroy(comm) == ccoSuccess;
      if (!ok) {
        fprintf(stderr, "rank %d: %s\n", r, ccoGetLastError());
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
}

// ccoCommAbort from another thread ends a barrier that would otherwise wait for a rank
// that never comes, and raises the device-visible abort flag.
TEST_F(LifecycleTest, AbortWakesABlockedBarrier) {
  setenv("CCO_TIMEOUT_MS", "30000", 1);
  EXPECT_TRUE(RunRanks(2, [](int rank, int n, const ccoUniqueId& id) {
    ccoComm* comm = nullptr;
    RANK_OK(ccoCommCreate(id, n, rank, 8 << 20, &comm));
    ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
    ccoDevComm dc;
    RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
    if (rank == 1) {
      sleep(3);  // never joins the barrier below
      RANK_OK(ccoCommDestroy(comm));
      return 0;
    }
    RANK_CHECK(__atomic_load_n(reinterpret_cast<uint32_t*>(dc.abortFlag), __ATOMIC_ACQUIRE) == 0);
    std::thread aborter([comm] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ccoCommAbort(comm);
    });
    const auto t0 = std::chrono::steady_clock::now();
    ccoResult_t r = ccoBarrierAll(comm);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    aborter.join();
    RANK_CHECK(r == ccoAborted);
    RANK_CHECK(waited < 2.0);
    RANK_CHECK(__atomic_load_n(reinterpret_cast<uint32_t*>(dc.abortFlag), __ATOMIC_ACQUIRE) == 1);
    RANK_CHECK(ccoBarrierAll(comm) == ccoAborted);  // and every later call
    RANK_OK(ccoCommDestroy(comm));
    return 0;
  }));
}

}  // namespace
