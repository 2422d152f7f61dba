// SPDX-License-Identifier: MIT
// The proxy ring on the CPU: the device producer (device/ring.hpp, compiled for the host:
// each thread a one-lane warp) against the proxy's consumer (host/src/proxy/ring_consumer):
// 1 to 64 producers in every doorbell mode and mixed on one ring, depths from 1 to 256, out of
// order completion, the deadlock rule, torn writes, abort, timeout, ring errors, and tickets
// near 2^32 and 2^64.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "abi/gda.h"
#include "device/gda.hpp"  // the doorbell modes by their names
#include "device/ring.hpp"
#include "proxy/ring_consumer.h"
#include "tests/device/test_ring.h"

namespace cco {
namespace {

using RingView = ring::View;

// A descriptor that says who posted it and which of its posts it is, checkably.
ccoGdaDesc Describe(uint32_t producer, uint64_t k) {
  ccoGdaDesc d = {};
  d.op = CCO_GDA_OP_PUT;
  d.srcWindow = producer;
  d.dstOffset = k;
  d.bytes = (producer * 0x9e3779b97f4a7c15ull) ^ (k * 0xc2b2ae3d27d4eb4full);
  return d;
}

template <ccoGdaDoorbellMode Mode, bool Mirrored = false>
int32_t PostAs(RingView r, const ccoGdaDesc& d, const WaitLimits& l) {
  uint64_t ticket;
  return ring::Post<Mode, Mirrored>(r, d, l, &ticket);
}

// Mirrored: the ring's waits read the device-side copy of `consumed` alone (SDMA's rings).
template <bool Mirrored> int32_t PostInMode(int mode, RingView r, const ccoGdaDesc& d, const WaitLimits& l) {
  switch (mode) {
    case 0: return PostAs<ccoGdaImmediate, Mirrored>(r, d, l);
    case 1: return PostAs<ccoGdaDeferred, Mirrored>(r, d, l);
    default: return PostAs<ccoGdaCallerOrdered, Mirrored>(r, d, l);
  }
}

template <bool Mirrored> int32_t FlushInMode(int mode, RingView r, const WaitLimits& l) {
  switch (mode) {
    case 0: return ring::Flush<ccoGdaImmediate, Mirrored>(r, l);
    case 1: return ring::Flush<ccoGdaDeferred, Mirrored>(r, l);
    default: return ring::Flush<ccoGdaCallerOrdered, Mirrored>(r, l);
  }
}

// `producers` threads post `perProducer` descriptors each, thread p in mode modeOf(p), then
// flush; the consumer takes them, checks each and the per-producer order, and completes them
// out of order. Everything arrives exactly once.
template <bool Mirrored = false>
void RunProducers(uint32_t depth, int producers, int perProducer, int (*modeOf)(int), uint64_t first = 0) {
  TestRing ring(depth, first, Mirrored);
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  std::vector<uint64_t> nextOf(producers, 0);
  const int total = producers * perProducer;
  std::thread consumer([&] {
    std::mt19937 rng(42);
    std::vector<uint64_t> pending;
    int got = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (got < total || !pending.empty()) {
      if (stop || std::chrono::steady_clock::now() > deadline) return;
      ccoGdaDesc d;
      uint64_t ticket;
      if (got < total && ring.consumer.Next(&d, &ticket)) {
        ++got;
        const uint32_t p = d.srcWindow;
        if (p >= static_cast<uint32_t>(producers) || d.bytes != Describe(p, d.dstOffset).bytes ||
            d.dstOffset != nextOf[p])
          ++failures;
        else ++nextOf[p];
        pending.push_back(ticket);
      }
      // Complete out of order, and sometimes only after a while.
      if (!pending.empty() && (pending.size() > 3 || rng() % 4 == 0 || got == total)) {
        const size_t i = rng() % pending.size();
        ring.Complete(pending[i]);
        pending.erase(pending.begin() + i);
      }
    }
  });
  std::vector<std::thread> threads;
  std::vector<int32_t> status(producers, -1);
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      const int mode = modeOf(p);
      int32_t s = CCO_DEVICE_STATUS_OK;
      for (int k = 0; k < perProducer && s == CCO_DEVICE_STATUS_OK; ++k)
        s = PostInMode<Mirrored>(mode, ring.view(), Describe(p, k), ring.limits());
      if (s == CCO_DEVICE_STATUS_OK) s = FlushInMode<Mirrored>(mode, ring.view(), ring.limits());
      status[p] = s;
    });
  }
  for (auto& t : threads) t.join();
  consumer.join();
  stop = true;
  EXPECT_EQ(failures.load(), 0);
  for (int p = 0; p < producers; ++p) {
    EXPECT_EQ(status[p], CCO_DEVICE_STATUS_OK) << "producer " << p;
    EXPECT_EQ(nextOf[p], static_cast<uint64_t>(perProducer)) << "producer " << p;
  }
  EXPECT_EQ(ring.consumer.consumed(), first + static_cast<uint64_t>(total));
  EXPECT_EQ(ring.host.consumed, first + static_cast<uint64_t>(total));
  if (Mirrored) {
    EXPECT_EQ(ring.dev.consumedCache, first + static_cast<uint64_t>(total));
  }
}

