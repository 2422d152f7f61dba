// SPDX-License-Identifier: MIT
// The tcp backend's header checks (net/tcp_wire.h): every field a peer sends is bounded before
// the backend acts on it, whatever the bytes.
#include <gtest/gtest.h>
#include <string.h>

#include <random>

#include "net/tcp_wire.h"

namespace cco {
namespace {

TcpHeader Put(uint64_t seq, uint64_t bytes) {
  TcpHeader h = TcpRequestHeader(kTcpPut, seq);
  h.bytes = bytes;
  return h;
}

TEST(TcpWire, RequestsInSequenceAndInBounds) {
  EXPECT_TRUE(CheckRequest(Put(1, 4096), 1, 0).ok());
  EXPECT_FALSE(CheckRequest(Put(2, 4096), 1, 0).ok());              // a skipped or replayed request
  EXPECT_FALSE(CheckRequest(Put(1, kTcpMaxBytes + 1), 1, 0).ok());  // larger than any window
  TcpHeader h = Put(1, 8);
  h.magic ^= 1;
  EXPECT_FALSE(CheckRequest(h, 1, 0).ok());
  h = Put(1, 8);
  h.flags = 0x80;
  EXPECT_FALSE(CheckRequest(h, 1, 0).ok());
  h = Put(1, 8);
  h.reserved = 1;
  EXPECT_FALSE(CheckRequest(h, 1, 0).ok());
}

TEST(TcpWire, EachRequestTypeHasItsShape) {
  TcpHeader v = TcpRequestHeader(kTcpPutValue, 1);
  for (uint64_t bytes : {0ull, 9ull}) {
    v.bytes = bytes;
    EXPECT_FALSE(CheckRequest(v, 1, 0).ok()) << bytes;
  }
  v.bytes = 8;
  EXPECT_TRUE(CheckRequest(v, 1, 0).ok());
  TcpHeader s = TcpRequestHeader(kTcpSignal, 1);
  EXPECT_FALSE(CheckRequest(s, 1, 0).ok());  // a signal without its word
  s.flags = kTcpHasSignal;
  EXPECT_TRUE(CheckRequest(s, 1, 0).ok());
  s.bytes = 1;
  EXPECT_FALSE(CheckRequest(s, 1, 0).ok());
  TcpHeader g = TcpRequestHeader(kTcpGet, 1);
  g.bytes = 64;
  EXPECT_TRUE(CheckRequest(g, 1, 0).ok());
  g.flags = kTcpHasSignal;
  EXPECT_FALSE(CheckRequest(g, 1, 0).ok());
  EXPECT_FALSE(CheckRequest(TcpAnswerHeader(kTcpAck, 1), 1, 0).ok());  // an answer where a request belongs
}

TEST(TcpWire, ACarriedAckOnlyOfRequestsSent) {
  TcpHeader h = Put(1, 8);
  h.flags = kTcpHasAck;
  h.ackSeq = 5;
  h.ackAfter = 2;
  EXPECT_TRUE(CheckRequest(h, 1, 5).ok());
  EXPECT_FALSE(CheckRequest(h, 1, 4).ok());  // acks a request this rank never sent
  h.ackAfter = 5;
  EXPECT_FALSE(CheckRequest(h, 1, 5).ok());  // waits for an answer to a request it acks
  h.ackAfter = 0;
  h.ackSeq = 0;
  EXPECT_FALSE(CheckRequest(h, 1, 5).ok());  // the flag without an ack
  h.flags = 0;
  h.ackSeq = 3;
  EXPECT_FALSE(CheckRequest(h, 1, 5).ok());  // an ack without the flag
  TcpHeader a = TcpAnswerHeader(kTcpAck, 1);
  a.ackAfter = 1;
  EXPECT_FALSE(CheckAnswer(a, 1).ok());  // answers carry no second ack
}

TEST(TcpWire, AnswersOnlyToRequestsSent) {
  EXPECT_TRUE(CheckAnswer(TcpAnswerHeader(kTcpAck, 3), 3).ok());
  EXPECT_FALSE(CheckAnswer(TcpAnswerHeader(kTcpAck, 4), 3).ok());
  EXPECT_FALSE(CheckAnswer(TcpAnswerHeader(kTcpAck, 0), 3).ok());
  TcpHeader r = TcpAnswerHeader(kTcpRefused, 1);
  EXPECT_FALSE(CheckAnswer(r, 1).ok());  // no reason
  r.value = kRefusedWindow;
  EXPECT_TRUE(CheckAnswer(r, 1).ok());
  TcpHeader d = TcpAnswerHeader(kTcpGetData, 1);
  d.bytes = kTcpMaxBytes + 1;
  EXPECT_FALSE(CheckAnswer(d, 1).ok());
  EXPECT_FALSE(CheckAnswer(Put(1, 8), 1).ok());  // a request where an answer belongs
}

// A peer's notice that its communicator failed because of a rank: no request's answer (seq 0),
// no payload, a rank that fits an int32 (the proxy checks it against the world).
TEST(TcpWire, AFailureNoticeAnswersNoRequest) {
  TcpHeader n = TcpAnswerHeader(kTcpFailed, 0);
  n.value = 3;
  EXPECT_TRUE(CheckAnswer(n, 0).ok());  // even before any request was sent
  n.seq = 1;
  EXPECT_FALSE(CheckAnswer(n, 1).ok());
  n.seq = 0;
  n.bytes = 8;
  EXPECT_FALSE(CheckAnswer(n, 1).ok());
  n.bytes = 0;
  n.value = uint64_t{INT32_MAX} + 1;
  EXPECT_FALSE(CheckAnswer(n, 1).ok());
  EXPECT_FALSE(CheckRequest(TcpAnswerHeader(kTcpFailed, 1), 1, 5).ok());  // not a request
}

// Random headers: the checks never accept one that breaks a bound the backend relies on.
TEST(TcpWire, RandomHeadersKeepTheirBounds) {
  std::mt19937_64 rng(7);
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    TcpHeader h;
    uint64_t words[sizeof(TcpHeader) / 8];
    for (auto& w : words) w = rng();
    memcpy(&h, words, sizeof(h));
    h.magic = (i % 2) ? kTcpMagic : h.magic;
    h.type = static_cast<uint16_t>(h.type % 24);
    h.flags &= 3;
    h.reserved = (i % 3) ? 0 : h.reserved;
    h.seq = (i % 5) ? 1 : h.seq;
    h.bytes = (i % 7) ? h.bytes % 32 : h.bytes;
    h.ackSeq = (i % 11) ? h.ackSeq % 8 : h.ackSeq;
    h.ackAfter = (i % 13) ? h.ackAfter % 8 : h.ackAfter;
    if (CheckRequest(h, 1, 4).ok()) {
      ++accepted;
      ASSERT_EQ(h.magic, kTcpMagic);
      if (h.flags & kTcpHasAck) {
        ASSERT_TRUE(h.ackSeq >= 1 && h.ackSeq <= 4 && h.ackAfter < h.ackSeq);
      } else {
        ASSERT_TRUE(h.ackSeq == 0 && h.ackAfter == 0);
      }
      ASSERT_LE(h.bytes, kTcpMaxBytes);
      if (h.type == kTcpPutValue) {
        ASSERT_TRUE(h.bytes >= 1 && h.bytes <= 8);
      }
      if (h.type == kTcpSignal) {
        ASSERT_TRUE((h.flags & kTcpHasSignal) && h.bytes == 0);
      }
      ASSERT_TRUE(h.type >= kTcpPut && h.type <= kTcpGet);
    }
    if (CheckAnswer(h, 1).ok()) {
      ++accepted;
      if (h.type == kTcpFailed) {
        ASSERT_TRUE(h.seq == 0 && h.bytes == 0 && h.value <= uint64_t{INT32_MAX});
      } else {
        ASSERT_EQ(h.seq, 1u);
        ASSERT_TRUE(h.type == kTcpAck || h.type == kTcpGetData || h.type == kTcpRefused);
      }
    }
  }
  EXPECT_GT(accepted, 100);  // the generator reaches well-formed headers too
}

}  // namespace
}  // namespace cco
