// SPDX-License-Identifier: MIT
// The proxy's CopyQueue on the cpu platform (copies and writes land at once, in call order),
// through a CountingPlatform (the copies of one submission run last first, as a driver may run
// them in any order): pieces that continue each other between the same windows become one
// copy, copies apart from each other one submission, writes in a row one submission, nothing is
// reordered between writes and copies (the writes behind copies go with them, one submission),
// pieces that would overlap once joined stay apart, a copy that touches a held one's bytes goes
// in a later submission, and after a failed submission nothing more is submitted.
#include <gtest/gtest.h>
#include <stdint.h>

#include <numeric>
#include <vector>

#include "platform/platform.h"
#include "proxy/copy_queue.h"
#include "tests/host/testing/counting_platform.h"

namespace cco {
namespace {

class CopyQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(CreateCpuPlatform(&cpu_).ok());
    counting_ = new CountingPlatform(cpu_);
    platform_ = counting_;
  }
  void TearDown() override {
    delete counting_;
    delete cpu_;
  }
  uint64_t At(std::vector<uint64_t>& v, size_t word) { return reinterpret_cast<uint64_t>(v.data() + word); }
  // How many copies each copy submission carried.
  std::vector<int> Copies() { return counting_->CopySubmissions(); }
  Platform* cpu_ = nullptr;
  CountingPlatform* counting_ = nullptr;
  Platform* platform_ = nullptr;
};

constexpr uint64_t kPair = uint64_t{3} << 32 | 4;  // windows 3 and 4

