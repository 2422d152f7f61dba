// SPDX-License-Identifier: MIT
#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace cco {
namespace {
constexpr char kClosed[] = "peer closed the connection";
constexpr char kReset[] = "peer reset the connection";
}  // namespace

Status WaitFor(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    int64_t left = MsLeft(deadline);
    if (left <= 0) return Timeout(Fmt(what, " timed out"));
    pollfd p = {fd, events, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n > 0) {
      if (p.revents & POLLNVAL) return Aborted(Fmt(what, ": socket closed by this process"));
      return Status::Ok();  // readable, writable, or hung up: the next call tells which
    }
    if (n < 0 && errno != EINTR) return ErrnoError(Fmt(what, ": poll"), errno);
  }
}

Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return ErrnoError("fcntl O_NONBLOCK", errno);
  return Status::Ok();
}

int64_t MsLeft(Deadline deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
}

std::string SockAddr::ToString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (storage.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
    return Fmt(host, ":", port);
  }
  auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
  inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
  port = ntohs(a->sin6_port);
  return Fmt("[", host, "]:", port);
}

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) Reset(other.Release());
  return *this;
}

void Fd::Reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

Status ListenTcp(const SockAddr& local, Fd* listener, SockAddr* bound) {
  Fd fd(socket(local.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoError("socket", errno);
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&local.storage), local.length) != 0)
    return ErrnoError(Fmt("bind to ", local.ToString()), errno);
  if (listen(fd.get(), 1024) != 0) return ErrnoError("listen", errno);
  CCO_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
  bound->length = sizeof(bound->storage);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound->storage), &bound->length) != 0)
    return ErrnoError("getsockname", errno);
  *listener = std::move(fd);
  return Status::Ok();
}

Status ConnectTcp(const SockAddr& remote, Deadline deadline, Fd* out, bool* refused) {
  if (refused != nullptr) *refused = false;
  int delay_ms = 1;
  for (;;) {
    Fd fd(socket(remote.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return ErrnoError("socket", errno);
    CCO_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
    int rc = connect(fd.get(), reinterpret_cast<const sockaddr*>(&remote.storage), remote.length);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      CCO_RETURN_IF_ERROR(WaitFor(fd.get(), POLLOUT, deadline, Fmt("connect to ", remote.ToString()).c_str()));
      socklen_t len = sizeof(err);
      getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) {
      int one = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      *out = std::move(fd);
      return Status::Ok();
    }
    if (err == ECONNREFUSED && refused != nullptr) {
      *refused = true;
      return ErrnoError(Fmt("connect to ", remote.ToString()), err);
    }
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != EAGAIN && err != ECONNRESET)
      return ErrnoError(Fmt("connect to ", remote.ToString()), err);
    if (MsLeft(deadline) <= 0)
      return Timeout(Fmt("connect to ", remote.ToString(), ": nobody listening (", strerror(err), ")"));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(delay_ms, MsLeft(deadline))));
    delay_ms = std::min(delay_ms * 2, 100);
  }
}

namespace {

// One sendmsg of `size` bytes, with `fdToPass` attached when it is not -1.
ssize_t SendSome(int fd, const char* p, size_t size, int fdToPass) {
  iovec iov = {const_cast<char*>(p), size};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  char control[CMSG_SPACE(sizeof(int))] = {};
  if (fdToPass >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fdToPass, sizeof(int));
  }
  return sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

// One recvmsg; descriptors that came with the bytes are closed unless `fdReceived` takes
// the first (and only) one. MSG_CTRUNC means the kernel could not install a descriptor.
// `truncated` (null: `problem`) gets a descriptor the kernel could not hand over.
ssize_t RecvSome(int fd, char* p, size_t size, int* fdReceived, Status* problem, Status* truncated) {
  iovec iov = {p, size};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int received;
      memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (fdReceived != nullptr && *fdReceived < 0 && problem->ok()) {
        *fdReceived = received;
      } else {
        close(received);
        if (problem->ok()) *problem = RemoteError("a peer passed file descriptors nobody asked for");
      }
    }
  }
  Status* lost = truncated != nullptr ? truncated : problem;
  if ((msg.msg_flags & MSG_CTRUNC) && lost->ok())
    *lost = SystemError("a file descriptor a peer sent could not be received: " + DescriptorLimitNote());
  return n;
}

}  // namespace

