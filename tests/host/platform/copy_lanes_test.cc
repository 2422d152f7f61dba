// SPDX-License-Identifier: MIT
// CopyLanes (platform/cuda_copy_lanes.h) over a fake driver that records what each stream is
// given (copies, event records and waits, writes) and then runs the streams as a GPU may: in
// any interleaving that honours stream order and event waits (many seeded orders). Checked:
// every byte lands once; the writes behind a run land after every copy of it; a run's copies
// that read what an earlier run wrote read it written; helpers take shares of a run of two
// copies or more, a lone copy goes on its own stream with no fork; a helper's failure fails
// the run and nothing is written behind it; a stream never prepared, or forgotten, goes one
// copy at a time; a sleeping helper is poked, not waited for. And how many lanes a process
// takes: CCO_COPY_LANES where set, else its CPUs over twice the ranks of its host, 1 to 4.
#include "platform/cuda_copy_lanes.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace cco {
namespace gpu {
namespace {

struct Op {
  enum Kind { kCopy, kRecord, kWait, kWrite } kind;
  DeviceAddress dst = 0, src = 0;
  uint64_t bytes = 0, value = 0;
  void* event = nullptr;
  uint64_t nth = 0;  // kRecord: which record of the event; kWait: the record it waits for (0: none)
  int run = 0;       // the run that queued it (kCopy, kWrite)
};

struct FakeStream {
  std::vector<Op> ops;
};

// The fake driver's state: one test at a time; the helpers call it from their threads.
struct Fake {
  std::mutex mu;
  std::set<FakeStream*> streams;
  std::map<void*, uint64_t> records;  // event -> records so far
  int events = 0;
  int run = 0;                // the run being queued (the test sets it)
  DeviceAddress failDst = 0;  // cuMemcpyAsync to this address fails
  std::set<std::thread::id> copiers;
} fake;

constexpr DriverResult kFailed = 700;

CopyLaneCalls FakeCalls() {
  CopyLaneCalls c;
  c.ctxGetCurrent = [](void** context) {
    *context = &fake;
    return 0;
  };
  c.ctxSetCurrent = [](void* context) {
    EXPECT_EQ(context, &fake);
    return 0;
  };
  c.streamCreate = [](void** stream, unsigned flags) {
    EXPECT_EQ(flags, 1u);  // non-blocking
    std::lock_guard<std::mutex> lock(fake.mu);
    auto* s = new FakeStream;
    fake.streams.insert(s);
    *stream = s;
    return 0;
  };
  c.streamDestroy = [](void* stream) {
    std::lock_guard<std::mutex> lock(fake.mu);
    EXPECT_EQ(fake.streams.erase(static_cast<FakeStream*>(stream)), 1u);
    delete static_cast<FakeStream*>(stream);
    return 0;
  };
  c.eventCreate = [](void** event, unsigned flags) {
    EXPECT_EQ(flags, 2u);  // no timing
    std::lock_guard<std::mutex> lock(fake.mu);
    ++fake.events;
    *event = new char;
    return 0;
  };
  c.eventDestroy = [](void* event) {
    std::lock_guard<std::mutex> lock(fake.mu);
    --fake.events;
    delete static_cast<char*>(event);
    return 0;
  };
  c.eventRecord = [](void* event, void* stream) {
    std::lock_guard<std::mutex> lock(fake.mu);
    Op op{Op::kRecord};
    op.event = event, op.nth = ++fake.records[event];
    static_cast<FakeStream*>(stream)->ops.push_back(op);
    return 0;
  };
  c.streamWaitEvent = [](void* stream, void* event, unsigned flags) {
    EXPECT_EQ(flags, 0u);
    std::lock_guard<std::mutex> lock(fake.mu);
    Op op{Op::kWait};
    op.event = event, op.nth = fake.records[event];  // the record made last, as the driver takes it
    static_cast<FakeStream*>(stream)->ops.push_back(op);
    return 0;
  };
  c.copyAsync = [](DeviceAddress dst, DeviceAddress src, size_t size, void* stream) {
    std::lock_guard<std::mutex> lock(fake.mu);
    if (dst == fake.failDst) return kFailed;
    fake.copiers.insert(std::this_thread::get_id());
    Op op{Op::kCopy};
    op.dst = dst, op.src = src, op.bytes = size, op.run = fake.run;
    static_cast<FakeStream*>(stream)->ops.push_back(op);
    return 0;
  };
  c.streamBatchMemOp = [](void* stream, unsigned count, BatchWrite64* ops, unsigned flags) {
    EXPECT_EQ(flags, 0u);
    std::lock_guard<std::mutex> lock(fake.mu);
    for (unsigned i = 0; i < count; ++i) {
      Op op{Op::kWrite};
      op.dst = ops[i].address, op.value = ops[i].value, op.run = fake.run;
      static_cast<FakeStream*>(stream)->ops.push_back(op);
    }
    return 0;
  };
  return c;
}

// Runs every stream's ops, in a random interleaving `seed` picks among those stream order and
// event waits allow, and empties them. A write checks that every copy of its run ran first.
void RunStreams(unsigned seed, const std::vector<FakeStream*>& streams) {
  std::mt19937 random(seed);
  std::vector<size_t> at(streams.size(), 0);
  std::map<void*, std::set<uint64_t>> recorded;  // event -> which of its records ran
  std::map<int, int> copiesLeft;                 // run -> copies not yet run
  for (FakeStream* s : streams)
    for (const Op& op : s->ops)
      if (op.kind == Op::kCopy) ++copiesLeft[op.run];
  for (;;) {
    std::vector<size_t> ready;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (at[i] == streams[i]->ops.size()) continue;
      const Op& op = streams[i]->ops[at[i]];
      if (op.kind != Op::kWait || op.nth == 0 || recorded[op.event].count(op.nth)) ready.push_back(i);
    }
    if (ready.empty()) break;
    const size_t i = ready[random() % ready.size()];
    const Op& op = streams[i]->ops[at[i]++];
    switch (op.kind) {
      case Op::kCopy:
        memcpy(reinterpret_cast<void*>(op.dst), reinterpret_cast<const void*>(op.src), op.bytes);
        --copiesLeft[op.run];
        break;
      case Op::kRecord: recorded[op.event].insert(op.nth); break;
      case Op::kWait: break;
      case Op::kWrite:
        EXPECT_EQ(copiesLeft[op.run], 0) << "a write of run " << op.run << " ran before a copy of it";
        *reinterpret_cast<uint64_t*>(op.dst) = op.value;
        break;
    }
  }
  for (size_t i = 0; i < streams.size(); ++i) EXPECT_EQ(at[i], streams[i]->ops.size()) << "a wait never ended";
  for (FakeStream* s : streams) s->ops.clear();
}

std::vector<FakeStream*> AllStreams() {
  std::lock_guard<std::mutex> lock(fake.mu);
  return std::vector<FakeStream*>(fake.streams.begin(), fake.streams.end());
}

DeviceAddress At(const void* p) { return reinterpret_cast<DeviceAddress>(p); }

class CopyLanesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.run = 0, fake.failDst = 0;
    fake.copiers.clear();
    void* s = nullptr;
    ASSERT_EQ(FakeCalls().streamCreate(&s, 1), 0);
    stream_ = s;
  }
  void TearDown() override {
    lanes_.reset();
    FakeCalls().streamDestroy(stream_);
    EXPECT_TRUE(fake.streams.empty());
    EXPECT_EQ(fake.events, 0);
  }
  void Make(unsigned lanes) {
    lanes_.reset(new CopyLanes(FakeCalls(), lanes));
    ASSERT_EQ(lanes_->PrepareStream(stream_), 0);
  }
  std::unique_ptr<CopyLanes> lanes_;
  void* stream_ = nullptr;
};

