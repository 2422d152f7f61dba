#include "common/status.h"

#include <errno.h>
#include <sys/resource.h>

#include <string.h>

namespace cco {

std::string DescriptorLimitNote() {
  rlimit limit = {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return "the process's file-descriptor limit is reached";
  return Fmt("the process's file-descriptor limit is reached (RLIMIT_NOFILE: ", limit.rlim_cur, " soft, ",
             limit.rlim_max, " hard; raise it with ulimit -n)");
}

Status ErrnoError(const std::string& what, int err) {
  char buf[128];
  // GNU strerror_r returns the message (possibly not in buf).
  const char* text = strerror_r(err, buf, sizeof(buf));
  if (err == EMFILE) return SystemError(what + ": " + text + ": " + DescriptorLimitNote());
  return SystemError(what + ": " + text);
}

}  // namespace cco
