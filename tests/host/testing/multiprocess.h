// SPDX-License-Identifier: MIT
// Ranks as real processes for host tests: RunRanks forks one child per rank, rank 0 mints the
// unique id and hands it to the others through pipes,
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

// In a child just forked from a process that may have other threads (a unique id's root that
// waits out CCO_TIMEOUT_MS for late ranks, left by an earlier test): the threads it starts get
// stacks no thread of the parent had. glibc would hand a new thread the stack of a parent
// thread that does not exist in the child, so it would get that thread's pthread_t, which
// ThreadSanitizer (gcc 12's) still counts as live after the fork, and dies of ("dup thread with
// used id"). RunRanks calls it; tests that fork their own ranks call it in each child.
void StacksOfTheirOwn();

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