TEST_F(CopyLanesTest, ARunLandsEveryByteAndItsWritesAfterEveryCopy) {
  Make(4);
  constexpr unsigned kCopies = 16, kBytes = 64;
  std::vector<uint8_t> src(kCopies * kBytes), dst(kCopies * kBytes);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  DeviceAddress dsts[kCopies], srcs[kCopies];
  uint64_t sizes[kCopies];
  for (unsigned i = 0; i < kCopies; ++i)
    dsts[i] = At(&dst[i * kBytes]), srcs[i] = At(&src[i * kBytes]), sizes[i] = kBytes;
  uint64_t words[3] = {};
  const DeviceAddress addresses[3] = {At(&words[0]), At(&words[1]), At(&words[2])};
  const uint64_t values[3] = {11, 22, 33};
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::fill(dst.begin(), dst.end(), 0);
    std::fill(words, words + 3, 0);
    fake.run = seed;
    ASSERT_EQ(lanes_->Copy(stream_, dsts, srcs, sizes, kCopies, addresses, values, 3), 0);
    size_t queued = 0;
    for (FakeStream* s : AllStreams())
      for (const Op& op : s->ops) queued += op.kind == Op::kCopy;
    EXPECT_EQ(queued, kCopies) << "a copy queued twice, or not at all";
    RunStreams(seed, AllStreams());
    EXPECT_EQ(dst, src) << "seed " << seed;
    EXPECT_EQ(words[0], 11u);
    EXPECT_EQ(words[1], 22u);
    EXPECT_EQ(words[2], 33u);
  }
  EXPECT_GT(lanes_->forks(), 0u) << "no run was shared: the helpers never woke";
  EXPECT_GT(fake.copiers.size(), 1u) << "every copy was queued by one thread";
}

