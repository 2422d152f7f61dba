// SPDX-License-Identifier: MIT
// ProcessRegistry: what one rank publishes another finds (a copy: a shared owner keeps the
// object alive after the withdrawal), a publish replaces, a withdrawal removes, and threads
// publishing and finding at once each see their own entries whole.
#include "common/process_registry.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cco {
namespace {

using Key = std::pair<std::string, int>;

TEST(ProcessRegistry, FindsWhatWasPublishedUntilItIsWithdrawn) {
  ProcessRegistry<Key, std::shared_ptr<int>> registry;
  std::shared_ptr<int> found;
  EXPECT_FALSE(registry.Find({"comm", 0}, &found));
  registry.Publish({"comm", 0}, std::make_shared<int>(7));
  registry.Publish({"comm", 1}, std::make_shared<int>(8));
  ASSERT_TRUE(registry.Find({"comm", 0}, &found));
  EXPECT_EQ(*found, 7);
  EXPECT_FALSE(registry.Find({"other", 0}, &found));        // keyed by communicator and rank both
  registry.Publish({"comm", 0}, std::make_shared<int>(9));  // replaces
  ASSERT_TRUE(registry.Find({"comm", 0}, &found));
  EXPECT_EQ(*found, 9);
  registry.Withdraw({"comm", 0});
  std::shared_ptr<int> again;
  EXPECT_FALSE(registry.Find({"comm", 0}, &again));
  EXPECT_EQ(*found, 9);  // the finder's copy outlives the withdrawal
  EXPECT_EQ(found.use_count(), 1);
  ASSERT_TRUE(registry.Find({"comm", 1}, &found));  // the other entry stays
  EXPECT_EQ(*found, 8);
}

TEST(ProcessRegistry, ThreadsPublishAndFindAtOnce) {
  ProcessRegistry<Key, std::vector<int>> registry;
  constexpr int kThreads = 8, kRounds = 2000;
  std::vector<std::thread> threads;
  std::vector<int> bad(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const Key key{"comm", t};
        registry.Publish(key, std::vector<int>(64, i));
        std::vector<int> seen;
        if (!registry.Find(key, &seen) || seen != std::vector<int>(64, i)) ++bad[t];
        if (i % 2 == 1) registry.Withdraw(key);
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace cco
