// SPDX-License-Identifier: MIT
// worst_status (device/coop.hpp) with host threads standing in for a group's threads: every
// thread gets the worst status any thread passed, and they all vote the same number of
// times (a thread that voted less would leave the others waiting at the group's barrier).
#include <gtest/gtest.h>
#include <stdint.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "abi/enums.h"
#include "device/coop.hpp"

namespace {

// A group's vote among `size` threads, round after round: any(p) waits for every thread and
// tells each whether one passed true. It also counts each thread's votes.
class Votes {
 public:
  explicit Votes(int size) : size_(size), counts_(size, 0) {}

  bool Any(int thread, bool p) {
    std::unique_lock<std::mutex> lock(mu_);
    ++counts_[thread];
    const uint64_t round = round_;
    pending_ = pending_ || p;
    if (++arrived_ == size_) {
      result_ = pending_;  // kept until every thread of this round read it: none can finish the next without them
      pending_ = false;
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
      return result_;
    }
    // A thread that voted fewer times than the others leaves them here: on hardware the group
    // would hang at its barrier; here the test fails, and the vote stops waiting for anyone.
    if (broken_ || !cv_.wait_for(lock, std::chrono::seconds(10), [&] { return round_ != round; })) {
      if (!broken_) ADD_FAILURE() << "thread " << thread << " waited for a vote the others never made";
      broken_ = true;
      cv_.notify_all();
      return p;
    }
    return result_;
  }
  const std::vector<int>& counts() const { return counts_; }

 private:
  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t round_ = 0;
  bool pending_ = false, result_ = false, broken_ = false;
  std::vector<int> counts_;
};

template <bool Votes_> struct FakeGroup {
  static constexpr bool kVotes = Votes_;
  Votes* votes;
  int thread;
  // Where the group cannot vote, any() is a barrier that returns the caller's own p.
  bool any(bool p) const {
    const bool all = votes->Any(thread, p);
    return kVotes ? all : p;
  }
};

// Each thread passes statuses[t]; returns what each got back, and checks the vote counts agree.
template <bool CanVote> std::vector<int32_t> RunGroup(const std::vector<int32_t>& statuses) {
  const int n = static_cast<int>(statuses.size());
  Votes votes(n);
  std::vector<int32_t> got(n, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] { got[t] = cco::worst_status(FakeGroup<CanVote>{&votes, t}, statuses[t]); });
  for (auto& th : threads) th.join();
  for (int t = 1; t < n; ++t) EXPECT_EQ(votes.counts()[t], votes.counts()[0]) << "thread " << t;
  return got;
}

TEST(WorstStatus, EveryThreadGetsTheWorstAnyThreadPassed) {
  const int32_t ok = CCO_DEVICE_STATUS_OK, timeout = CCO_DEVICE_STATUS_TIMEOUT, aborted = CCO_DEVICE_STATUS_ABORTED,
                invalid = CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  const struct {
    std::vector<int32_t> passed;
    int32_t worst;
  } cases[] = {
      {{ok, ok, ok, ok}, ok},
      {{ok, timeout, ok, ok}, timeout},
      {{ok, aborted, timeout, ok}, aborted},
      {{timeout, ok, ok, aborted}, aborted},
      {{invalid, ok, aborted, timeout}, invalid},
      {{ok, ok, ok, invalid}, invalid},
      {{aborted}, aborted},
  };
  for (const auto& c : cases) {
    const std::vector<int32_t> got = RunGroup<true>(c.passed);
    for (size_t t = 0; t < got.size(); ++t)
      EXPECT_EQ(got[t], c.worst) << "thread " << t << " of case worst=" << c.worst;
  }
}

TEST(WorstStatus, OneVoteWhenEveryThreadPassedOk) {
  Votes votes(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] { EXPECT_EQ(cco::worst_status(FakeGroup<true>{&votes, t}, CCO_DEVICE_STATUS_OK), 0); });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 3; ++t) EXPECT_EQ(votes.counts()[t], 1);
}

// A group that cannot vote (an amdgcn block) still meets at one barrier, and each thread keeps
// its own status.
TEST(WorstStatus, WithoutAVoteEachThreadKeepsItsOwn) {
  const std::vector<int32_t> passed = {CCO_DEVICE_STATUS_OK, CCO_DEVICE_STATUS_ABORTED, CCO_DEVICE_STATUS_TIMEOUT};
  EXPECT_EQ(RunGroup<false>(passed), passed);
}

}  // namespace