TEST_F(CopyLanesTest, ARunReadsWhatTheRunBeforeWrote) {
  Make(4);
  constexpr unsigned kCopies = 8, kBytes = 32;
  std::vector<uint8_t> a(kCopies * kBytes), b(kCopies * kBytes), c(kCopies * kBytes);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i + 3);
  // The second run reads the pieces in reverse, so each of its shares reads what other lanes
  // of the first run wrote.
  DeviceAddress aa[kCopies], bb[kCopies], cc[kCopies], reversed[kCopies];
  uint64_t sizes[kCopies];
  std::vector<uint8_t> want(a.size());
  for (unsigned i = 0; i < kCopies; ++i) {
    aa[i] = At(&a[i * kBytes]), bb[i] = At(&b[i * kBytes]), cc[i] = At(&c[i * kBytes]);
    reversed[i] = At(&b[(kCopies - 1 - i) * kBytes]);
    memcpy(&want[i * kBytes], &a[(kCopies - 1 - i) * kBytes], kBytes);
    sizes[i] = kBytes;
  }
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::fill(b.begin(), b.end(), 0);
    std::fill(c.begin(), c.end(), 0);
    fake.run = 2 * seed;
    ASSERT_EQ(lanes_->Copy(stream_, bb, aa, sizes, kCopies), 0);  // a -> b
    fake.run = 2 * seed + 1;
    ASSERT_EQ(lanes_->Copy(stream_, cc, reversed, sizes, kCopies), 0);  // b -> c, after
    RunStreams(seed, AllStreams());
    EXPECT_EQ(c, want) << "seed " << seed << ": a copy read bytes the run before had not written yet";
  }
}

