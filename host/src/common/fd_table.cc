#include "common/fd_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

namespace cco {
namespace {

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

// The highest descriptor open now, or -1 where unknown. New descriptors fill the lowest
// holes first, so the table must hold highest + headroom to be sure of the next `headroom`.
long HighestOpenFd() {
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

void ReserveFdHeadroom(int headroom) {
  // What the last scan of the table found, and what calls since have asked for on top of it.
  // A table never shrinks, so the size last read is a lower bound of the size now.
  static std::mutex mu;
  static long knownSize = 0;
  static long scannedHighest = -1;
  static long promised = 0;
  std::lock_guard<std::mutex> lock(mu);
  // Counting every earlier request as used up, the table still holds this one: no scan.
  // (Listing the table costs as much as it holds; ranks as threads of one process would
  // each list every other's descriptors.)
  if (scannedHighest >= 0 && scannedHighest + promised + headroom < knownSize) {
    promised += headroom;
    return;
  }
  const long size = TableSize();
  if (size <= 0) return;
  knownSize = size;
  const long highest = HighestOpenFd();
  if (highest < 0) return;
  scannedHighest = highest;
  promised = headroom;
  if (highest + headroom < size) return;
  rlimit limit = {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  // Twice what is needed, so that the requests after this one find room without a listing
  // for a while (the kernel doubles the table anyway).
  long want = 2 * (highest + headroom);
  if (limit.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(want) >= limit.rlim_cur && limit.rlim_max > limit.rlim_cur) {
    // Where the soft limit would stop the communicator, the soft limit goes up (as far as the
    // hard limit lets it, and no further than needed: a higher one is no business of ours).
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? static_cast<rlim_t>(want) + 1
                                                      : std::min<rlim_t>(limit.rlim_max, static_cast<rlim_t>(want) + 1);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(want) >= limit.rlim_cur)
    want = static_cast<long>(limit.rlim_cur) - 1;
  if (want < highest + headroom) return;
  // A descriptor at `want` makes the kernel grow the table to hold it; closing it keeps the size.
  const int any = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (any < 0) return;
  const int grown = fcntl(any, F_DUPFD_CLOEXEC, static_cast<int>(want));
  if (grown >= 0) {
    close(grown);
    knownSize = std::max(knownSize, want + 1);
  }
  close(any);
}

}  // namespace cco
