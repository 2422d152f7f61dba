// SPDX-License-Identifier: MIT
#include "api/last_error.h"

#include <string>

namespace cco {
namespace {
thread_local std::string t_last_error;
}  // namespace

void SetLastError(const std::string& message) { t_last_error = message; }

ccoResult_t Report(const char* function, const Status& status) {
  if (!status.ok()) t_last_error = std::string(function) + ": " + status.message();
  return status.code();
}

}  // namespace cco

extern "C" const char* ccoGetLastError(void) { return cco::t_last_error.c_str(); }

extern "C" const char* ccoGetErrorString(ccoResult_t result) {
  switch (result) {
    case ccoSuccess: return "success";
    case ccoInvalidArgument: return "invalid argument";
    case ccoInvalidUsage: return "invalid usage";
    case ccoSystemError: return "system error";
    case ccoPlatformError: return "GPU driver error";
    case ccoRemoteError: return "remote error (another rank failed, left or disagreed)";
    case ccoTimeout: return "timeout";
    case ccoOutOfMemory: return "out of memory";
    case ccoAborted: return "aborted";
    case ccoUnsupported: return "unsupported";
    case ccoInternalError: return "internal error";
  }
  return "unknown result code";
}