Status SendAll(int fd, const void* data, size_t size, Deadline deadline, int fdToPass) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = SendSome(fd, p, size, fdToPass);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      fdToPass = -1;  // it went with the first byte
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      CCO_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline, "send"));
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET) return RemoteError(kClosed);
    return ErrnoError("send", errno);
  }
  return Status::Ok();
}

Status RecvAll(int fd, void* data, size_t size, Deadline deadline, int* fdReceived, Status* lostDescriptor) {
  char* p = static_cast<char*>(data);
  Status problem;
  while (size > 0) {
    ssize_t n = RecvSome(fd, p, size, fdReceived, &problem, lostDescriptor);
    if (!problem.ok()) return problem;
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return RemoteError(kClosed);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      CCO_RETURN_IF_ERROR(WaitFor(fd, POLLIN, deadline, "receive"));
      continue;
    }
    if (errno == ECONNRESET) return RemoteError(kReset);
    return ErrnoError("recv", errno);
  }
  return Status::Ok();
}

bool IsConnectionLost(const Status& s) {
  return s.code() == ccoRemoteError &&
         (s.message().find(kClosed) != std::string::npos || s.message().find(kReset) != std::string::npos);
}

Status GetPeerCredentials(int fd, PeerCredentials* credentials) {
  ucred cred = {};
  socklen_t length = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return ErrnoError("getsockopt(SO_PEERCRED)", errno);
  credentials->pid = cred.pid;
  credentials->uid = cred.uid;
  return Status::Ok();
}

namespace {
sockaddr_un AbstractAddress(const std::string& name, socklen_t* length) {
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(addr.sun_path) - 1);
  memcpy(addr.sun_path + 1, name.data(), n);  // sun_path[0] == 0: abstract namespace
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return addr;
}
}  // namespace

std::string RandomSocketName(const char* prefix) {
  uint64_t words[2] = {0, 0};
  // Uniqueness is all a name needs (it grants nothing); the kernel's source gives it.
  if (getrandom(words, sizeof(words), 0) != static_cast<ssize_t>(sizeof(words))) {
    words[0] = static_cast<uint64_t>(getpid());
    words[1] = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  }
  char text[40];
  snprintf(text, sizeof(text), "%016llx%016llx", static_cast<unsigned long long>(words[0]),
           static_cast<unsigned long long>(words[1]));
  return std::string(prefix) + text;
}

Status ListenUnix(const std::string& name, Fd* listener) {
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return ErrnoError("socket(AF_UNIX)", errno);
  socklen_t length;
  sockaddr_un addr = AbstractAddress(name, &length);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), length) != 0)
    return ErrnoError(Fmt("bind to unix socket @", name), errno);
  if (listen(fd.get(), 1024) != 0) return ErrnoError("listen(AF_UNIX)", errno);
  *listener = std::move(fd);
  return Status::Ok();
}

Status TryConnectUnix(const std::string& name, Fd* out, bool* again) {
  *again = false;
  // Non-blocking: a blocking connect to a listener whose queue is full sleeps until the
  // queue drains, past any deadline (anyone can fill an abstract name's queue); this way it
  // fails with EAGAIN, to be tried again.
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return ErrnoError("socket(AF_UNIX)", errno);
  socklen_t length;
  sockaddr_un addr = AbstractAddress(name, &length);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), length) == 0) {
    *out = std::move(fd);
    return Status::Ok();
  }
  if (errno == ECONNREFUSED || errno == ENOENT || errno == EAGAIN || errno == EINTR) {
    *again = true;
    return Status::Ok();
  }
  return ErrnoError(Fmt("connect to unix socket @", name), errno);
}

Status ConnectUnix(const std::string& name, Deadline deadline, Fd* out) {
  for (int delay_ms = 1;; delay_ms = std::min(delay_ms * 2, 50)) {
    bool again = false;
    CCO_RETURN_IF_ERROR(TryConnectUnix(name, out, &again));
    if (!again) return Status::Ok();
    const int64_t left = MsLeft(deadline);
    if (left <= 0)
      return Timeout(Fmt("connect to unix socket @", name, ": nobody listening, or its queue stayed full"));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(delay_ms, left)));
  }
}

}  // namespace cco