int AllImmediate(int) { return 0; }
int AllDeferred(int) { return 1; }
int AllCallerOrdered(int) { return 2; }
int Mixed(int p) { return p % 3; }

TEST(GdaRing, OneProducerEachMode) {
  for (auto mode : {AllImmediate, AllDeferred, AllCallerOrdered}) RunProducers(256, 1, 5000, mode);
}

TEST(GdaRing, ManyProducersMixedModesOnOneRing) {
  for (int producers : {2, 8, 64}) RunProducers(256, producers, 20000 / producers, Mixed);
}

TEST(GdaRing, TinyDepthsWrapUnderBackPressure) {
  for (uint32_t depth : {1u, 2u, 4u}) {
    RunProducers(depth, 1, 2000, AllImmediate);
    RunProducers(depth, 4, 500, Mixed);
  }
}

TEST(GdaRing, TicketsNear2To32And2To64) {
  RunProducers(8, 4, 200, Mixed, (uint64_t{1} << 32) - 300);
  RunProducers(8, 4, 200, Mixed, ~uint64_t{0} - 300);
  RunProducers(256, 3, 300, Mixed, ~uint64_t{0} - 10);
}

// --- doorbell modes, one step at a time ---------------------------------------------------

// Whether the consumer can take anything within `ms`.
bool Visible(TestRing& ring, int ms, ccoGdaDesc* d = nullptr, uint64_t* t = nullptr) {
  ccoGdaDesc scratch;
  uint64_t ticket;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  do {
    if (ring.consumer.Next(d ? d : &scratch, t ? t : &ticket)) return true;
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

TEST(GdaRing, DeferredPostsWaitForTheNextRing) {
  TestRing ring(16);
  for (int k = 0; k < 3; ++k) ASSERT_EQ(PostAs<ccoGdaDeferred>(ring.view(), Describe(0, k), ring.limits()), 0);
  EXPECT_FALSE(Visible(ring, 30));
  ASSERT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, 3), ring.limits()), 0);
  ccoGdaDesc d;
  uint64_t t;
  for (uint64_t k = 0; k < 4; ++k) {
    ASSERT_TRUE(Visible(ring, 100, &d, &t));
    EXPECT_EQ(d.dstOffset, k);
    EXPECT_EQ(t, k);
  }
}

TEST(GdaRing, CallerOrderedPostsWaitForTheirFlush) {
  TestRing ring(16);
  for (int k = 0; k < 3; ++k) ASSERT_EQ(PostAs<ccoGdaCallerOrdered>(ring.view(), Describe(0, k), ring.limits()), 0);
  EXPECT_FALSE(Visible(ring, 30));
  int32_t flushed = -1;
  std::thread flusher([&] { flushed = ring::Flush<ccoGdaCallerOrdered>(ring.view(), ring.limits()); });
  ccoGdaDesc d;
  uint64_t t;
  for (uint64_t k = 0; k < 3; ++k) {
    ASSERT_TRUE(Visible(ring, 1000, &d, &t));
    ring.Complete(t);
  }
  flusher.join();
  EXPECT_EQ(flushed, CCO_DEVICE_STATUS_OK);
}

