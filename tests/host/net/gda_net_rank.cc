// SPDX-License-Identifier: MIT
// One rank of the network tests (netns_test.py runs each in a network namespace of its own,
// a "host" with CCO_HOSTID set, on the cpu platform). Rank 0 mints the unique id and leaves
// it in $CCO_TEST_ID_FILE; the others wait for the file, bounded.
//
//   gda_net_rank matrix RANK N           the GDA matrix (gda_matrix_cells.h) on FULL, CROSSNODE, RAIL
//   gda_net_rank bulk RANK N BYTES ROUNDS each rank puts BYTES to the next with a signal, ROUNDS times,
//                                        and checks every byte it got (a throttled link's pipeline)
//   gda_net_rank dead RANK N VICTIM      the victim says "ready" on stdout and waits to be killed or cut
//                                        off; the others put to it until that fails, and check that
//                                        the failure names it, within the bound, and that nothing hangs
//   gda_net_rank aside RANK 2 ROUNDS     posts by a thread that never waits, while the proxy thread
//                                        stands aside for another thread's waits, then alone (Aside)
//
// Exit 0: every check held.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "device/cco_device.hpp"
#include "device/gda.hpp"
#include "tests/device/gda_matrix_cells.h"
#include "tests/device/gda_ranks.h"
#include "tests/host/testing/multiprocess.h"  // RANK_CHECK
#include "tools/perf/id_file.h"

