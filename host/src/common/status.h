// SPDX-License-Identifier: MIT
// Status: a ccoResult_t and the sentence that explains it. Internal functions return a
// Status; the C entry points turn it into a result and the thread's last-error detail.
#ifndef CCO_HOST_COMMON_STATUS_H_
#define CCO_HOST_COMMON_STATUS_H_

#include <string>
#include <utility>

#include "cco/cco.h"

namespace cco {

class Status {
 public:
  Status() = default;
  Status(ccoResult_t code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ccoSuccess; }
  ccoResult_t code() const { return code_; }
  const std::string& message() const { return message_; }

  // The same failure, with what the caller was doing in front: "ccoWindowRegister: ...".
  Status Prefixed(const std::string& context) const { return ok() ? *this : Status(code_, context + ": " + message_); }

 private:
  ccoResult_t code_ = ccoSuccess;
  std::string message_;
};

// Of calls that must all be made whatever each returns (those that free resources), the
// first failure and how many failed.
class Failures {
 public:
  void Note(const Status& s) {
    if (!s.ok() && count_++ == 0) first_ = s;
  }
  // Ok, or the first failure after `what` (and how many calls failed, where more than one).
  Status Summary(const std::string& what) const;

 private:
  Status first_;
  int count_ = 0;
};

// Builds a message from pieces: Fmt("rank ", r, " sent ", n, " bytes").
template <class... Parts> std::string Fmt(const Parts&... parts);

inline Status InvalidArgument(std::string m) { return Status(ccoInvalidArgument, std::move(m)); }
inline Status InvalidUsage(std::string m) { return Status(ccoInvalidUsage, std::move(m)); }
inline Status SystemError(std::string m) { return Status(ccoSystemError, std::move(m)); }
inline Status PlatformError(std::string m) { return Status(ccoPlatformError, std::move(m)); }
inline Status RemoteError(std::string m) { return Status(ccoRemoteError, std::move(m)); }
inline Status Timeout(std::string m) { return Status(ccoTimeout, std::move(m)); }
inline Status OutOfMemory(std::string m) { return Status(ccoOutOfMemory, std::move(m)); }
inline Status Aborted(std::string m) { return Status(ccoAborted, std::move(m)); }
inline Status Unsupported(std::string m) { return Status(ccoUnsupported, std::move(m)); }
inline Status InternalError(std::string m) { return Status(ccoInternalError, std::move(m)); }

// A failed OS call: "what: strerror(errno)", and the limit that was reached: for EMFILE the
// descriptor limit, for ENOMEM the mapping limit where the process is at it.
Status ErrnoError(const std::string& what, int err);
// "the process's file-descriptor limit is reached (RLIMIT_NOFILE: 1024 soft, ...)".
std::string DescriptorLimitNote();
// Where this process is at vm.max_map_count: how many mappings it holds, the limit and what
// to do; empty otherwise (an ENOMEM that is something else).
std::string MappingLimitNote();

#define CCO_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::cco::Status cco_status_ = (expr);        \
    if (!cco_status_.ok()) return cco_status_; \
  } while (0)

}  // namespace cco

#include "common/status_inl.h"

#endif  // CCO_HOST_COMMON_STATUS_H_
