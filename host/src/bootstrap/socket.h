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

inline Deadline DeadlineIn(int64_t ms) { return Clock::now() + std::chrono::milliseconds(ms); }
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
Status ConnectTcp(const SockAddr& remote, Deadline deadline, Fd* out);
// Accepts one connection before the deadline.
Status Accept(int listener, Deadline deadline, Fd* out);

// Whole-buffer transfers. A peer that closes mid-way is ccoRemoteError ("closed").
Status SendAll(int fd, const void* data, size_t size, Deadline deadline);
Status RecvAll(int fd, void* data, size_t size, Deadline deadline);

// Framed messages: a 12-byte header (magic, length) and the payload; maxSize bounds what
// a corrupt or foreign peer can make us allocate.
Status SendFrame(int fd, const std::string& payload, Deadline deadline);
Status RecvFrame(int fd, std::string* payload, size_t maxSize, Deadline deadline);

// Unix-domain sockets in the abstract namespace (no file to clean up), for passing file
// descriptors between processes of one host.
Status ListenUnix(const std::string& name, Fd* listener);
Status ConnectUnix(const std::string& name, Deadline deadline, Fd* out);
// One descriptor plus a small tag; the receiver checks the tag it expects.
Status SendFd(int sock, int fd, uint64_t tag, Deadline deadline);
Status RecvFd(int sock, uint64_t expectedTag, Deadline deadline, int* fd);

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_SOCKET_H_