// A full ring of deferred posts: the next poster rings them before it waits, or it would
// wait for credit that only a ring could bring.
TEST(GdaRing, APosterWaitingForCreditRingsWhatIsBelowIt) {
  TestRing ring(4);
  for (int k = 0; k < 4; ++k) ASSERT_EQ(PostAs<ccoGdaDeferred>(ring.view(), Describe(0, k), ring.limits()), 0);
  int32_t fifth = -1;
  std::thread poster([&] { fifth = PostAs<ccoGdaDeferred>(ring.view(), Describe(0, 4), ring.limits(2'000'000'000)); });
  ccoGdaDesc d;
  uint64_t t;
  for (int k = 0; k < 4; ++k) {
    ASSERT_TRUE(Visible(ring, 1000, &d, &t)) << "post " << k << " was never released";
    ring.Complete(t);
  }
  poster.join();
  EXPECT_EQ(fifth, CCO_DEVICE_STATUS_OK);
}

// The proxy publishes `consumed` behind its work, and only over the done prefix: work done
// out of order is held back until the tickets below it are done.
TEST(GdaRing, ConsumedIsPublishedOverTheDonePrefixOnly) {
  TestRing ring(8);
  for (int k = 0; k < 3; ++k) ASSERT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, k), ring.limits()), 0);
  ccoGdaDesc d;
  uint64_t t[3];
  for (auto& ticket : t) ASSERT_TRUE(ring.consumer.Next(&d, &ticket));
  uint64_t consumed = 0;
  EXPECT_FALSE(ring.consumer.Unpublished(&consumed));
  ring.consumer.Complete(t[1]);
  EXPECT_FALSE(ring.consumer.Unpublished(&consumed)) << "ticket 1 is done, ticket 0 is not";
  ring.consumer.Complete(t[0]);
  ASSERT_TRUE(ring.consumer.Unpublished(&consumed));
  EXPECT_EQ(consumed, 2u);
  EXPECT_FALSE(ring.consumer.Unpublished(&consumed)) << "said once";
  ring.consumer.Complete(t[2]);
  ASSERT_TRUE(ring.consumer.Unpublished(&consumed));
  EXPECT_EQ(consumed, 3u);
  EXPECT_EQ(ring.host.consumed, 0u) << "the consumer itself publishes nothing";
}

// A slot that was released (by a later poster's ring) but is still being written is not taken.
TEST(GdaRing, ATornDescriptorIsNeverConsumed) {
  TestRing ring(16);
  uint64_t slow;
  ASSERT_EQ(ring::Reserve(ring.view(), ring.limits(), &slow), 0);
  ccoGdaDesc* slot = ring.slots.data() + cco_gda_slot_of(slow, 16);
  slot->dstOffset = 77;                                                               // half written
  ASSERT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(1, 0), ring.limits()), 0);  // rings both
  EXPECT_FALSE(Visible(ring, 30));
  EXPECT_EQ(ring.consumer.released(), 2u);
  ring::Write<ccoGdaImmediate>(ring.view(), slow, Describe(0, 0));
  ccoGdaDesc d;
  uint64_t t;
  ASSERT_TRUE(Visible(ring, 100, &d, &t));
  EXPECT_EQ(t, slow);
  EXPECT_EQ(d.srcWindow, 0u);
  ASSERT_TRUE(Visible(ring, 100, &d, &t));
  EXPECT_EQ(d.srcWindow, 1u);
}

// Two rings at once whose host stores land in the other order: the later link waits in its
// own word until the earlier one lands, and the consumer then follows both (one shared host
// word would have ended at the earlier ring's value, the later ring lost).
TEST(GdaRing, RingsWhoseMarksLandOutOfOrderLoseNothing) {
  TestRing ring(16);
  for (int k = 0; k < 5; ++k) ASSERT_EQ(PostAs<ccoGdaDeferred>(ring.view(), Describe(0, k), ring.limits()), 0);
  ring::Doorbell(ring.view(), 2);
  const uint64_t firstLink = ring.marks[0];
  ring.marks[0] = 0;  // the first ring's store has not landed
  ring::Doorbell(ring.view(), 5);
  EXPECT_EQ(ring.marks[2], 5u) << "the second ring's link, from where the first one ended";
  EXPECT_FALSE(Visible(ring, 30));
  ring.marks[0] = firstLink;  // it lands
  ccoGdaDesc d;
  uint64_t t;
  for (uint64_t k = 0; k < 5; ++k) {
    ASSERT_TRUE(Visible(ring, 100, &d, &t)) << "post " << k;
    EXPECT_EQ(t, k);
  }
  EXPECT_EQ(ring.consumer.released(), 5u);
  ring::Doorbell(ring.view(), 4);  // below the maximum: no link, no store
  EXPECT_EQ(ring.marks[4], 4u) << "still its first-lap value";
}

