// SPDX-License-Identifier: MIT
// The rank harness: a parent that has threads of its own (as one does after a test that left a
// unique id's root waiting for late ranks) forks ranks that start threads. Under
// ThreadSanitizer, a rank's thread that took the stack of a parent thread died of a "dup thread"
// check in the fresh-clone CI; StacksOfTheirOwn gives the ranks' threads stacks of their own.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/host/testing/multiprocess.h"

namespace {

TEST(RunRanks, RanksStartThreadsWhileTheParentHasOthers) {
  setenv("CCO_PLATFORM", "cpu", 1);
  std::atomic<bool> stop{false};
  std::vector<std::thread> lingering;
  for (int i = 0; i < 4; ++i)
    lingering.emplace_back([&] {
      while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // all four running
  EXPECT_TRUE(cco_test::RunRanks(2, [](int, int, const ccoUniqueId&) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back([] {});
    for (auto& t : threads) t.join();
    return 0;
  }));
  stop = true;
  for (auto& t : lingering) t.join();
}

}  // namespace
