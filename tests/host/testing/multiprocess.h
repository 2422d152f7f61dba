// SPDX-License-Identifier: MIT
// Ranks as real processes for host tests: RunRanks forks one child per rank before any
// thread exists, rank 0 mints the unique id and hands it to the others through pipes,
// and each child runs the body and exits with its verdict. The parent waits with a
// deadline and kills stragglers, so a hang is a test failure, never a stuck CI run.
#ifndef CCO_TESTS_HOST_TESTING_MULTIPROCESS_H_
#define CCO_TESTS_HOST_TESTING_MULTIPROCESS_H_

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "cco/cco.h"

namespace cco_test {

using RankBody = std::function<int(int rank, int nRanks, const ccoUniqueId& id)>;

// All ranks must return 0 (and exit by themselves) within timeoutSec.
::testing::AssertionResult RunRanks(int nRanks, const RankBody& body, int timeoutSec = 60);

// Like RunRanks, but returns each rank's exit status (-1: killed at the deadline) instead
// of judging them.
std::vector<int> RunRanksRaw(int nRanks, const RankBody& body, int timeoutSec);

// In a child: report and fail the rank.
#define RANK_CHECK(cond)                                                                              \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      fprintf(stderr, "rank check failed at %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              ccoGetLastError());                                                                     \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

#define RANK_OK(call) RANK_CHECK((call) == ccoSuccess)

}  // namespace cco_test

#endif  // CCO_TESTS_HOST_TESTING_MULTIPROCESS_H_
