// SPDX-License-Identifier: MIT
// The slot allocator (memory/slot_allocator.h): first fit, rounding to the granule, merging
// freed neighbours, refusing what does not fit.
#include <gtest/gtest.h>
#include <stddef.h>

#include "memory/slot_allocator.h"

namespace cco {
namespace {

TEST(SlotAllocator, FirstFitRoundsAndMerges) {
  SlotAllocator a(1 << 20, 4096);
  size_t o1, s1, o2, s2, o3, s3;
  ASSERT_TRUE(a.Allocate(1, &o1, &s1).ok());
  EXPECT_EQ(o1, 0u);
  EXPECT_EQ(s1, 4096u);
  ASSERT_TRUE(a.Allocate(5000, &o2, &s2).ok());
  EXPECT_EQ(o2, 4096u);
  EXPECT_EQ(s2, 8192u);
  ASSERT_TRUE(a.Allocate(4096, &o3, &s3).ok());
  EXPECT_EQ(o3, 12288u);
  size_t start, size;
  EXPECT_TRUE(a.Find(4096 + 100, &start, &size));
  EXPECT_EQ(start, 4096u);
  EXPECT_FALSE(a.Find(1 << 19, &start, &size));
  EXPECT_TRUE(a.Free(o2).ok());
  EXPECT_EQ(a.Free(o2).code(), ccoInvalidArgument);
  EXPECT_EQ(a.Free(o1 + 1).code(), ccoInvalidArgument);
  EXPECT_TRUE(a.Free(o1).ok());
  // 0..12288 merged: a 12288-byte request fits at 0.
  size_t o4, s4;
  ASSERT_TRUE(a.Allocate(12288, &o4, &s4).ok());
  EXPECT_EQ(o4, 0u);
  EXPECT_EQ(a.used(), 12288u + 4096u);
  EXPECT_EQ(a.Allocate(0, &o4, &s4).code(), ccoInvalidArgument);
  EXPECT_EQ(a.Allocate(2 << 20, &o4, &s4).code(), ccoOutOfMemory);
}

TEST(SlotAllocator, FillsExactlyThenRefuses) {
  SlotAllocator a(16 * 4096, 4096);
  size_t o, s;
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(a.Allocate(4096, &o, &s).ok());
  EXPECT_EQ(a.Allocate(1, &o, &s).code(), ccoOutOfMemory);
  for (int i = 15; i >= 0; --i) ASSERT_TRUE(a.Free(i * 4096).ok());
  ASSERT_TRUE(a.Allocate(16 * 4096, &o, &s).ok());  // fully merged again
}

}  // namespace
}  // namespace cco
