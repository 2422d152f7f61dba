// SPDX-License-Identifier: MIT
// How long ccoCommCreate takes for many ranks: ranks as threads of this process on the cpu
// platform, in hosts of k ranks (CCO_TEST_RANKS_PER_HOST), every thread started before the
// clock, the time of the slowest rank reported; then ccoCommDestroy the same way.
//
//   comm_scale_bench RANKS [RANKS_PER_HOST] [PER_RANK_VMM_BYTES]
//
// Prints one JSON line: {"ranks":..,"ranks_per_host":..,"create_s":..,"destroy_s":..,
// "failed":..}. The fd limit must allow a few descriptors per rank (ulimit -n).
#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s RANKS [RANKS_PER_HOST] [PER_RANK_VMM_BYTES]\n", argv[0]);
    return 2;
  }
  const int ranks = atoi(argv[1]);
  const int perHost = argc > 2 ? atoi(argv[2]) : 8;
  const size_t vmm = argc > 3 ? strtoull(argv[3], nullptr, 10) : (size_t{4} << 20);
  if (ranks < 1 || ranks > 65536 || perHost < 1) {
    fprintf(stderr, "RANKS in [1, 65536], RANKS_PER_HOST >= 1\n");
    return 2;
  }
  setenv("CCO_PLATFORM", "cpu", 0);
  setenv("CCO_TEST_RANKS_PER_HOST", std::to_string(perHost).c_str(), 1);

  ccoUniqueId id;
  if (ccoGetUniqueId(&id) != ccoSuccess) {
    fprintf(stderr, "ccoGetUniqueId failed\n");
    return 1;
  }
  std::vector<ccoComm*> comms(ranks, nullptr);
  std::vector<ccoResult_t> results(ranks, ccoSuccess);
  std::vector<std::string> errors(ranks);  // ccoGetLastError is the calling thread's
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<Clock::time_point> created(ranks), destroyed(ranks);
  std::atomic<bool> destroyGo{false};
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      results[r] = ccoCommCreate(id, ranks, r, vmm, &comms[r]);
      if (results[r] != ccoSuccess) errors[r] = ccoGetLastError();
      created[r] = Clock::now();
      ready.fetch_add(1);
      while (!destroyGo.load(std::memory_order_acquire)) std::this_thread::yield();
      if (comms[r] != nullptr) ccoCommDestroy(comms[r]);
      destroyed[r] = Clock::now();
    });
  }
  while (ready.load() < ranks) std::this_thread::yield();
  const Clock::time_point start = Clock::now();
  go.store(true, std::memory_order_release);
  while (ready.load() < 2 * ranks) std::this_thread::sleep_for(std::chrono::microseconds(200));
  Clock::time_point lastCreated = start;
  int failed = 0, firstFailed = -1;
  for (int r = 0; r < ranks; ++r) {
    if (created[r] > lastCreated) lastCreated = created[r];
    if (results[r] != ccoSuccess && failed++ == 0) firstFailed = r;
  }
  const Clock::time_point destroyStart = Clock::now();
  destroyGo.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  Clock::time_point lastDestroyed = destroyStart;
  for (int r = 0; r < ranks; ++r)
    if (destroyed[r] > lastDestroyed) lastDestroyed = destroyed[r];
  printf("{\"ranks\": %d, \"ranks_per_host\": %d, \"create_s\": %.4f, \"destroy_s\": %.4f, \"failed\": %d}\n", ranks,
         perHost, Seconds(lastCreated - start), Seconds(lastDestroyed - destroyStart), failed);
  if (failed > 0) fprintf(stderr, "%d ranks failed; rank %d: %s\n", failed, firstFailed, errors[firstFailed].c_str());
  return failed == 0 ? 0 : 1;
}
