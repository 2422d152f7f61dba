// SPDX-License-Identifier: MIT
// Ranks as threads of one process for the GDA and SDMA host tests: each with a communicator
// on the cpu platform, a window and a device communicator (GDA: 2 contexts, 2 barriers;
// SDMA queues when asked), and the helpers their bodies share.
#ifndef CCO_TESTS_DEVICE_GDA_RANKS_H_
#define CCO_TESTS_DEVICE_GDA_RANKS_H_

#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"

namespace cco {
namespace gda_test {

constexpr size_t kWindow = 1 << 16;

struct Rank {
  int rank = 0, n = 0;
  ccoComm* comm = nullptr;
  ccoDevComm dc{};
  ccoWindow_t win = 0;
  unsigned char* mem = nullptr;
  bool aborted = false;  // the body aborted the communicator: tear down locally only
};

// Creates one communicator per thread-rank with a GDA device communicator of `type` and a
// window, and runs body(rank) on each; returns how many ranks failed.
// sdmaQueues > 0: SDMA is enabled (CCO_ENABLE_SDMA) with that many queues. timeoutMs: the
// communicators' CCO_TIMEOUT_MS (every host call's bound, and device waits' without their own).
template <class Body>
int RunGdaRanks(int n, int type, Body body, int nodesPerHost = 1, int sdmaQueues = 0, int timeoutMs = 20000) {
  setenv("CCO_PLATFORM", "cpu", 1);
  if (sdmaQueues > 0) setenv("CCO_ENABLE_SDMA", "1", 1);
  else unsetenv("CCO_ENABLE_SDMA");
  setenv("CCO_TIMEOUT_MS", std::to_string(timeoutMs).c_str(), 1);
  if (nodesPerHost > 1) setenv("CCO_TEST_NODES_PER_HOST", std::to_string(nodesPerHost).c_str(), 1);
  else unsetenv("CCO_TEST_NODES_PER_HOST");
  ccoUniqueId id;
  if (ccoGetUniqueId(&id) != ccoSuccess) return n;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Rank k;
      k.rank = r;
      k.n = n;
      ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
      reqs.gdaConnectionType = type;
      reqs.gdaContextCount = 2;
      reqs.gdaBarrierCount = 2;
      reqs.sdmaQueueCount = sdmaQueues;
      void* mem = nullptr;
      if (ccoCommCreate(id, n, r, 8 << 20, &k.comm) != ccoSuccess ||
          ccoWindowAllocRegister(k.comm, kWindow, &mem, &k.win) != ccoSuccess ||
          ccoDevCommCreate(k.comm, &reqs, &k.dc) != ccoSuccess) {
        fprintf(stderr, "rank %d setup: %s\n", r, ccoGetLastError());
        ++failures;
        return;
      }
      k.mem = static_cast<unsigned char*>(mem);
      if (!body(k)) ++failures;
      if (!k.aborted &&
          (ccoDevCommDestroy(k.comm, &k.dc) != ccoSuccess || ccoWindowDeregister(k.comm, k.win) != ccoSuccess)) {
        fprintf(stderr, "rank %d teardown: %s\n", r, ccoGetLastError());
        ++failures;
      }
      ccoCommDestroy(k.comm);
    });
  }
  for (auto& t : threads) t.join();
  unsetenv("CCO_TEST_NODES_PER_HOST");
  unsetenv("CCO_ENABLE_SDMA");
  return failures;
}

#define CHECK_OR_FAIL(cond)                                                       \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "rank %d: %s:%d: %s\n", k.rank, __FILE__, __LINE__, #cond); \
      return false;                                                               \
    }                                                                             \
  } while (0)

inline uint32_t Pattern(int rank, size_t i) { return static_cast<uint32_t>(rank * 1000003u + i * 2654435761u); }

inline void Fill(unsigned char* p, int rank, size_t words) {
  for (size_t i = 0; i < words; ++i) reinterpret_cast<uint32_t*>(p)[i] = Pattern(rank, i);
}
inline bool Holds(const unsigned char* p, int rank, size_t words) {
  for (size_t i = 0; i < words; ++i)
    if (reinterpret_cast<const volatile uint32_t*>(p)[i] != Pattern(rank, i)) return false;
  return true;
}

}  // namespace gda_test
}  // namespace cco

#endif  // CCO_TESTS_DEVICE_GDA_RANKS_H_