// Two proxies of one context (two communicators) share its helpers and fork event: runs on
// two streams from two threads at once still read what their own stream's run before wrote.
TEST_F(CopyLanesTest, TwoStreamsOfOneContextKeepTheirOwnOrder) {
  Make(4);
  void* other = nullptr;
  ASSERT_EQ(FakeCalls().streamCreate(&other, 1), 0);
  ASSERT_EQ(lanes_->PrepareStream(other), 0);
  constexpr unsigned kCopies = 8, kBytes = 16;
  struct Chain {
    std::vector<uint8_t> a, b, c, want;
    DeviceAddress aa[kCopies], bb[kCopies], cc[kCopies], reversed[kCopies];
    uint64_t sizes[kCopies];
  } chains[2];
  for (int k = 0; k < 2; ++k) {
    Chain& ch = chains[k];
    ch.a.resize(kCopies * kBytes), ch.b.resize(kCopies * kBytes), ch.c.resize(kCopies * kBytes);
    ch.want.resize(kCopies * kBytes);
    for (size_t i = 0; i < ch.a.size(); ++i) ch.a[i] = static_cast<uint8_t>(i * (k + 2) + 1);
    for (unsigned i = 0; i < kCopies; ++i) {
      ch.aa[i] = At(&ch.a[i * kBytes]), ch.bb[i] = At(&ch.b[i * kBytes]), ch.cc[i] = At(&ch.c[i * kBytes]);
      ch.reversed[i] = At(&ch.b[(kCopies - 1 - i) * kBytes]);
      memcpy(&ch.want[i * kBytes], &ch.a[(kCopies - 1 - i) * kBytes], kBytes);
      ch.sizes[i] = kBytes;
    }
  }
  void* streams[2] = {stream_, other};
  for (unsigned seed = 1; seed <= 40; ++seed) {
    for (Chain& ch : chains) std::fill(ch.b.begin(), ch.b.end(), 0), std::fill(ch.c.begin(), ch.c.end(), 0);
    std::thread threads[2];
    for (int k = 0; k < 2; ++k) {
      threads[k] = std::thread([&, k] {
        Chain& ch = chains[k];
        for (int round = 0; round < 3; ++round) {  // a -> b, then b -> c reversed, three times over
          EXPECT_EQ(lanes_->Copy(streams[k], ch.bb, ch.aa, ch.sizes, kCopies), 0);
          EXPECT_EQ(lanes_->Copy(streams[k], ch.cc, ch.reversed, ch.sizes, kCopies), 0);
        }
      });
    }
    for (auto& t : threads) t.join();
    RunStreams(seed, AllStreams());
    for (int k = 0; k < 2; ++k) EXPECT_EQ(chains[k].c, chains[k].want) << "seed " << seed << ", stream " << k;
  }
  lanes_->Forget(other);
  FakeCalls().streamDestroy(other);
}

TEST_F(CopyLanesTest, ALoneCopyGoesOnItsStreamWithNoFork) {
  Make(4);
  uint64_t from = 42, to = 0, word = 0;
  const DeviceAddress dst = At(&to), src = At(&from), address = At(&word);
  const uint64_t size = 8, value = 5;
  ASSERT_EQ(lanes_->Copy(stream_, &dst, &src, &size, 1, &address, &value, 1), 0);
  EXPECT_EQ(lanes_->forks(), 0u);
  const auto& ops = static_cast<FakeStream*>(stream_)->ops;
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].kind, Op::kCopy);
  EXPECT_EQ(ops[1].kind, Op::kWrite);
  RunStreams(1, AllStreams());
  EXPECT_EQ(to, 42u);
  EXPECT_EQ(word, 5u);
}

TEST_F(CopyLanesTest, AHelpersFailureFailsTheRunAndNothingIsWrittenBehindIt) {
  Make(2);
  uint64_t from[4] = {1, 2, 3, 4}, to[4] = {}, word = 0;
  const DeviceAddress dsts[4] = {At(&to[0]), At(&to[1]), At(&to[2]), At(&to[3])};
  const DeviceAddress srcs[4] = {At(&from[0]), At(&from[1]), At(&from[2]), At(&from[3])};
  const uint64_t sizes[4] = {8, 8, 8, 8}, value = 9;
  const DeviceAddress address = At(&word);
  fake.failDst = dsts[3];  // in the helper's share where it takes one, else in the caller's
  const DriverResult r = lanes_->Copy(stream_, dsts, srcs, sizes, 4, &address, &value, 1);
  EXPECT_EQ(r, kFailed);
  for (FakeStream* s : AllStreams())
    for (const Op& op : s->ops) EXPECT_NE(op.kind, Op::kWrite) << "a write was queued behind a failed run";
  for (FakeStream* s : AllStreams()) s->ops.clear();
}

TEST_F(CopyLanesTest, AStreamNeverPreparedOrForgottenGoesOneCopyAtATime) {
  Make(4);
  void* other = nullptr;
  ASSERT_EQ(FakeCalls().streamCreate(&other, 1), 0);
  uint64_t from[3] = {7, 8, 9}, to[3] = {};
  const DeviceAddress dsts[3] = {At(&to[0]), At(&to[1]), At(&to[2])};
  const DeviceAddress srcs[3] = {At(&from[0]), At(&from[1]), At(&from[2])};
  const uint64_t sizes[3] = {8, 8, 8};
  ASSERT_EQ(lanes_->Copy(other, dsts, srcs, sizes, 3), 0);
  EXPECT_EQ(static_cast<FakeStream*>(other)->ops.size(), 3u);  // three copies, no events
  lanes_->Forget(stream_);
  ASSERT_EQ(lanes_->Copy(stream_, dsts, srcs, sizes, 3), 0);
  EXPECT_EQ(static_cast<FakeStream*>(stream_)->ops.size(), 3u);
  EXPECT_EQ(lanes_->forks(), 0u);
  RunStreams(1, AllStreams());
  EXPECT_EQ(to[2], 9u);
  FakeCalls().streamDestroy(other);
}

