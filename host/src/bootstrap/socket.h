// SPDX-License-Identifier: MIT
// Sockets with deadlines: every connect, send and receive is bounded, and a closed or
// shut-down peer is an error the caller can name, never a hang.
#ifndef CCO_HOST_BOOTSTRAP_SOCKET_H_
#define CCO_HOST_BOOTSTRAP_SOCKET_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <chrono>
#include <string>

#include "common/status.h"

namespace cco {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// The longest bound a deadline takes (about 70 years): a larger CCO_TIMEOUT_MS means "no
// bound" in practice, and would overflow the clock's nanoseconds.
constexpr int64_t kMaxWaitMs = int64_t{1} << 41;
inline Deadline DeadlineIn(int64_t ms) {
  return Clock::now() + std::chrono::milliseconds(ms < 0 ? 0 : ms > kMaxWaitMs ? kMaxWaitMs : ms);
}
int64_t MsLeft(Deadline deadline);

// An IPv4 or IPv6 address with port, stored flat so it can travel in messages.
struct SockAddr {
  sockaddr_storage storage;
  socklen_t length;
  std::string ToString() const;
};

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.Release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A TCP listener on `local` (port 0: any), and the address it actually got.
Status ListenTcp(const SockAddr& local, Fd* listener, SockAddr* bound);
// Connects, retrying refused connections (the listener may not be up yet) until deadline.
// With `refused`, a refused connection is an answer instead, for a listener that must be up
// already: the attempt ends at once, with *refused set.
Status ConnectTcp(const SockAddr& remote, Deadline deadline, Fd* out, bool* refused = nullptr);

// Whole-buffer transfers. A peer that closes mid-way is ccoRemoteError ("closed").
// SendAll can pass one descriptor (SCM_RIGHTS, Unix sockets) with the first byte; RecvAll
// then takes it (else -1) into *fdReceived, and refuses more than one. With lostDescriptor,
// a descriptor this process could not take (its descriptor limit) is reported there and the
// bytes are still read, keeping the stream in step; without, it fails the transfer at once.
Status SendAll(int fd, const void* data, size_t size, Deadline deadline, int fdToPass = -1);
Status RecvAll(int fd, void* data, size_t size, Deadline deadline, int* fdReceived = nullptr,
               Status* lostDescriptor = nullptr);

// Whether a failed transfer failed because the peer closed or reset the connection (what
// SendAll and RecvAll say then), as opposed to a timeout or a bad message.
bool IsConnectionLost(const Status& s);

// Waits until fd is ready for `events` (POLLIN, POLLOUT) or the deadline passes.
Status WaitFor(int fd, short events, Deadline deadline, const char* what);
Status SetNonBlocking(int fd);

// The process at the other end of a connected Unix socket, as the kernel saw it connect.
struct PeerCredentials {
  int32_t pid;
  uint32_t uid;
};
Status GetPeerCredentials(int fd, PeerCredentials* credentials);

// Unix-domain sockets in the abstract namespace (no file to clean up), for passing file
// descriptors between processes of one host. Names are random (RandomSocketName), never
// derived from a secret; who may connect is decided by authentication, not by the name.
std::string RandomSocketName(const char* prefix);
Status ListenUnix(const std::string& name, Fd* listener);
Status ConnectUnix(const std::string& name, Deadline deadline, Fd* out);
// One attempt of ConnectUnix, without waiting: connected (*out, non-blocking), or *again
// where nobody listens under the name (yet) or its queue is full.
Status TryConnectUnix(const std::string& name, Fd* out, bool* again);

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_SOCKET_H_
