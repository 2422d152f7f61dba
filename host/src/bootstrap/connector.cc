// SPDX-License-Identifier: MIT
#include "bootstrap/connector.h"

#include <errno.h>
#include <sys/socket.h>

#include <algorithm>

namespace cco {
namespace {

// Back-off between attempts at one target: a listener that is not there yet, a full queue,
// a connection the server dropped.
constexpr int kFirstDelayMs = 1;
constexpr int kMaxDelayMs = 50;
// The first frame is a few bytes on a fresh, authenticated socket: it leaves at once.
constexpr int64_t kFirstFrameMs = 1000;

}  // namespace

struct Connector::Attempt {
  enum class Stage { kWaiting, kHello, kProof };

  Attempt(int i, std::string n, std::string f) : id(i), name(std::move(n)), firstFrame(std::move(f)) {}

  int id;
  std::string name;
  std::string firstFrame;
  Stage stage = Stage::kWaiting;
  Deadline retryAt{};
  int delayMs = kFirstDelayMs;
  Fd fd;
  std::unique_ptr<ClientHandshake> handshake;
  std::string in;   // bytes of the current stage
  std::string out;  // bytes still to send
  size_t want = 0;
};

Connector::Connector(const Key& secret, const char* purpose, Check check)
    : secret_(secret), purpose_(purpose), check_(std::move(check)) {}

Connector::~Connector() = default;

void Connector::Add(int id, const std::string& name, const std::string& firstFrame) {
  pending_.push_back(std::make_unique<Attempt>(id, name, firstFrame));
  Start(*pending_.back());
}

void Connector::Fail(Attempt& a, Status why) {
  if (error_.ok()) {
    error_ = std::move(why);
    failedId_ = a.id;
  }
  a.fd.Reset();
}

void Connector::Start(Attempt& a) {
  // Back to the start: a later attempt is a new connection with a new handshake.
  a.fd.Reset();
  a.in.clear();
  a.out.clear();
  a.stage = Attempt::Stage::kWaiting;
  bool again = false;
  Status s = TryConnectUnix(a.name, &a.fd, &again);
  if (!s.ok()) return Fail(a, s);
  if (again) {
    a.retryAt = DeadlineIn(a.delayMs);
    a.delayMs = std::min(a.delayMs * 2, kMaxDelayMs);
    return;
  }
  s = check_(a.id, a.fd.get());
  if (!s.ok()) return Fail(a, s);
  a.handshake = std::make_unique<ClientHandshake>(secret_, purpose_);
  a.stage = Attempt::Stage::kHello;
  a.want = kServerHelloBytes;
}

bool Connector::Advance(Attempt& a, short revents) {
  // The server closed before the handshake was through: it pushed this connection out or
  // found it too slow. An honest client comes back.
  const auto dropped = [&] {
    a.retryAt = DeadlineIn(a.delayMs);
    a.delayMs = std::min(a.delayMs * 2, kMaxDelayMs);
    a.fd.Reset();
    a.stage = Attempt::Stage::kWaiting;
    return true;
  };
  if ((revents & POLLOUT) && !a.out.empty()) {
    ssize_t n = send(a.fd.get(), a.out.data(), a.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) a.out.erase(0, static_cast<size_t>(n));
    else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return dropped();
  }
  if (!(revents & (POLLIN | POLLHUP | POLLERR))) return true;
  for (;;) {
    char buffer[64];
    const size_t n_want = std::min(sizeof(buffer), a.want - a.in.size());
    ssize_t n = recv(a.fd.get(), buffer, n_want, MSG_DONTWAIT);
    if (n == 0) return dropped();
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
      return dropped();
    }
    a.in.append(buffer, static_cast<size_t>(n));
    if (a.in.size() < a.want) continue;
    if (a.stage == Attempt::Stage::kHello) {
      std::string proof;
      Status s = a.handshake->Respond(a.in, &proof);
      if (!s.ok()) {
        Fail(a, s);
        return false;
      }
      a.out += proof;
      a.in.clear();
      a.stage = Attempt::Stage::kProof;
      a.want = kServerProofBytes;
      ssize_t sent = send(a.fd.get(), a.out.data(), a.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent > 0) a.out.erase(0, static_cast<size_t>(sent));
      continue;
    }
    SessionKeys keys;
    Status s = a.handshake->Finish(a.in, &keys);
    if (!s.ok()) {
      Fail(a, s);
      return false;
    }
    Channel channel(std::move(a.fd), keys);
    if (!channel.Send(a.firstFrame, DeadlineIn(kFirstFrameMs)).ok()) return dropped();
    connected_.emplace_back(a.id, std::move(channel));
    return false;
  }
}

void Connector::Fds(std::vector<pollfd>* fds) {
  fds->clear();
  for (const auto& a : pending_)
    fds->push_back({a->fd.valid() ? a->fd.get() : -1, static_cast<short>(POLLIN | (a->out.empty() ? 0 : POLLOUT)), 0});
}

void Connector::Handle(const std::vector<pollfd>& fds) {
  // Entries match pending_ as Fds left it: walk both, dropping finished attempts.
  size_t i = 0;
  for (auto it = pending_.begin(); it != pending_.end() && i < fds.size(); ++i) {
    Attempt& a = **it;
    const bool keep = fds[i].revents == 0 || !a.fd.valid() || Advance(a, fds[i].revents);
    it = keep && error_.ok() ? it + 1 : pending_.erase(it);
  }
}

void Connector::Tick() {
  const Deadline now = Clock::now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    Attempt& a = **it;
    if (a.stage == Attempt::Stage::kWaiting && a.retryAt <= now) Start(a);
    it = error_.ok() ? it + 1 : pending_.erase(it);
  }
}

int64_t Connector::WaitMs(int64_t limit) const {
  int64_t wait = limit;
  for (const auto& a : pending_)
    if (a->stage == Attempt::Stage::kWaiting) wait = std::min(wait, std::max<int64_t>(0, MsLeft(a->retryAt) + 1));
  return wait;
}

std::vector<std::pair<int, Channel>> Connector::TakeConnected() {
  std::vector<std::pair<int, Channel>> out;
  out.swap(connected_);
  return out;
}

std::vector<int> Connector::Pending() const {
  std::vector<int> ids;
  for (const auto& a : pending_) ids.push_back(a->id);
  return ids;
}

}  // namespace cco