std::vector<uint64_t> Words(size_t n, uint64_t first) {
  std::vector<uint64_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST_F(CopyQueueTest, PiecesThatContinueEachOtherAreOneCopy) {
  std::vector<uint64_t> src = Words(64, 1000), dst(64, 0);
  CopyQueue q(platform_, 0, 0);
  for (size_t piece = 0; piece < 8; ++piece)  // 8 pieces of 8 words, in order
    ASSERT_TRUE(q.Copy(At(dst, 8 * piece), At(src, 8 * piece), 64, kPair).ok());
  EXPECT_EQ(dst[0], 0u);  // held back until something else needs the stream
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(q.submissions(), 1u);
  EXPECT_EQ(Copies(), std::vector<int>{1});
  EXPECT_EQ(dst, src);
}

// Copies apart from one another are copies of their own, in one submission.
TEST_F(CopyQueueTest, PiecesOutOfOrderOrApartAreCopiesOfTheirOwn) {
  std::vector<uint64_t> src = Words(64, 1000), dst(64, 0);
  CopyQueue q(platform_, 0, 0);
  ASSERT_TRUE(q.Copy(At(dst, 8), At(src, 8), 64, kPair).ok());
  ASSERT_TRUE(q.Copy(At(dst, 0), At(src, 0), 64, kPair).ok());    // before the first: not a continuation
  ASSERT_TRUE(q.Copy(At(dst, 24), At(src, 16), 64, kPair).ok());  // the source continues, the destination does not
  ASSERT_TRUE(q.Copy(At(dst, 32), At(src, 32), 0, kPair).ok());   // nothing to copy: no submission
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(q.submissions(), 1u);
  EXPECT_EQ(Copies(), std::vector<int>{3});
  for (size_t w = 0; w < 16; ++w) EXPECT_EQ(dst[w], src[w]) << w;
  for (size_t w = 0; w < 8; ++w) EXPECT_EQ(dst[24 + w], src[16 + w]) << w;
  EXPECT_EQ(dst[16], 0u);
}

// A write queued after copies lands after them: here it overwrites a word the held-back copy
// writes, so issuing the copy later would undo it.
TEST_F(CopyQueueTest, AWriteComesAfterTheCopiesBeforeIt) {
  std::vector<uint64_t> src = Words(16, 1000), dst(16, 0);
  CopyQueue q(platform_, 0, 0);
  ASSERT_TRUE(q.Copy(At(dst, 0), At(src, 0), 64, kPair).ok());
  ASSERT_TRUE(q.Copy(At(dst, 8), At(src, 8), 64, kPair).ok());
  ASSERT_TRUE(q.WriteValue64(At(dst, 3), 7).ok());
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(dst[3], 7u);
  EXPECT_EQ(dst[15], src[15]);
  EXPECT_EQ(q.submissions(), 1u);  // the joined copy with the write behind it
  EXPECT_EQ(counting_->copiesThenWrites, 1);
  EXPECT_EQ(Copies(), std::vector<int>{1});
}

// Copies apart, then the words behind them (a signal, `consumed`, the tail's marker): one
// submission, and the marker vouches for all of it.
TEST_F(CopyQueueTest, CopiesAndTheWritesBehindThemAreOneSubmission) {
  std::vector<uint64_t> src = Words(32, 1000), dst(32, 0), words(2, 0);
  uint64_t written = 0, landed = 0;
  StreamTail tail(&landed, reinterpret_cast<uint64_t>(&written));
  CopyQueue q(platform_, 0, 0, &tail);
  ASSERT_TRUE(q.Copy(At(dst, 16), At(src, 0), 64, kPair).ok());
  ASSERT_TRUE(q.Copy(At(dst, 0), At(src, 16), 64, kPair).ok());
  ASSERT_TRUE(q.WriteValue64(At(words, 0), 5).ok());
  ASSERT_TRUE(q.WriteValue64(At(words, 1), 6).ok());
  ASSERT_TRUE(q.Mark().ok());
  EXPECT_EQ(words[0], 0u);  // all held back
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(q.submissions(), 1u);
  EXPECT_EQ(Copies(), std::vector<int>{2});
  EXPECT_EQ(counting_->copiesThenWrites, 1);
  for (size_t w = 0; w < 8; ++w) {
    EXPECT_EQ(dst[16 + w], src[w]) << w;
    EXPECT_EQ(dst[w], src[16 + w]) << w;
  }
  EXPECT_EQ(words, (std::vector<uint64_t>{5, 6}));
  EXPECT_EQ(written, 1u);
  landed = written;
  EXPECT_TRUE(q.Idle());
}

// A piece that continues a copy with writes held behind it does not join it: the joined copy
// would land ahead of those writes. Here the write's word is the piece's, so the piece must win.
TEST_F(CopyQueueTest, APieceNeverJoinsACopyThatWritesAreHeldBehind) {
  std::vector<uint64_t> src = Words(16, 1000), dst(16, 0);
  CopyQueue q(platform_, 0, 0);
  ASSERT_TRUE(q.Copy(At(dst, 0), At(src, 0), 64, kPair).ok());
  ASSERT_TRUE(q.WriteValue64(At(dst, 9), 7).ok());
  ASSERT_TRUE(q.Copy(At(dst, 8), At(src, 8), 64, kPair).ok());  // continues the first
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(dst, src);
  EXPECT_EQ(q.submissions(), 2u);  // the copy and the write, then the piece
  EXPECT_EQ(Copies(), (std::vector<int>{1, 1}));
}

// A chain where each piece reads what the one before wrote: joined it would be one
// overlapping copy (another result), so the pieces stay apart.
TEST_F(CopyQueueTest, PiecesThatWouldOverlapOnceJoinedStayApart) {
  std::vector<uint64_t> v = Words(32, 1000);
  const std::vector<uint64_t> before = v;
  CopyQueue q(platform_, 0, 0);
  ASSERT_TRUE(q.Copy(At(v, 8), At(v, 0), 64, kPair).ok());   // [0, 8) -> [8, 16)
  ASSERT_TRUE(q.Copy(At(v, 16), At(v, 8), 64, kPair).ok());  // [8, 16) -> [16, 24): reads the first's result
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(q.submissions(), 2u);  // nor in one submission: the second reads what the first writes
  EXPECT_EQ(Copies(), (std::vector<int>{1, 1}));
  for (size_t w = 0; w < 8; ++w) {
    EXPECT_EQ(v[8 + w], before[w]) << w;
    EXPECT_EQ(v[16 + w], before[w]) << w;  // the chain's result, not [8, 16)'s old words
  }
}

// A copy that writes what a held copy reads, or writes what it writes, goes in a later
// submission too: within one, the platform here runs the later copy first.
TEST_F(CopyQueueTest, ACopyTouchingAHeldCopysBytesWaitsForIt) {
  std::vector<uint64_t> v = Words(64, 1000);
  const std::vector<uint64_t> before = v;
  CopyQueue q(platform_, 0, 0);
  ASSERT_TRUE(q.Copy(At(v, 32), At(v, 0), 64, kPair).ok());   // reads [0, 8)
  ASSERT_TRUE(q.Copy(At(v, 48), At(v, 56), 32, kPair).ok());  // apart from it: same submission
  ASSERT_TRUE(q.Copy(At(v, 4), At(v, 16), 32, kPair).ok());   // writes [4, 8), which the first reads
  ASSERT_TRUE(q.Copy(At(v, 36), At(v, 24), 16, kPair).ok());  // writes [36, 38), which the first writes
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(Copies(), (std::vector<int>{2, 2}));
  // [32, 40) holds [0, 8) as it was before the third copy wrote [4, 8), but for [36, 38), which
  // the fourth copy wrote after the first.
  for (size_t w = 0; w < 8; ++w) EXPECT_EQ(v[32 + w], w == 4 || w == 5 ? before[20 + w] : before[w]) << w;
  for (size_t w = 0; w < 4; ++w) EXPECT_EQ(v[4 + w], before[16 + w]) << w;
  for (size_t w = 0; w < 4; ++w) EXPECT_EQ(v[48 + w], before[56 + w]) << w;
}

// More copies than a submission holds go in as many submissions as it takes.
TEST_F(CopyQueueTest, ManyCopiesAreCutIntoSubmissions) {
  std::vector<uint64_t> src = Words(40, 1000), dst(80, 0);
  CopyQueue q(platform_, 0, 0);
  for (size_t w = 0; w < src.size(); ++w) ASSERT_TRUE(q.Copy(At(dst, 2 * w), At(src, w), 8, kPair).ok());
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(Copies(), (std::vector<int>{16, 16, 8}));
  for (size_t w = 0; w < src.size(); ++w) EXPECT_EQ(dst[2 * w], src[w]) << w;
}

// Pieces that continue each other but run between other windows (neighbours in the flat
// range, separately mapped) are not joined, nor are copies that name no windows.
TEST_F(CopyQueueTest, OnlyCopiesBetweenTheSameWindowsJoin) {
  std::vector<uint64_t> src = Words(32, 1000), dst(32, 0);
  CopyQueue q(platform_, 0, 0);
  ASSERT_TRUE(q.Copy(At(dst, 0), At(src, 0), 64, kPair).ok());
  ASSERT_TRUE(q.Copy(At(dst, 8), At(src, 8), 64, kPair + 1).ok());  // another source window
  ASSERT_TRUE(q.Copy(At(dst, 16), At(src, 16), 64, 0).ok());
  ASSERT_TRUE(q.Copy(At(dst, 24), At(src, 24), 64, 0).ok());
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(Copies(), std::vector<int>{4});  // four copies (none joined), one submission
  EXPECT_EQ(dst, src);
}

// Writes one after another are one submission (the driver's batch), landing in call order:
// two writes of one word leave the second's value.
TEST_F(CopyQueueTest, WritesInARowAreOneSubmissionInOrder) {
  std::vector<uint64_t> dst(8, 0);
  CopyQueue q(platform_, 0, 0);
  ASSERT_TRUE(q.WriteValue64(At(dst, 0), 5).ok());
  ASSERT_TRUE(q.WriteValue64(At(dst, 1), 6).ok());
  ASSERT_TRUE(q.WriteValue64(At(dst, 0), 7).ok());
  EXPECT_EQ(dst[0], 0u);  // held back until something else needs the stream
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(q.submissions(), 1u);
  EXPECT_EQ(dst[0], 7u);
  EXPECT_EQ(dst[1], 6u);
}

// A copy queued after writes lands after them: here it overwrites a word a held-back write
// writes, so issuing the write later would undo it.
TEST_F(CopyQueueTest, ACopyComesAfterTheWritesBeforeIt) {
  std::vector<uint64_t> src = Words(8, 1000), dst(8, 0);
  CopyQueue q(platform_, 0, 0);
  ASSERT_TRUE(q.WriteValue64(At(dst, 3), 7).ok());
  ASSERT_TRUE(q.Copy(At(dst, 0), At(src, 0), 64, kPair).ok());
  ASSERT_TRUE(q.WriteValue64(At(dst, 5), 9).ok());
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(q.submissions(), 2u);  // the write, then the copy with the write behind it
  EXPECT_EQ(dst[3], src[3]);
  EXPECT_EQ(dst[5], 9u);
}

// More writes than a batch holds go in as many submissions as it takes, none lost.
TEST_F(CopyQueueTest, ManyWritesAreCutIntoBatches) {
  std::vector<uint64_t> dst(40, 0);
  CopyQueue q(platform_, 0, 0);
  for (size_t w = 0; w < dst.size(); ++w) ASSERT_TRUE(q.WriteValue64(At(dst, w), 100 + w).ok());
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(q.submissions(), 3u);  // 16 + 16 + 8
  for (size_t w = 0; w < dst.size(); ++w) EXPECT_EQ(dst[w], 100 + w) << w;
}

// A write that fails (the cpu platform refuses an unaligned word) fails every call after it,
// and nothing more is submitted: its owner must not count what followed as done.
TEST_F(CopyQueueTest, AfterAFailedSubmissionNothingMoreIsSubmitted) {
  std::vector<uint64_t> src = Words(16, 1000), dst(16, 0);
  CopyQueue q(platform_, 0, 0);
  ASSERT_TRUE(q.Copy(At(dst, 0), At(src, 0), 64, kPair).ok());
  ASSERT_TRUE(q.WriteValue64(At(dst, 0) + 4, 7).ok());            // held back behind it: it fails when issued
  EXPECT_FALSE(q.Copy(At(dst, 8), At(src, 8), 64, kPair).ok());   // issues the two
  for (size_t w = 0; w < 8; ++w) EXPECT_EQ(dst[w], src[w]) << w;  // the copy before the write landed
  EXPECT_FALSE(q.Flush().ok());
  EXPECT_FALSE(q.WriteValue64(At(dst, 15), 9).ok());
  EXPECT_FALSE(q.Flush().ok());
  EXPECT_EQ(dst[8], 0u);
  EXPECT_EQ(dst[15], 0u);
  EXPECT_EQ(q.submissions(), 1u);
}

TEST_F(CopyQueueTest, WritesHeldBackAreIssuedWhenTheQueueGoes) {
  std::vector<uint64_t> dst(2, 0);
  {
    CopyQueue q(platform_, 0, 0);
    ASSERT_TRUE(q.WriteValue64(At(dst, 1), 3).ok());
  }
  EXPECT_EQ(dst[1], 3u);
}

TEST_F(CopyQueueTest, ACopyHeldBackIsIssuedWhenTheQueueGoes) {
  std::vector<uint64_t> src = Words(8, 1000), dst(8, 0);
  {
    CopyQueue q(platform_, 0, 0);
    ASSERT_TRUE(q.Copy(At(dst, 0), At(src, 0), 64, kPair).ok());
  }
  EXPECT_EQ(dst, src);
}

// The tail (what still runs on the stream). The cpu platform writes the marker at once into
// `written`; the tail reads `landed`, which the test copies from it when the "stream" has run:
// a stream whose work completes only when the test says so.
class StreamTailTest : public CopyQueueTest {
 protected:
  uint64_t written = 0, landed = 0;
  StreamTail tail{&landed, reinterpret_cast<uint64_t>(&written)};
  void StreamRan() { landed = written; }
};

TEST_F(StreamTailTest, IdleOnlyOnceTheMarkerBehindEverySubmissionLanded) {
  std::vector<uint64_t> src = Words(8, 1000), dst(8, 0), consumed(1, 0);
  CopyQueue q(platform_, 0, 0, &tail);
  EXPECT_TRUE(q.Idle());  // nothing ever submitted
  ASSERT_TRUE(q.Copy(At(dst, 0), At(src, 0), 64, kPair).ok());
  EXPECT_FALSE(q.Idle());  // held back
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_FALSE(q.Idle());  // submitted, no marker behind it
  StreamRan();
  EXPECT_FALSE(q.Idle());  // still none: nothing vouches for the copy
  ASSERT_TRUE(q.WriteValue64(At(consumed, 0), 5).ok());
  ASSERT_TRUE(q.Mark().ok());
  ASSERT_TRUE(q.Flush().ok());
  EXPECT_EQ(written, 1u);
  EXPECT_EQ(q.submissions(), 2u);  // the marker went with the write before it
  EXPECT_FALSE(q.Idle());          // the marker has not landed
  StreamRan();
  EXPECT_TRUE(q.Idle());
  ASSERT_TRUE(q.WriteValue64(At(consumed, 0), 6).ok());
  EXPECT_FALSE(q.Idle());  // a write held back
}

// Another queue over the same stream (the next ring's) sees what the first submitted.
TEST_F(StreamTailTest, EveryQueueOverTheStreamSharesItsTail) {
  std::vector<uint64_t> words(4, 0);
  CopyQueue first(platform_, 0, 0, &tail);
  ASSERT_TRUE(first.WriteValue64(At(words, 0), 1).ok());
  ASSERT_TRUE(first.Flush().ok());
  CopyQueue second(platform_, 0, 0, &tail);
  EXPECT_FALSE(second.Idle());
  ASSERT_TRUE(second.Mark().ok());
  ASSERT_TRUE(second.Flush().ok());
  StreamRan();
  EXPECT_TRUE(first.Idle() && second.Idle());
}

// A marker with a write after it in the same submission vouches for nothing (it is not the
// last thing on the stream), and a failed submission leaves the tail busy for good, whatever
// lands: a word written with a CPU store could otherwise overtake work still queued.
TEST_F(StreamTailTest, AMarkerNotLastAndAFailureKeepItBusy) {
  std::vector<uint64_t> words(4, 0);
  CopyQueue q(platform_, 0, 0, &tail);
  ASSERT_TRUE(q.Mark().ok());
  ASSERT_TRUE(q.WriteValue64(At(words, 0), 1).ok());
  ASSERT_TRUE(q.Flush().ok());
  StreamRan();
  EXPECT_FALSE(q.Idle());
  ASSERT_TRUE(q.WriteValue64(At(words, 1) + 4, 2).ok());  // unaligned: the cpu platform refuses it
  ASSERT_TRUE(q.Mark().ok());
  EXPECT_FALSE(q.Flush().ok());
  StreamRan();
  EXPECT_FALSE(q.Idle());
  CopyQueue next(platform_, 0, 0, &tail);
  EXPECT_FALSE(next.Idle());  // the failed batch's marker never counted
}

// Without a tail a queue is never idle: every word goes on the stream.
TEST_F(CopyQueueTest, WithoutATailNothingIsIdle) {
  CopyQueue q(platform_, 0, 0);
  EXPECT_FALSE(q.Idle());
  EXPECT_TRUE(q.Mark().ok());
  EXPECT_EQ(q.submissions(), 0u);
}

}  // namespace
}  // namespace cco
