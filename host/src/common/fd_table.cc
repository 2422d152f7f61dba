#include "common/fd_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

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
  const long size = TableSize();
  const long highest = HighestOpenFd();
  if (size <= 0 || highest < 0 || highest + headroom < size) return;
  rlimit limit = {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const long want = highest + headroom;
  if (limit.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(want) >= limit.rlim_cur) return;
  // A descriptor at `want` makes the kernel grow the table to hold it; closing it keeps the size.
  const int any = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (any < 0) return;
  const int grown = fcntl(any, F_DUPFD_CLOEXEC, static_cast<int>(want));
  if (grown >= 0) close(grown);
  close(any);
}

}  // namespace cco
