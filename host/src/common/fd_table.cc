// SPDX-License-Identifier: MIT
#include "common/fd_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>

namespace cco {
namespace {

// How long a look at the table serves the requests that follow it.
constexpr std::chrono::milliseconds kBurst{1000};

// The table's capacity (FDSize in /proc/self/status), or 0 where unknown.
long TableSize() {
  FILE* f = fopen("/proc/self/status", "re");
  if (f == nullptr) return 0;
  char line[256];
  long size = 0;
  while (fgets(line, sizeof(line), f) != nullptr)
    if (strncmp(line, "FDSize:", 7) == 0) size = strtol(line + 7, nullptr, 10);
  fclose(f);
  return size;
}

// The highest descriptor open now in a table of `size`, or -1 where unknown. New descriptors
// fill the lowest holes first, so the table must hold highest + headroom to be sure of the
// next `headroom`. The top of the table is probed first (a query per slot, no side effect):
// where it is nearly full, as it is when requests come often, that ends soon; a table with
// much room at the top is listed instead (/proc/self/fd costs a lookup per open descriptor).
long HighestOpenFd(long size) {
  constexpr long kProbes = 4096;
  for (long fd = size - 1; fd >= 0 && fd >= size - kProbes; --fd)
    if (fcntl(static_cast<int>(fd), F_GETFD) != -1) return fd;
  if (size <= kProbes) return 0;  // nothing open at all
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  long highest = -1;
  for (dirent* e = readdir(d); e != nullptr; e = readdir(d)) {
    char* end = nullptr;
    const long fd = strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && fd > highest) highest = fd;
  }
  closedir(d);
  return highest;
}

}  // namespace

Status ReserveFdHeadroom(int headroom, const char* what) {
  // What the last scan of the table found, and what calls since have asked for on top of it.
  // A table never shrinks, so the size last read is a lower bound of the size now.
  // Requests within a moment of a look count against it: a burst of them (ranks as threads
  // of one process, created together) costs one look, and a later request looks again (the
  // process may have opened anything meanwhile).
  static std::mutex mu;
  static long knownSize = 0;
  static long scannedHighest = -1;
  static long promised = 0;
  static std::chrono::steady_clock::time_point scannedAt;
  std::lock_guard<std::mutex> lock(mu);
  const auto now = std::chrono::steady_clock::now();
  // Counting every earlier request as used up, the table still holds this one: no look.
  if (scannedHighest >= 0 && now - scannedAt < kBurst && scannedHighest + promised + headroom < knownSize) {
    promised += headroom;
    return Status::Ok();
  }
  const long size = TableSize();
  if (size <= 0) return Status::Ok();
  knownSize = size;
  const long highest = HighestOpenFd(size);
  if (highest < 0) return Status::Ok();
  scannedHighest = highest;
  scannedAt = now;
  promised = headroom;
  if (highest + headroom < size) return Status::Ok();
  // Room for twice what is needed, so that the requests after this one find room without a
  // look at the table for a while (the kernel doubles the table anyway).
  long want = 2 * (highest + headroom);
  rlimit limit = {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return Status::Ok();
  if (limit.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(highest + headroom) >= limit.rlim_cur &&
      limit.rlim_max > limit.rlim_cur) {
    // Where the soft limit would stop the communicator, the soft limit goes up (as far as the
    // hard limit lets it, and no further than the table grows: a higher one is no business of
    // ours, and a process that select()s keeps its descriptors low otherwise).
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? static_cast<rlim_t>(want) + 1
                                                      : std::min<rlim_t>(limit.rlim_max, static_cast<rlim_t>(want) + 1);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(highest + headroom) >= limit.rlim_cur)
    return SystemError(Fmt(what, " needs ", headroom,
                           " more file descriptors in this process, whose highest open one is ", highest, ": ",
                           DescriptorLimitNote()));
  if (limit.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(want) >= limit.rlim_cur)
    want = static_cast<long>(limit.rlim_cur) - 1;
  // A descriptor at `want` makes the kernel grow the table to hold it; closing it keeps the size.
  const int any = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (any < 0) return Status::Ok();
  const int grown = fcntl(any, F_DUPFD_CLOEXEC, static_cast<int>(want));
  if (grown >= 0) {
    close(grown);
    knownSize = std::max(knownSize, want + 1);
  }
  close(any);
  return Status::Ok();
}

}  // namespace cco
