// SPDX-License-Identifier: MIT
// The device LSA barrier compiled for the host (device/arch/host.h) and run by ranks that
// are threads of one process, over real communicators on the cpu platform: the same
// epochs, inboxes and peer addressing a GPU kernel uses.
#include <gtest/gtest.h>
#include <stdint.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "device/cco_device.hpp"

namespace {

// Creates one communicator per thread-rank and runs body(rank, comm, devComm, window
// memory) on each; returns the number of ranks whose body failed.
template <class Body> int RunThreadRanks(int n, int barriers, Body body) {
  setenv("CCO_PLATFORM", "cpu", 1);
  ccoUniqueId id;
  if (ccoGetUniqueId(&id) != ccoSuccess) return n;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ccoComm* comm = nullptr;
      ccoDevComm dc;
      void* mem = nullptr;
      ccoWindow_t win = 0;
      ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
      reqs.lsaBarrierCount = barriers;
      if (ccoCommCreate(id, n, r, 8 << 20, &comm) != ccoSuccess || ccoDevCommCreate(comm, &reqs, &dc) != ccoSuccess ||
          ccoWindowAllocRegister(comm, 4096, &mem, &win) != ccoSuccess) {
        fprintf(stderr, "rank %d setup: %s\n", r, ccoGetLastError());
        ++failures;
        return;
      }
      if (!body(r, comm, dc, win)) ++failures;
      ccoWindowDeregister(comm, win);
      ccoDevCommDestroy(comm, &dc);
      ccoCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

// A window's LSA addresses: up to its end (one past the end included), and 0 for a peer
// outside the team (a world rank far below it too: no int32 overflow), an offset past the
// end, no window, or a deregistered window's zeroed descriptor.
TEST(LsaPointers, InsideTheWindowOnly) {
  EXPECT_EQ(RunThreadRanks(
                2, 1,
                [](int rank, ccoComm*, const ccoDevComm&, ccoWindow_t handle) {
                  const auto* w = reinterpret_cast<const ccoWindowDevice*>(handle);
                  const uint64_t base = cco::lsa_local_address(w, 0);
                  bool ok = base != 0 && cco::lsa_peer_address(w, rank, 0) == base &&
                            cco::lsa_local_address(w, 4096) == base + 4096;
                  ok = ok && cco::lsa_peer_address(w, 1 - rank, 4096) != 0 &&
                       cco::lsa_world_peer_address(w, 1 - rank, 8) != 0;
                  ok = ok && cco::lsa_local_address(w, 4097) == 0 &&
                       cco::lsa_peer_address(w, 1 - rank, ~uint64_t{0}) == 0;
                  ok = ok && cco::lsa_peer_address(w, 2, 0) == 0 && cco::lsa_peer_address(w, -1, 0) == 0;
                  ok = ok && cco::lsa_world_peer_address(w, INT32_MIN, 0) == 0 &&
                       cco::lsa_world_peer_address(w, INT32_MAX, 0) == 0;
                  ok = ok && cco::lsa_local_address(nullptr, 0) == 0 && cco::lsa_peer_address(nullptr, 0, 0) == 0;
                  const ccoWindowDevice stale{};
                  ok = ok && cco::lsa_local_address(&stale, 0) == 0 && cco::lsa_world_peer_address(&stale, 0, 0) == 0;
                  return ok;
                }),
            0);
}

// Many rounds; in round k each rank writes k into every peer's slot for it, then after
// the barrier checks every slot of its own holds k: a barrier that lets anyone through
// early shows up as a stale value.
TEST(LsaBarrierOnHost, ManyRoundsOrderWrites) {
  const int n = 4;
  EXPECT_EQ(
      RunThreadRanks(
          n, 2,
          [n](int rank, ccoComm*, const ccoDevComm& dc, ccoWindow_t win) {
            auto* mine = reinterpret_cast<volatile uint64_t*>(
                cco::lsa_local_address(reinterpret_cast<const ccoWindowDevice*>(win), 0));
            for (uint64_t k = 1; k <= 20000; ++k) {
              for (int p = 0; p < n; ++p)
                cco::lsa_peer_ptr<volatile uint64_t>(reinterpret_cast<const ccoWindowDevice*>(win), p, 8 * rank)[0] = k;
              if (ccoLsaBarrierSession<ccoCoopThread>(ccoCoopThread(), dc, k % 2).sync() != CCO_DEVICE_STATUS_OK)
                return false;
              for (int p = 0; p < n; ++p)
                if (mine[p] != k) {
                  fprintf(stderr, "rank %d round %llu: slot %d holds %llu\n", rank, (unsigned long long)k, p,
                          (unsigned long long)mine[p]);
                  return false;
                }
              // A second barrier so nobody overwrites a slot before its owner checked it.
              if (ccoLsaBarrierSession<ccoCoopThread>(ccoCoopThread(), dc, 1 - k % 2).sync() != CCO_DEVICE_STATUS_OK)
                return false;
            }
            return true;
          }),
      0);
}

// Two sessions kept alive on one barrier index, taking turns (and a one-round session in
// between): each round of each is a barrier of its own, so the writes of round k are all in
// before anyone checks them. A session that kept its target instead of reading the epoch
// would pair its rounds with the other session's and let ranks through early.
TEST(LsaBarrierOnHost, KeptSessionsOnOneIndexTakeTurns) {
  const int n = 3;
  EXPECT_EQ(RunThreadRanks(n, 1,
                           [n](int rank, ccoComm*, const ccoDevComm& dc, ccoWindow_t win) {
                             const auto* w = reinterpret_cast<const ccoWindowDevice*>(win);
                             auto* mine = reinterpret_cast<volatile uint64_t*>(cco::lsa_local_address(w, 0));
                             ccoLsaBarrierSession<ccoCoopThread> a(ccoCoopThread(), dc, 0), b(ccoCoopThread(), dc, 0);
                             for (uint64_t k = 1; k <= 6000; ++k) {
                               for (int p = 0; p < n; ++p) cco::lsa_peer_ptr<volatile uint64_t>(w, p, 8 * rank)[0] = k;
                               ccoLsaBarrierSession<ccoCoopThread>& first = k % 2 ? a : b;
                               if (first.sync() != CCO_DEVICE_STATUS_OK) return false;
                               for (int p = 0; p < n; ++p)
                                 if (mine[p] != k) {
                                   fprintf(stderr, "rank %d round %llu: slot %d holds %llu\n", rank,
                                           (unsigned long long)k, p, (unsigned long long)mine[p]);
                                   return false;
                                 }
                               // Nobody overwrites a slot before its owner checked it: the other kept session, or a
                               // session of one round.
                               const int32_t status =
                                   k % 3 ? (k % 2 ? b : a).sync()
                                         : ccoLsaBarrierSession<ccoCoopThread>(ccoCoopThread(), dc, 0).sync();
                               if (status != CCO_DEVICE_STATUS_OK) return false;
                             }
                             return true;
                           }),
            0);
}

// The memory orders: a write before arrive(RELEASE) is seen after wait(ACQUIRE), as with
// the default sync; the other orders still synchronise (each rank picks its own order, and
// rounds of every order interleave), 5000 rounds, every status OK and every epoch exact.
TEST(LsaBarrierOnHost, MemoryOrders) {
  const int n = 3;
  EXPECT_EQ(RunThreadRanks(n, 1,
                           [n](int rank, ccoComm*, const ccoDevComm& dc, ccoWindow_t win) {
                             const auto* w = reinterpret_cast<const ccoWindowDevice*>(win);
                             auto* mine = reinterpret_cast<volatile uint64_t*>(cco::lsa_local_address(w, 0));
                             const ccoMemoryOrder orders[] = {CCO_MEMORY_ORDER_RELAXED, CCO_MEMORY_ORDER_ACQUIRE,
                                                              CCO_MEMORY_ORDER_RELEASE, CCO_MEMORY_ORDER_ACQ_REL};
                             const uint64_t res = dc.lsaFlatBase + dc.lsaRank * dc.lsaStride + dc.resourceOffset;
                             const auto* epoch = reinterpret_cast<const uint32_t*>(res + dc.lsaBarrierEpochOffset);
                             const uint32_t first = *epoch;
                             const uint32_t rounds = 5000;
                             for (uint32_t k = 1; k <= rounds; ++k) {
                               ccoLsaBarrierSession<ccoCoopThread> bar(ccoCoopThread(), dc, 0);
                               if (k % 4 == 0) {  // data: written before a release arrive, read after an acquire wait
                                 for (int p = 0; p < n; ++p)
                                   cco::lsa_peer_ptr<volatile uint64_t>(w, p, 8 * rank)[0] = k;
                                 bar.arrive(CCO_MEMORY_ORDER_RELEASE);
                                 if (bar.wait(CCO_MEMORY_ORDER_ACQUIRE) != CCO_DEVICE_STATUS_OK) return false;
                                 for (int p = 0; p < n; ++p)
                                   if (mine[p] != k) return false;
                               } else if (bar.sync(orders[(k + rank) % 4]) != CCO_DEVICE_STATUS_OK) {
                                 return false;
                               }
                             }
                             return *epoch == first + rounds;
                           }),
            0);
}

// Epochs are 32-bit and wrap: rounds across the wrap still synchronise.
TEST(LsaBarrierOnHost, EpochWrapsAround) {
  const int n = 2;
  EXPECT_EQ(
      RunThreadRanks(n, 1,
                     [](int, ccoComm* comm, const ccoDevComm& dc, ccoWindow_t) {
                       // Move this rank's epoch and its inbox slots just below the wrap (both ranks do it
                       // before the host barrier, so no round is in flight).
                       const uint64_t res = dc.lsaFlatBase + dc.lsaRank * dc.lsaStride + dc.resourceOffset;
                       *reinterpret_cast<uint32_t*>(res + dc.lsaBarrierEpochOffset) = 0xFFFFFFF0u;
                       for (int p = 0; p < dc.lsaSize; ++p)
                         reinterpret_cast<uint32_t*>(res + dc.lsaBarrierInboxOffset)[p] = 0xFFFFFFF0u;
                       if (ccoBarrierAll(comm) != ccoSuccess) return false;
                       for (int k = 0; k < 64; ++k)
                         if (ccoLsaBarrierSession<ccoCoopThread>(ccoCoopThread(), dc, 0).sync() != CCO_DEVICE_STATUS_OK)
                           return false;
                       return *reinterpret_cast<uint32_t*>(res + dc.lsaBarrierEpochOffset) == 0xFFFFFFF0u + 64;
                     }),
      0);
}

// A peer that never arrives: the timeout variant reports it; abort ends a plain wait.
TEST(LsaBarrierOnHost, TimeoutAndAbort) {
  const int n = 2;
  std::atomic<ccoComm*> waiter{nullptr};
  EXPECT_EQ(
      RunThreadRanks(
          n, 1,
          [&](int rank, ccoComm* comm, const ccoDevComm& dc, ccoWindow_t) {
            if (rank == 1) {
              // Never arrives at the device barrier; aborts rank 0 once it timed out once.
              while (waiter.load() == nullptr) std::this_thread::yield();
              std::this_thread::sleep_for(std::chrono::milliseconds(300));
              return ccoCommAbort(waiter.load()) == ccoSuccess;
            }
            int32_t s = ccoLsaBarrierSession<ccoCoopThread>(ccoCoopThread(), dc, 0).sync(50 * 1000 * 1000);  // 50 ms
            if (s != CCO_DEVICE_STATUS_TIMEOUT) return false;
            waiter = comm;
            s = ccoLsaBarrierSession<ccoCoopThread>(ccoCoopThread(), dc, 0).sync(CCO_NO_TIMEOUT);  // only abort ends it
            return s == CCO_DEVICE_STATUS_ABORTED;
          }),
      0);
}

// The pattern of `cco perf`'s CCO split (cco_tools/perf/kernels/ops_split.py) with 4 ranks:
// programs as threads, program i entering barrier i and leaving with sync(RELEASE), kernels of
// 16, 4 and then all 33 programs, so that the last one's barriers 16..32 are used for the first
// time after 0..15 went through several rounds. Each program writes its rank's value for the
// kernel into its own word of every peer before entering (so it enters with ACQ_REL, where the
// split, whose sources earlier kernels wrote, enters with ACQUIRE); after entering, the peers'
// words must hold theirs.
TEST(LsaBarrierOnHost, KernelsOfDifferentSizesUseTheirBarriersInStep) {
  const int n = 4;
  const int barriers = 33;
  EXPECT_EQ(RunThreadRanks(n, barriers,
                           [n](int rank, ccoComm*, const ccoDevComm& dc, ccoWindow_t win) {
                             const auto* w = reinterpret_cast<const ccoWindowDevice*>(win);
                             std::atomic<bool> ok{true};
                             int kernel = 0;
                             for (int grid : {16, 16, 4, 4, 33, 33}) {
                               ++kernel;
                               std::vector<std::thread> programs;
                               for (int pid = 0; pid < grid; ++pid) {
                                 programs.emplace_back([&, pid, kernel] {
                                   const uint64_t word =
                                       8 * (static_cast<uint64_t>(pid) * n + rank);  // pid's word for this rank
                                   for (int p = 0; p < n; ++p)
                                     cco::lsa_peer_ptr<volatile uint64_t>(w, p, word)[0] = kernel;
                                   ccoLsaBarrierSession<ccoCoopThread> entered(ccoCoopThread(), dc, pid);
                                   if (entered.sync(CCO_MEMORY_ORDER_ACQ_REL) != CCO_DEVICE_STATUS_OK) ok = false;
                                   const auto* mine =
                                       reinterpret_cast<volatile uint64_t*>(cco::lsa_local_address(w, 0));
                                   for (int p = 0; p < n; ++p)
                                     if (mine[pid * n + p] != static_cast<uint64_t>(kernel)) ok = false;
                                   ccoLsaBarrierSession<ccoCoopThread> left(ccoCoopThread(), dc, pid);
                                   if (left.sync(CCO_MEMORY_ORDER_RELEASE) != CCO_DEVICE_STATUS_OK) ok = false;
                                 });
                               }
                               for (auto& t : programs) t.join();
                               if (!ok) {
                                 fprintf(stderr, "rank %d: kernel %d of %d programs failed\n", rank, kernel, grid);
                                 return false;
                               }
                             }
                             return true;
                           }),
            0);
}

// A session of a barrier the device communicator does not have touches no memory (its
// words would be other resources', on every peer too): arrive does nothing, wait and sync
// are refused.
TEST(LsaBarrierOnHost, AnIndexPastTheCountIsRefused) {
  EXPECT_EQ(RunThreadRanks(2, 1,
                           [&](int, ccoComm* comm, const ccoDevComm& dc, ccoWindow_t) {
                             void* mine = nullptr;
                             if (ccoGetPeerPtr(comm, dc.resourceWindow, dc.lsaRank, 0, &mine) != ccoSuccess)
                               return false;
                             const unsigned char* resources =
                                 static_cast<const unsigned char*>(mine);  // the window's start
                             std::vector<unsigned char> before(resources, resources + 4096);
                             if (ccoBarrierAll(comm) != ccoSuccess) return false;
                             ccoLsaBarrierSession<ccoCoopThread> beyond(ccoCoopThread(), dc, 1);
                             beyond.arrive();
                             if (beyond.wait(CCO_NO_TIMEOUT) != CCO_DEVICE_STATUS_INVALID_ARGUMENT) return false;
                             if (beyond.sync() != CCO_DEVICE_STATUS_INVALID_ARGUMENT) return false;
                             if (ccoBarrierAll(comm) != ccoSuccess) return false;
                             return std::equal(before.begin(), before.end(), resources);
                           }),
            0);
}

}  // namespace
