// SPDX-License-Identifier: MIT
// The host implementation of device/arch under real threads: the same calls a kernel
// makes, racing for real on the CPU.
#include <gtest/gtest.h>

#include <stdint.h>

#include <thread>
#include <vector>

#include "device/arch/arch.h"

namespace {

using cco::order::AcqRel;
using cco::order::Acquire;
using cco::order::Relaxed;
using cco::order::Release;
using cco::scope::Block;
using cco::scope::Device;
using cco::scope::System;
namespace arch = cco::arch;

constexpr int kThreads = 8;

template <class Body> void run_threads(int n, Body body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(body, t);
  for (auto& th : threads) th.join();
}

TEST(HostArch, IdsDescribeOneThreadBlocks) {
  EXPECT_EQ(arch::warp_size(), 1u);
  EXPECT_EQ(arch::lane_id(), 0u);
  EXPECT_EQ(arch::thread_id(), 0u);
  EXPECT_EQ(arch::block_size(), 1u);
  EXPECT_EQ(arch::warp_id(), 0u);
  EXPECT_TRUE(arch::is_block_leader());
  EXPECT_EQ(arch::ballot(true), 1u);
  EXPECT_EQ(arch::ballot(false), 0u);
  EXPECT_EQ(arch::active_mask(), 1u);
}

TEST(HostArch, ContendedFetchAddCountsEveryIncrement) {
  constexpr uint64_t kPerThread = 200000;
  uint32_t c32 = 0;
  uint64_t c64 = 0;
  run_threads(kThreads, [&](int) {
    for (uint64_t i = 0; i < kPerThread; ++i) {
      arch::fetch_add<Relaxed, Device>(&c32, 1u);
      arch::fetch_add<AcqRel, System>(&c64, uint64_t{3});
    }
  });
  EXPECT_EQ(c32, kThreads * kPerThread);
  EXPECT_EQ(c64, 3 * kThreads * kPerThread);
}

TEST(HostArch, FetchAddReturnsDistinctTickets) {
  constexpr int kPerThread = 20000;
  uint64_t next = 0;
  std::vector<uint8_t> seen(kThreads * kPerThread, 0);
  run_threads(kThreads, [&](int) {
    for (int i = 0; i < kPerThread; ++i) {
      uint64_t ticket = arch::fetch_add<Relaxed, System>(&next, uint64_t{1});
      seen[ticket] = 1;  // each ticket is handed out once, so no two threads write one byte
    }
  });
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "ticket " << i;
}

// Message passing: the consumer that acquires the flag must see every payload word the
// producer wrote before releasing it, round after round.
TEST(HostArch, ReleaseAcquireMessagePassing) {
  constexpr uint32_t kRounds = 20000;
  constexpr int kWords = 16;
  uint64_t payload[kWords] = {};
  uint32_t flag = 0;  // round number published
  uint32_t ack = 0;   // round number consumed
  std::thread producer([&] {
    for (uint32_t r = 1; r <= kRounds; ++r) {
      while (arch::load<Acquire, System>(&ack) != r - 1) {
      }
      for (int w = 0; w < kWords; ++w) arch::store<Relaxed, System>(&payload[w], uint64_t{r} * 1000 + w);
      arch::store<Release, System>(&flag, r);
    }
  });
  uint32_t bad = 0;
  for (uint32_t r = 1; r <= kRounds; ++r) {
    while (arch::load<Acquire, System>(&flag) != r) {
    }
    for (int w = 0; w < kWords; ++w) bad += arch::load<Relaxed, System>(&payload[w]) != uint64_t{r} * 1000 + w;
    arch::store<Release, System>(&ack, r);
  }
  producer.join();
  EXPECT_EQ(bad, 0u);
}

// A spin lock from compare_exchange (acquire) and store (release) protects a plain counter.
TEST(HostArch, CompareExchangeLockGivesMutualExclusion) {
  constexpr int kPerThread = 20000;
  uint32_t lock = 0;
  uint64_t plain = 0;
  run_threads(kThreads, [&](int) {
    for (int i = 0; i < kPerThread; ++i) {
      while (arch::compare_exchange<Acquire, Block>(&lock, 0u, 1u) != 0u) {
      }
      plain = plain + 1;  // not atomic: only the lock makes this exact
      arch::store<Release, Block>(&lock, 0u);
    }
  });
  EXPECT_EQ(plain, uint64_t{kThreads} * kPerThread);
}

TEST(HostArch, CompareExchangeReturnsOldValueOnFailure) {
  uint64_t v = 5;
  EXPECT_EQ((arch::compare_exchange<AcqRel, System>(&v, uint64_t{4}, uint64_t{9})), 5u);
  EXPECT_EQ(v, 5u);
  EXPECT_EQ((arch::compare_exchange<AcqRel, System>(&v, uint64_t{5}, uint64_t{9})), 5u);
  EXPECT_EQ(v, 9u);
}

TEST(HostArch, ExchangeHandsEachValueToExactlyOneThread) {
  constexpr int kPerThread = 20000;
  uint64_t slot = 0;
  std::vector<uint64_t> sums(kThreads, 0);
  run_threads(kThreads, [&](int t) {
    for (int i = 1; i <= kPerThread; ++i) {
      sums[t] += arch::exchange<AcqRel, System>(&slot, uint64_t(t) * kPerThread + i);
    }
  });
  uint64_t total = slot;
  for (uint64_t s : sums) total += s;
  const uint64_t n = uint64_t{kThreads} * kPerThread;
  EXPECT_EQ(total, n * (n + 1) / 2);  // every value written is read back exactly once
}

TEST(HostArch, FetchMaxKeepsTheLargest) {
  uint32_t m32 = 0;
  uint64_t m64 = 0;
  run_threads(kThreads, [&](int t) {
    for (uint32_t i = 0; i < 50000; ++i) {
      arch::fetch_max<Relaxed, Device>(&m32, i * kThreads + t);
      arch::fetch_max<AcqRel, System>(&m64, (uint64_t{i} << 33) + t);
    }
  });
  EXPECT_EQ(m32, 49999u * kThreads + kThreads - 1);
  EXPECT_EQ(m64, (uint64_t{49999} << 33) + kThreads - 1);
  uint64_t small = 7;
  EXPECT_EQ((arch::fetch_max<Release, Block>(&small, uint64_t{3})), 7u);
  EXPECT_EQ(small, 7u);
}

// Fence-based message passing: relaxed payload and flag, ordered only by fence<S>() on
// each side (release side before the flag store, acquire side after the flag load).
template <class S> void fence_message_passing() {
  constexpr uint32_t kRounds = 20000;
  uint64_t payload[4] = {};
  uint32_t flag = 0, ack = 0;
  std::thread producer([&] {
    for (uint32_t r = 1; r <= kRounds; ++r) {
      while (arch::load<Relaxed, System>(&ack) != r - 1) {
      }
      arch::fence<S>();
      for (int w = 0; w < 4; ++w) arch::store<Relaxed, System>(&payload[w], uint64_t{r} + w);
      arch::fence<S>();
      arch::store<Relaxed, System>(&flag, r);
    }
  });
  uint32_t bad = 0;
  for (uint32_t r = 1; r <= kRounds; ++r) {
    while (arch::load<Relaxed, System>(&flag) != r) {
    }
    arch::fence<S>();
    for (int w = 0; w < 4; ++w) bad += arch::load<Relaxed, System>(&payload[w]) != uint64_t{r} + w;
    arch::fence<S>();
    arch::store<Relaxed, System>(&ack, r);
  }
  producer.join();
  EXPECT_EQ(bad, 0u);
}

TEST(HostArch, FenceMessagePassingBlock) { fence_message_passing<Block>(); }
TEST(HostArch, FenceMessagePassingDevice) { fence_message_passing<Device>(); }
TEST(HostArch, FenceMessagePassingSystem) { fence_message_passing<System>(); }

TEST(HostArch, ClocksAdvanceAndSleepWaits) {
  const uint64_t t0 = arch::timer_ns();
  const uint64_t c0 = arch::cycles();
  arch::nanosleep(2000000);  // 2 ms
  const uint64_t t1 = arch::timer_ns();
  EXPECT_GE(t1 - t0, 2000000u);
  EXPECT_GT(arch::cycles(), c0);
}

}  // namespace
