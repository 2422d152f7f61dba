#include "common/status.h"

#include <string.h>

namespace cco {

Status ErrnoError(const std::string& what, int err) {
  char buf[128];
  // GNU strerror_r returns the message (possibly not in buf).
  const char* text = strerror_r(err, buf, sizeof(buf));
  return SystemError(what + ": " + text);
}

}  // namespace cco
