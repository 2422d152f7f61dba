// SPDX-License-Identifier: MIT
// The communicator's one window table (comm/window_table.h): what the proxy's questions
// (WindowLookup) answer, and that they stay safe while the communicator's calls add and remove
// windows on another thread.
#include <gtest/gtest.h>
#include <stdint.h>

#include <atomic>
#include <string>
#include <thread>

#include "comm/window_table.h"

namespace cco {
namespace {

WindowRecord Window(ccoWindow_t handle, uint32_t id, size_t offset, size_t size) {
  WindowRecord w;
  w.handle = handle;
  w.id = id;
  w.offset = offset;
  w.size = size;
  return w;
}

TEST(WindowTable, ResolvesLiveWindowsWithinTheirBounds) {
  WindowTable table;
  table.Add(Window(0x10, 3, 4096, 1024));
  const WindowLookup& lookup = table;
  uint64_t at = 0;
  ASSERT_TRUE(lookup.Resolve(3, 0, 1024, &at).ok());
  EXPECT_EQ(at, 4096u);
  ASSERT_TRUE(lookup.Resolve(3, 1000, 24, &at).ok());
  EXPECT_EQ(at, 5096u);
  Status past = lookup.Resolve(3, 1000, 25, &at);
  EXPECT_EQ(past.code(), ccoInvalidArgument);
  EXPECT_NE(past.message().find("run past window 3's 1024 bytes"), std::string::npos) << past.message();
  // Offsets and sizes that would wrap are refused, not wrapped.
  EXPECT_FALSE(lookup.Resolve(3, UINT64_MAX, 1, &at).ok());
  EXPECT_FALSE(lookup.Resolve(3, 8, UINT64_MAX, &at).ok());
  Status unknown = lookup.Resolve(4, 0, 1, &at);
  EXPECT_EQ(unknown.code(), ccoInvalidArgument);
  EXPECT_NE(unknown.message().find("window id 4 is not a live window"), std::string::npos) << unknown.message();

  ASSERT_NE(table.Find(0x10), nullptr);
  EXPECT_EQ(table.Find(0x10)->id, 3u);
  EXPECT_TRUE(table.Remove(0x10));
  EXPECT_FALSE(table.Remove(0x10));
  EXPECT_EQ(table.Find(0x10), nullptr);
  EXPECT_FALSE(lookup.Resolve(3, 0, 1, &at).ok());
}

// The communicator's own windows (its resource pool) hold device communicators' words, which
// only its proxies write: no request names them, and no pointer may land in them.
TEST(WindowTable, TheCommunicatorsOwnWindowsAreNoDataWindows) {
  WindowTable table;
  WindowRecord pool = Window(0x10, 1, 0, 4096);
  pool.internal = true;
  table.Add(pool);
  table.Add(Window(0x20, 2, 4096, 4096));
  const WindowLookup& lookup = table;
  uint64_t at = 0;
  Status refused = lookup.Resolve(1, 0, 8, &at);
  EXPECT_EQ(refused.code(), ccoInvalidArgument);
  EXPECT_NE(refused.message().find("holds device communicators' resources"), std::string::npos) << refused.message();
  EXPECT_FALSE(lookup.Covers(0, 8));
  EXPECT_FALSE(lookup.Covers(100, 1));
  EXPECT_TRUE(lookup.Resolve(2, 0, 8, &at).ok());
  EXPECT_TRUE(lookup.Covers(4096, 8));
  ASSERT_NE(table.Find(0x10), nullptr);  // the communicator still finds it by handle
}

TEST(WindowTable, CoversOnlyBytesInsideOneWindow) {
  WindowTable table;
  table.Add(Window(0x10, 1, 0, 100));
  table.Add(Window(0x20, 2, 100, 100));
  const WindowLookup& lookup = table;
  EXPECT_TRUE(lookup.Covers(0, 100));
  EXPECT_TRUE(lookup.Covers(100, 100));
  EXPECT_TRUE(lookup.Covers(199, 1));
  EXPECT_FALSE(lookup.Covers(50, 100));  // neighbours, but two windows
  EXPECT_FALSE(lookup.Covers(199, 2));
  EXPECT_FALSE(lookup.Covers(200, 1));
  EXPECT_FALSE(lookup.Covers(150, UINT64_MAX));
  table.Clear();
  EXPECT_FALSE(lookup.Covers(0, 1));
  EXPECT_TRUE(table.records().empty());
}

// The proxy's thread asks while the caller's thread registers and deregisters: a window that
// stays is always found, one that comes and goes is found whole or not at all.
TEST(WindowTable, AnswersWhileWindowsComeAndGo) {
  WindowTable table;
  table.Add(Window(0x10, 1, 0, 4096));
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, asked{0};
  std::thread proxy([&] {
    const WindowLookup& lookup = table;
    while (!stop.load()) {
      uint64_t at = 0;
      if (!lookup.Resolve(1, 16, 16, &at).ok() || at != 16) ++wrong;
      if (lookup.Resolve(2, 0, 4096, &at).ok() && at != 8192) ++wrong;
      if (!lookup.Covers(0, 4096)) ++wrong;
      ++asked;
    }
  });
  // Until the other thread has asked often enough, whenever it started.
  for (int i = 0; i < 2000 || asked.load() < 2000; ++i) {
    table.Add(Window(0x20, 2, 8192, 4096));
    ASSERT_TRUE(table.Remove(0x20));
  }
  stop = true;
  proxy.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace cco