// A mark links only its own slot's ticket, forward by 1 to depth: marks of earlier laps, the
// first-lap values, and anything further are no link, near 2^32 and 2^64 too.
TEST(GdaRing, OnlyAMarkOfThisLapLinks) {
  for (uint64_t first : {uint64_t{0}, uint64_t{5}, ~uint64_t{0} - 2, (uint64_t{1} << 32) - 1}) {
    for (uint32_t depth : {1u, 4u, 256u}) {
      for (uint64_t lap = 0; lap < 3; ++lap) {
        for (uint64_t i = 0; i < depth; ++i) {
          const uint64_t at = first + lap * depth + i;
          const uint64_t initial = cco_gda_first_lap_ticket(cco_gda_slot_of(at, depth), first, depth);
          EXPECT_FALSE(cco_gda_mark_links(at, initial, depth)) << first << " " << depth << " " << at;
          EXPECT_FALSE(cco_gda_mark_links(at, at - depth + 1, depth)) << "a link of the lap before";
          EXPECT_TRUE(cco_gda_mark_links(at, at + 1, depth));
          EXPECT_TRUE(cco_gda_mark_links(at, at + depth, depth));
          EXPECT_FALSE(cco_gda_mark_links(at, at + depth + 1, depth));
        }
      }
    }
  }
}

// Whatever the marks hold, the consumer follows at most depth links a look and hands out
// nothing it cannot see complete.
TEST(GdaRing, ScribbledMarksNeitherHangNorHandOutEmptySlots) {
  TestRing ring(4);
  for (uint64_t i = 0; i < 4; ++i) ring.marks[i] = i + 1;  // a chain 0 -> 1 -> ... -> 4
  EXPECT_FALSE(Visible(ring, 10)) << "no slot was written";
  EXPECT_EQ(ring.consumer.released(), 4u) << "and slot 0's mark (1) links nothing from 4";
}

// --- waits end: timeout, abort, a failed ring -------------------------------------------

TEST(GdaRing, CreditWaitsTimeOutAbortAndSeeRingErrors) {
  {
    TestRing ring(2);
    for (int k = 0; k < 2; ++k) ASSERT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, k), ring.limits()), 0);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, 2), ring.limits(50'000'000)), CCO_DEVICE_STATUS_TIMEOUT);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    // The failed post took no ticket: once the proxy catches up the ring goes on (a ticket
    // taken and never written stopped the proxy there, and every later flush timed out).
    EXPECT_EQ(ring.dev.head, 2u);
    ccoGdaDesc d;
    uint64_t ticket;
    for (uint64_t k = 0; k < 2; ++k) {
      ASSERT_TRUE(ring.consumer.Next(&d, &ticket));
      ring.Complete(ticket);
    }
    ASSERT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, 3), ring.limits(50'000'000)), CCO_DEVICE_STATUS_OK);
    ASSERT_TRUE(ring.consumer.Next(&d, &ticket));
    EXPECT_EQ(ticket, 2u);
    EXPECT_EQ(d.bytes, Describe(0, 3).bytes);
    ring.Complete(ticket);
    EXPECT_EQ(ring::Flush<ccoGdaImmediate>(ring.view(), ring.limits(50'000'000)), CCO_DEVICE_STATUS_OK);
  }
  {
    TestRing ring(2);
    for (int k = 0; k < 2; ++k) ASSERT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, k), ring.limits()), 0);
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      __atomic_store_n(&ring.abort, 1u, __ATOMIC_RELEASE);
    });
    EXPECT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, 2), ring.limits()), CCO_DEVICE_STATUS_ABORTED);
    aborter.join();
  }
  {
    TestRing ring(2);
    ASSERT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, 0), ring.limits()), 0);
    std::thread failer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      ring.consumer.Fail(CCO_GDA_RING_PEER_FAILED, 3);
    });
    EXPECT_EQ(ring::Flush<ccoGdaImmediate>(ring.view(), ring.limits()), CCO_DEVICE_STATUS_ABORTED);
    failer.join();
    EXPECT_EQ(ring.host.errorPeer, 3);
  }
}

// SDMA's rings: the proxy writes `consumed` into the device-side cache too, and waiters poll
// that copy alone (no host memory a poll), their ring's failure in device memory too.
TEST(GdaRing, MirroredRingsCarryManyProducersThroughTheDeviceCopy) {
  RunProducers</*Mirrored=*/true>(8, 16, 200, Mixed);
  RunProducers</*Mirrored=*/true>(4, 8, 100, AllDeferred, (1ull << 32) - 50);
}

