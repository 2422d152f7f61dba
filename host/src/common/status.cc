// SPDX-License-Identifier: MIT
#include "common/status.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>

#include <string.h>

#include <chrono>
#include <mutex>

namespace cco {

Status Failures::Summary(const std::string& what) const {
  if (count_ == 0) return Status::Ok();
  if (count_ == 1) return first_.Prefixed(what);
  return first_.Prefixed(Fmt(what, ": ", count_, " calls failed, the first"));
}

std::string DescriptorLimitNote() {
  rlimit limit = {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return "the process's file-descriptor limit is reached";
  return Fmt("the process's file-descriptor limit is reached (RLIMIT_NOFILE: ", limit.rlim_cur, " soft, ",
             limit.rlim_max, " hard; raise it with ulimit -n)");
}

std::string MappingLimitNote() {
  // Counting the mappings reads /proc/self/maps, as long as the process has mappings: ranks
  // as threads that fail together share one count.
  static std::mutex mu;
  static std::chrono::steady_clock::time_point countedAt;
  static std::string note;
  std::lock_guard<std::mutex> lock(mu);
  const auto now = std::chrono::steady_clock::now();
  if (countedAt != std::chrono::steady_clock::time_point() && now - countedAt < std::chrono::seconds(1)) return note;
  countedAt = now;
  note.clear();
  long limit = 0;
  if (FILE* f = fopen("/proc/sys/vm/max_map_count", "re")) {
    if (fscanf(f, "%ld", &limit) != 1) limit = 0;
    fclose(f);
  }
  long mappings = 0;
  if (FILE* f = fopen("/proc/self/maps", "re")) {
    char buffer[1 << 16];
    for (size_t n; (n = fread(buffer, 1, sizeof(buffer), f)) > 0;)
      for (const char* p = buffer; (p = static_cast<const char*>(memchr(p, '\n', buffer + n - p))) != nullptr; ++p)
        ++mappings;
    fclose(f);
  }
  // The kernel refuses a mapping at the limit; a few short of it is close enough to blame.
  if (limit <= 0 || mappings + 16 < limit) return note;
  note = Fmt("this process holds ", mappings, " memory mappings and vm.max_map_count allows ", limit,
             " (ranks that share a process and a host map each other's memory: about (ranks of the host in the "
             "process)^2 mappings for each window; run fewer ranks per process, or raise vm.max_map_count)");
  return note;
}

Status ErrnoError(const std::string& what, int err) {
  char buf[128];
  // GNU strerror_r returns the message (possibly not in buf).
  const char* text = strerror_r(err, buf, sizeof(buf));
  if (err == EMFILE) return SystemError(what + ": " + text + ": " + DescriptorLimitNote());
  if (err == ENOMEM) {
    const std::string note = MappingLimitNote();
    if (!note.empty()) return SystemError(what + ": " + text + ": " + note);
  }
  return SystemError(what + ": " + text);
}

}  // namespace cco
