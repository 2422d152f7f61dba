#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace cco {
namespace {

constexpr uint32_t kFrameMagic = 0x42434343;  // "CCCB"

// Waits until fd is ready for `events` or the deadline passes.
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

}  // namespace

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

Status ConnectTcp(const SockAddr& remote, Deadline deadline, Fd* out) {
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
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != EAGAIN && err != ECONNRESET)
      return ErrnoError(Fmt("connect to ", remote.ToString()), err);
    if (MsLeft(deadline) <= 0)
      return Timeout(Fmt("connect to ", remote.ToString(), ": nobody listening (", strerror(err), ")"));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(delay_ms, MsLeft(deadline))));
    delay_ms = std::min(delay_ms * 2, 100);
  }
}

Status Accept(int listener, Deadline deadline, Fd* out) {
  for (;;) {
    CCO_RETURN_IF_ERROR(WaitFor(listener, POLLIN, deadline, "accept"));
    Fd fd(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (fd.valid()) {
      int one = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      *out = std::move(fd);
      return Status::Ok();
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
      return errno == EINVAL || errno == EBADF ? Aborted("listener shut down") : ErrnoError("accept", errno);
  }
}

Status SendAll(int fd, const void* data, size_t size, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      CCO_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline, "send"));
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET) return RemoteError("peer closed the connection");
    return ErrnoError("send", errno);
  }
  return Status::Ok();
}

Status RecvAll(int fd, void* data, size_t size, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = recv(fd, p, size, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return RemoteError("peer closed the connection");
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      CCO_RETURN_IF_ERROR(WaitFor(fd, POLLIN, deadline, "receive"));
      continue;
    }
    if (errno == ECONNRESET) return RemoteError("peer reset the connection");
    return ErrnoError("recv", errno);
  }
  return Status::Ok();
}

Status SendFrame(int fd, const std::string& payload, Deadline deadline) {
  char header[12];
  uint32_t magic = kFrameMagic;
  uint64_t length = payload.size();
  memcpy(header, &magic, 4);
  memcpy(header + 4, &length, 8);
  CCO_RETURN_IF_ERROR(SendAll(fd, header, sizeof(header), deadline));
  return SendAll(fd, payload.data(), payload.size(), deadline);
}

Status RecvFrame(int fd, std::string* payload, size_t maxSize, Deadline deadline) {
  char header[12];
  CCO_RETURN_IF_ERROR(RecvAll(fd, header, sizeof(header), deadline));
  uint32_t magic;
  uint64_t length;
  memcpy(&magic, header, 4);
  memcpy(&length, header + 4, 8);
  if (magic != kFrameMagic) return RemoteError("a peer sent something that is not a CCO message");
  if (length > maxSize) return RemoteError(Fmt("a peer sent a ", length, "-byte message (limit ", maxSize, ")"));
  payload->resize(length);
  return RecvAll(fd, &(*payload)[0], length, deadline);
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

Status ConnectUnix(const std::string& name, Deadline deadline, Fd* out) {
  for (int delay_ms = 1;; delay_ms = std::min(delay_ms * 2, 50)) {
    Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return ErrnoError("socket(AF_UNIX)", errno);
    socklen_t length;
    sockaddr_un addr = AbstractAddress(name, &length);
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), length) == 0) {
      CCO_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
      *out = std::move(fd);
      return Status::Ok();
    }
    if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN)
      return ErrnoError(Fmt("connect to unix socket @", name), errno);
    if (MsLeft(deadline) <= 0) return Timeout(Fmt("connect to unix socket @", name, ": nobody listening"));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  }
}

Status SendFd(int sock, int fd, uint64_t tag, Deadline deadline) {
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov = {&tag, sizeof(tag)};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  for (;;) {
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(sizeof(tag))) return Status::Ok();
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      CCO_RETURN_IF_ERROR(WaitFor(sock, POLLOUT, deadline, "sending a file descriptor"));
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return RemoteError("peer closed the connection");
    return n < 0 ? ErrnoError("sendmsg(SCM_RIGHTS)", errno) : InternalError("sendmsg sent a partial tag");
  }
}

Status RecvFd(int sock, uint64_t expectedTag, Deadline deadline, int* fd) {
  for (;;) {
    char control[CMSG_SPACE(sizeof(int))] = {};
    uint64_t tag = 0;
    iovec iov = {&tag, sizeof(tag)};
    msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      CCO_RETURN_IF_ERROR(WaitFor(sock, POLLIN, deadline, "receiving a file descriptor"));
      continue;
    }
    if (n == 0) return RemoteError("peer closed the connection");
    if (n < 0) return ErrnoError("recvmsg(SCM_RIGHTS)", errno);
    int received = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(&received, CMSG_DATA(c), sizeof(int));
    if (received < 0) return RemoteError("a peer's message carried no file descriptor");
    if (n != static_cast<ssize_t>(sizeof(tag)) || tag != expectedTag) {
      close(received);
      return RemoteError(Fmt("a peer sent the descriptor of another operation (tag ", tag, ", expected ",
                             expectedTag, ")"));
    }
    *fd = received;
    return Status::Ok();
  }
}

}  // namespace cco