TEST(GdaRing, MirroredRingsWaitOnTheDeviceCopyAlone) {
  TestRing ring(2, 0, /*mirrored=*/true);
  ASSERT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, 0), ring.limits()), 0);
  ccoGdaDesc d;
  uint64_t ticket;
  ASSERT_TRUE(ring.consumer.Next(&d, &ticket));
  ring.Complete(ticket, /*mirror=*/false);  // host memory says done, the device's copy not yet
  ASSERT_EQ(ring.host.consumed, 1u);
  EXPECT_EQ((ring::Flush<ccoGdaImmediate, true>(ring.view(), ring.limits(50'000'000))), CCO_DEVICE_STATUS_TIMEOUT);
  EXPECT_EQ(ring.dev.consumedCache, 0u);  // no poster raised it from host memory
  std::thread mirror([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    __atomic_store_n(&ring.dev.consumedCache, uint64_t{1}, __ATOMIC_RELEASE);
  });
  EXPECT_EQ((ring::Flush<ccoGdaImmediate, true>(ring.view(), ring.limits())), CCO_DEVICE_STATUS_OK);
  mirror.join();

  // A failure: the device-side word ends the wait (the proxy sets it with the host's error).
  ASSERT_EQ(PostAs<ccoGdaImmediate>(ring.view(), Describe(0, 1), ring.limits()), 0);
  std::thread failer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    __atomic_store_n(&ring.dev.failed, uint64_t{1}, __ATOMIC_RELEASE);
  });
  EXPECT_EQ((ring::Flush<ccoGdaImmediate, true>(ring.view(), ring.limits())), CCO_DEVICE_STATUS_ABORTED);
  failer.join();
}

// --- the peer arithmetic of abi/gda.h ------------------------------------------------------

TEST(GdaPeers, ConnectionTypesAndTheirInverse) {
  // 3 nodes of 4 ranks; this rank is world rank 6 (node 1, LSA rank 2).
  ccoGdaTopo t = {6, 12, 2, 4, 4, 1, 3, 1};
  EXPECT_EQ(cco_gda_conn_peer_count(CCO_GDA_CONNECTION_NONE, &t), 0);
  EXPECT_EQ(cco_gda_conn_peer_count(CCO_GDA_CONNECTION_FULL, &t), 12);
  EXPECT_EQ(cco_gda_conn_peer_count(CCO_GDA_CONNECTION_CROSSNODE, &t), 9);
  EXPECT_EQ(cco_gda_conn_peer_count(CCO_GDA_CONNECTION_RAIL, &t), 3);
  for (int32_t type : {CCO_GDA_CONNECTION_FULL, CCO_GDA_CONNECTION_CROSSNODE, CCO_GDA_CONNECTION_RAIL}) {
    std::vector<int> seen(12, 0);
    for (int32_t i = 0; i < cco_gda_conn_peer_count(type, &t); ++i) {
      const int32_t peer = cco_gda_conn_team_peer(type, &t, i);
      ASSERT_GE(peer, 0);
      EXPECT_EQ(cco_gda_conn_peer_index(type, &t, peer), i) << "type " << type << " index " << i;
      ++seen[peer];
    }
    for (int32_t peer = 0; peer < 12; ++peer) {
      const bool connected = cco_gda_conn_peer_index(type, &t, peer) >= 0;
      EXPECT_EQ(connected, seen[peer] == 1) << "type " << type << " peer " << peer;
    }
  }
  // CROSSNODE: everyone off this node, and this rank; RAIL: LSA rank 2 of every node.
  EXPECT_EQ(cco_gda_conn_peer_index(CCO_GDA_CONNECTION_CROSSNODE, &t, 5), -1);
  EXPECT_GE(cco_gda_conn_peer_index(CCO_GDA_CONNECTION_CROSSNODE, &t, 6), 0);
  EXPECT_GE(cco_gda_conn_peer_index(CCO_GDA_CONNECTION_CROSSNODE, &t, 11), 0);
  EXPECT_EQ(cco_gda_conn_team_peer(CCO_GDA_CONNECTION_RAIL, &t, 0), 2);
  EXPECT_EQ(cco_gda_conn_team_peer(CCO_GDA_CONNECTION_RAIL, &t, 2), 10);
  EXPECT_EQ(cco_gda_conn_peer_index(CCO_GDA_CONNECTION_RAIL, &t, 7), -1);
  EXPECT_EQ(cco_gda_conn_peer_index(CCO_GDA_CONNECTION_FULL, &t, 12), -1);
  EXPECT_EQ(cco_gda_conn_team_peer(CCO_GDA_CONNECTION_FULL, &t, -1), -1);
}

TEST(GdaPeers, InitialSeqNeverMatchesTheFirstLap) {
  for (uint64_t first : {uint64_t{0}, uint64_t{5}, ~uint64_t{0} - 2, (uint64_t{1} << 32) - 1}) {
    for (uint32_t depth : {1u, 4u, 256u}) {
      for (uint64_t t = first; t != first + depth; ++t)
        EXPECT_NE(cco_gda_initial_seq(cco_gda_slot_of(t, depth), first, depth), t + 1) << first << " " << depth;
    }
  }
}

}  // namespace
}  // namespace cco