namespace {

using namespace cco::gda_test;
using Clock = std::chrono::steady_clock;

ccoDevCommRequirements Requirements(int type) {
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = type;
  reqs.gdaContextCount = 2;
  reqs.gdaBarrierCount = 2;
  return reqs;
}

int Matrix(ccoComm* comm, int rank, int n) {
  void* mem = nullptr;
  Rank k;
  k.rank = rank;
  k.n = n;
  k.comm = comm;
  RANK_CHECK(ccoWindowAllocRegister(comm, kWindow, &mem, &k.win) == ccoSuccess);
  k.mem = static_cast<unsigned char*>(mem);
  for (int type : {CCO_GDA_CONNECTION_FULL, CCO_GDA_CONNECTION_CROSSNODE, CCO_GDA_CONNECTION_RAIL}) {
    ccoDevCommRequirements reqs = Requirements(type);
    RANK_CHECK(ccoDevCommCreate(comm, &reqs, &k.dc) == ccoSuccess);
    if (!EveryCell(k)) {
      fprintf(stderr, "rank %d: the matrix failed on connection type %d\n", rank, type);
      return 1;
    }
    RANK_CHECK(ccoDevCommDestroy(comm, &k.dc) == ccoSuccess);
  }
  RANK_CHECK(ccoWindowDeregister(comm, k.win) == ccoSuccess);
  return 0;
}

uint8_t Byte(int rank, int round, uint64_t i) {
  return static_cast<uint8_t>(rank * 37 + round * 11 + i * 131 + (i >> 12));
}

int Bulk(ccoComm* comm, int rank, int n, uint64_t bytes, int rounds) {
  void* mem = nullptr;
  ccoWindow_t win = 0;
  RANK_CHECK(ccoWindowAllocRegister(comm, 2 * bytes, &mem, &win) == ccoSuccess);
  auto* p = static_cast<uint8_t*>(mem);
  ccoDevCommRequirements reqs = Requirements(CCO_GDA_CONNECTION_FULL);
  ccoDevComm dc;
  RANK_CHECK(ccoDevCommCreate(comm, &reqs, &dc) == ccoSuccess);
  {
    ccoGda<> gda(dc, 0, 120'000'000'000ull);
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    for (int round = 0; round < rounds; ++round) {
      for (uint64_t i = 0; i < bytes; ++i) p[i] = Byte(rank, round, i);
      memset(p + bytes, 0, bytes);
      RANK_CHECK(ccoBarrierAll(comm) == ccoSuccess);
      RANK_CHECK(gda.put(next, win, bytes, win, 0, bytes, CCO_SIGNAL_INC, 0) == CCO_DEVICE_STATUS_OK);
      RANK_CHECK(gda.wait_signal(0, 1) == CCO_DEVICE_STATUS_OK);
      RANK_CHECK(gda.flush() == CCO_DEVICE_STATUS_OK);
      for (uint64_t i = 0; i < bytes; ++i)
        if (p[bytes + i] != Byte(prev, round, i)) {
          fprintf(stderr, "rank %d round %d: byte %llu from rank %d is %u, expected %u\n", rank, round,
                  static_cast<unsigned long long>(i), prev, p[bytes + i], Byte(prev, round, i));
          return 1;
        }
      RANK_CHECK(ccoBarrierAll(comm) == ccoSuccess);
    }
  }
  RANK_CHECK(ccoDevCommDestroy(comm, &dc) == ccoSuccess);
  RANK_CHECK(ccoWindowDeregister(comm, win) == ccoSuccess);
  return 0;
}

// A window of `bytes` and a FULL device communicator, every rank past both: 0, else 1.
int OpenFull(ccoComm* comm, size_t bytes, ccoWindow_t* win, ccoDevComm* dc) {
  void* mem = nullptr;
  RANK_CHECK(ccoWindowAllocRegister(comm, bytes, &mem, win) == ccoSuccess);
  ccoDevCommRequirements reqs = Requirements(CCO_GDA_CONNECTION_FULL);
  RANK_CHECK(ccoDevCommCreate(comm, &reqs, dc) == ccoSuccess);
  RANK_CHECK(ccoBarrierAll(comm) == ccoSuccess);
  return 0;
}

int Dead(ccoComm* comm, int rank, int victim) {
  ccoWindow_t win = 0;
  ccoDevComm dc;
  if (OpenFull(comm, 1 << 20, &win, &dc) != 0) return 1;
  if (rank == victim) {
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();  // killed, or cut off and then killed, by the driver
  }
  // Puts to the victim succeed while it lives; once it is gone they must fail, naming it,
  // within the network bound (CCO_NET_TIMEOUT_MS), and not hang.
  const int64_t boundMs = atoll(getenv("CCO_NET_TIMEOUT_MS"));
  ccoGda<> gda(dc, 0, 120'000'000'000ull);
  const Clock::time_point start = Clock::now();
  Clock::time_point lastGood = start;
  int32_t status = CCO_DEVICE_STATUS_OK;
  while (status == CCO_DEVICE_STATUS_OK && Clock::now() - start < std::chrono::seconds(60)) {
    status = gda.put(victim, win, 0, win, 65536, 65536, CCO_SIGNAL_INC, 0);
    if (status == CCO_DEVICE_STATUS_OK) status = gda.flush();
    if (status == CCO_DEVICE_STATUS_OK) lastGood = Clock::now();
  }
  const int64_t tookMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - lastGood).count();
  RANK_CHECK(status == CCO_DEVICE_STATUS_ABORTED);  // the ring failed
  ccoResult_t async = ccoSuccess;
  RANK_CHECK(ccoCommGetAsyncError(comm, &async) == ccoSuccess);
  RANK_CHECK(async == ccoRemoteError);
  const std::string message = ccoGetLastError();
  printf("rank %d: the victim's loss ended the puts %lld ms after the last good one: %s\n", rank,
         static_cast<long long>(tookMs), message.c_str());
  RANK_CHECK(message.find("rank " + std::to_string(victim)) != std::string::npos);
  // Generous: the kernel's TCP timers and the proxy's own bound both count from the last byte.
  RANK_CHECK(tookMs <= 3 * boundMs + 2000);
  // Teardown with a dead rank fails within CCO_TIMEOUT_MS and still frees everything.
  ccoDevCommDestroy(comm, &dc);
  ccoWindowDeregister(comm, win);
  return 0;
}

// Two ranks. The proxy thread stands aside while a device wait makes its pass, asleep
// (Proxy::StandAside), and leaves the network's input to the waits: once they stop, posts and
// the peer's acks must still be served. Rank 0 has a poster thread that posts without ever
// waiting through the device API (it reads its ack with plain loads, so it makes no pass
// itself), beside a thread whose waits take the pass, and end, around those posts for the
// first half of the rounds, then stop: the proxy thread, which stood aside for them, serves
// the rest alone. Run with CCO_TEST_PROXY_NAP_MS long: a post or an ack that waits for the
// end of a nap instead of waking the thread then outlasts the poster's deadline.
int Aside(ccoComm* comm, int rank, int n, int rounds) {
  RANK_CHECK(n == 2);
  ccoWindow_t win = 0;
  ccoDevComm dc;
  if (OpenFull(comm, 1 << 16, &win, &dc) != 0) return 1;
  ccoGda<> gda(dc, 0);
  // Rank 0's posts land at offset 0 of rank 1's window; rank 1's acks leave from offset 256 (not
  // 0: a put's source is read while the next post may be landing there) for 64 and 128 of rank 0's.
  if (rank == 1) {  // acks each post on signal 1, and (first half) says so on signal 2 too
    for (int i = 0; i < rounds; ++i) {
      RANK_CHECK(gda.wait_signal(0, 1) == CCO_DEVICE_STATUS_OK);
      RANK_CHECK(gda.put(0, win, 64, win, 256, 8, CCO_SIGNAL_INC, 1) == CCO_DEVICE_STATUS_OK);
      if (i < rounds / 2) RANK_CHECK(gda.put(0, win, 128, win, 256, 8, CCO_SIGNAL_INC, 2) == CCO_DEVICE_STATUS_OK);
    }
  } else {
    bool posted = true;
    int served = 0;
    std::thread poster([&] {
      ccoGda<> own(dc, 1);
      for (int i = 1; i <= rounds && posted; ++i) {
        posted = own.put(1, win, 0, win, 0, 8, CCO_SIGNAL_INC, 0) == CCO_DEVICE_STATUS_OK;
        const Clock::time_point until = Clock::now() + std::chrono::seconds(5);
        while (posted && own.read_signal(1) < static_cast<uint64_t>(i) && Clock::now() < until) {
        }
        if (own.read_signal(1) >= static_cast<uint64_t>(i)) served = i;
        else posted = false;
      }
    });
    bool waited = true;
    for (int i = 0; i < rounds / 2 && waited; ++i) waited = gda.wait_signal(2, 1) == CCO_DEVICE_STATUS_OK;
    poster.join();
    printf("rank 0: %d of %d posts served (each within 5 s)\n", served, rounds);
    RANK_CHECK(waited && posted && served == rounds);
  }
  RANK_CHECK(gda.flush() == CCO_DEVICE_STATUS_OK);
  RANK_CHECK(ccoBarrierAll(comm) == ccoSuccess);
  RANK_CHECK(ccoDevCommDestroy(comm, &dc) == ccoSuccess);
  RANK_CHECK(ccoWindowDeregister(comm, win) == ccoSuccess);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s matrix|bulk|dead|aside RANK N [args]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const int rank = atoi(argv[2]), n = atoi(argv[3]);
  ccoUniqueId id;
  if (!cco_test::ShareId(getenv("CCO_TEST_ID_FILE"), rank, &id)) {
    fprintf(stderr, "rank %d: no unique id\n", rank);
    return 1;
  }
  ccoComm* comm = nullptr;
  if (ccoCommCreate(id, n, rank, 64 << 20, &comm) != ccoSuccess) {
    fprintf(stderr, "rank %d: ccoCommCreate: %s\n", rank, ccoGetLastError());
    return 1;
  }
  int result = 2;
  if (mode == "matrix") result = Matrix(comm, rank, n);
  else if (mode == "bulk" && argc == 6) result = Bulk(comm, rank, n, strtoull(argv[4], nullptr, 10), atoi(argv[5]));
  else if (mode == "dead" && argc == 5) result = Dead(comm, rank, atoi(argv[4]));
  else if (mode == "aside" && argc == 5) result = Aside(comm, rank, n, atoi(argv[4]));
  if (result == 0 && mode != "dead" && ccoBarrierAll(comm) != ccoSuccess) result = 1;
  ccoCommDestroy(comm);
  if (result == 0) printf("rank %d: PASS\n", rank);
  return result;
}
