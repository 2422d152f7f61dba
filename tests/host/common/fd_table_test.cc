// SPDX-License-Identifier: MIT
// The descriptor table's headroom (common/fd_table.h): grown before a collective call needs it,
// left alone when there is room.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "common/fd_table.h"

namespace cco {
namespace {

// The descriptor table's capacity, from /proc/self/status.
long FdTableSize() {
  FILE* f = fopen("/proc/self/status", "re");
  char line[256];
  long size = -1;
  while (f != nullptr && fgets(line, sizeof(line), f) != nullptr)
    if (strncmp(line, "FDSize:", 7) == 0) size = strtol(line + 7, nullptr, 10);
  if (f != nullptr) fclose(f);
  return size;
}

// With the table nearly full, ReserveFdHeadroom grows it, so that the descriptors a
// collective call then opens land without growing it (common/fd_table.h); with room to
// spare it leaves the table alone.
TEST(FdTable, HeadroomGrowsTheTableOnlyWhenNeeded) {
  const long before = FdTableSize();
  ASSERT_GT(before, 0);
  rlimit limit = {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < static_cast<rlim_t>(before + 128))
    GTEST_SKIP() << "the descriptor limit (" << limit.rlim_cur << ") leaves no room to grow the table";
  // A second thread, as in every process with a GPU context.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread other([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  });
  // Fill the table to 4 descriptors short of its end.
  std::vector<int> held;
  for (int fd = open("/dev/null", O_RDONLY | O_CLOEXEC); fd >= 0; fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) {
    held.push_back(fd);
    if (fd >= before - 5) break;
  }
  EXPECT_TRUE(ReserveFdHeadroom(2, "a test").ok());  // fits: unchanged
  EXPECT_EQ(FdTableSize(), before);
  EXPECT_TRUE(ReserveFdHeadroom(64, "a test").ok());  // does not fit: grown to hold the highest descriptor + 64
  const long grown = FdTableSize();
  EXPECT_GE(grown, before - 5 + 64);
  for (int fd : held) close(fd);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  other.join();
}

}  // namespace
}  // namespace cco