TEST_F(CopyLanesTest, ASleepingHelperIsPokedNotWaitedFor) {
  Make(2);
  std::this_thread::sleep_for(std::chrono::microseconds(CopyLanes::kSpinUs * 3));  // the helper sleeps
  uint64_t from[2] = {1, 2}, to[2] = {};
  const DeviceAddress dsts[2] = {At(&to[0]), At(&to[1])};
  const DeviceAddress srcs[2] = {At(&from[0]), At(&from[1])};
  const uint64_t sizes[2] = {8, 8};
  ASSERT_EQ(lanes_->Copy(stream_, dsts, srcs, sizes, 2), 0);
  EXPECT_EQ(lanes_->forks(), 0u) << "the run waited for a sleeping helper";
  EXPECT_EQ(static_cast<FakeStream*>(stream_)->ops.size(), 2u);
  // Poked, it polls again: a later run shares.
  for (int tries = 0; tries < 1000 && lanes_->forks() == 0; ++tries) {
    ASSERT_EQ(lanes_->Copy(stream_, dsts, srcs, sizes, 2), 0);
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_GT(lanes_->forks(), 0u);
  RunStreams(1, AllStreams());
  EXPECT_EQ(to[1], 2u);
}

// The environment of one DefaultCopyLanes test, restored after it.
class LaneEnvironment : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {"CCO_COPY_LANES", "LOCAL_WORLD_SIZE", "CCO_LOCAL_RANK", "CCO_WORLD_SIZE"};
  void SetUp() override {
    for (const char* name : kNames) {
      const char* v = getenv(name);
      saved_.push_back(v == nullptr ? nullptr : strdup(v));
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i] == nullptr) unsetenv(kNames[i]);
      else setenv(kNames[i], saved_[i], 1);
      free(saved_[i]);
    }
  }
  // What the rule gives with this process's CPUs and `ranks` on the host.
  static unsigned Expected(int ranks) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    EXPECT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
    const int fit = CPU_COUNT(&cpus) / (2 * ranks);
    return fit < 1 ? 1 : (fit > 4 ? 4 : static_cast<unsigned>(fit));
  }
  std::vector<char*> saved_;
};

TEST_F(LaneEnvironment, CcoCopyLanesIsTakenAsAskedUpToTheMost) {
  setenv("CCO_COPY_LANES", "3", 1);
  EXPECT_EQ(DefaultCopyLanes(), 3u);
  setenv("CCO_COPY_LANES", "1", 1);
  EXPECT_EQ(DefaultCopyLanes(), 1u);
  setenv("CCO_COPY_LANES", "1000", 1);
  EXPECT_EQ(DefaultCopyLanes(), CopyLanes::kMaxLanes);
}

TEST_F(LaneEnvironment, UnsetItSharesTheCpusBetweenTheRanksOfTheHost) {
  EXPECT_EQ(DefaultCopyLanes(), Expected(1));
  setenv("LOCAL_WORLD_SIZE", "8", 1);  // torchrun
  EXPECT_EQ(DefaultCopyLanes(), Expected(8));
  unsetenv("LOCAL_WORLD_SIZE");
  setenv("CCO_WORLD_SIZE", "4", 1);  // without cco.launch's local rank: not known to be one host
  EXPECT_EQ(DefaultCopyLanes(), Expected(1));
  setenv("CCO_LOCAL_RANK", "0", 1);  // cco.launch: every rank on this host
  EXPECT_EQ(DefaultCopyLanes(), Expected(4));
  setenv("LOCAL_WORLD_SIZE", "2", 1);  // torchrun's count first
  EXPECT_EQ(DefaultCopyLanes(), Expected(2));
}

}  // namespace
}  // namespace gpu
}  // namespace cco
