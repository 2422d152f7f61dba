// SPDX-License-Identifier: MIT
#include "bootstrap/acceptor.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace cco {
namespace {

// How long the listener rests after the process ran out of descriptors.
constexpr int64_t kRestMs = 20;
// Connections accepted per wake-up, so a flood cannot starve the pending ones.
constexpr int kAcceptBurst = 32;

}  // namespace

struct Acceptor::Pending {
  enum class Stage { kProof, kHeader, kFrame };

  Pending(Fd socket, const Key& secret, const char* purpose, Deadline d)
      : fd(std::move(socket)), handshake(secret, purpose), deadline(d) {}

  Fd fd;  // until authenticated; then channel owns it
  Channel channel;
  ServerHandshake handshake;
  Deadline deadline;
  Stage stage = Stage::kProof;
  std::string out;  // bytes still to send
  std::string in;   // bytes of the current stage
  size_t want = kClientProofBytes;
  PeerCredentials credentials{0, 0};

  int socket() const { return channel.valid() ? channel.fd() : fd.get(); }
};

Acceptor::Acceptor(int listener, const Key& secret, const AcceptorOptions& options)
    : listener_(listener), secret_(secret), options_(options) {}

Acceptor::~Acceptor() = default;

void Acceptor::EvictOne() {
  if (pending_.empty()) return;
  // The oldest stranger goes first: a connection that has authenticated is a rank on its
  // way in (only ranks hold the secret), and pushing it out would fail it.
  auto victim = pending_.begin();
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if ((*it)->stage == Pending::Stage::kProof) {
      victim = it;
      break;
    }
  }
  pending_.erase(victim);
  ++stats_.evicted;
}

void Acceptor::AcceptNew() {
  for (int i = 0; i < kAcceptBurst; ++i) {
    Fd conn(accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn.valid()) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Make room and rest: the connection waits in the backlog meanwhile.
        ++stats_.descriptorShortages;
        EvictOne();
        restUntil_ = DeadlineIn(kRestMs);
        return;
      }
      listenerStatus_ =
          (errno == EINVAL || errno == EBADF) ? Aborted("the listener was shut down") : ErrnoError("accept", errno);
      return;
    }
    ++stats_.accepted;
    auto p = std::make_unique<Pending>(std::move(conn), secret_, options_.purpose, DeadlineIn(options_.handshakeMs));
    sockaddr_storage local = {};
    socklen_t length = sizeof(local);
    if (getsockname(p->fd.get(), reinterpret_cast<sockaddr*>(&local), &length) == 0 && local.ss_family == AF_UNIX) {
      if (!GetPeerCredentials(p->fd.get(), &p->credentials).ok() ||
          (options_.unixSameUid && p->credentials.uid != geteuid())) {
        ++stats_.wrongUser;
        continue;  // closed on the way out
      }
    } else {
      int one = 1;
      setsockopt(p->fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (!p->handshake.Begin(&p->out).ok()) continue;
    if (pending_.size() >= options_.maxPending) EvictOne();
    pending_.push_back(std::move(p));
    if (!Advance(*pending_.back(), POLLOUT)) pending_.pop_back();  // the hello fits any fresh socket's buffer
  }
}

bool Acceptor::Advance(Pending& p, short revents) {
  if ((revents & POLLOUT) && !p.out.empty()) {
    ssize_t n = send(p.socket(), p.out.data(), p.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) p.out.erase(0, static_cast<size_t>(n));
    else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
  }
  if (!(revents & (POLLIN | POLLHUP | POLLERR))) return true;
  for (;;) {
    char buffer[4096];
    const size_t n_want = std::min(sizeof(buffer), p.want - p.in.size());
    ssize_t n = recv(p.socket(), buffer, n_want, MSG_DONTWAIT);
    if (n == 0) return false;  // closed before it was done
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    p.in.append(buffer, static_cast<size_t>(n));
    if (p.in.size() < p.want) continue;
    switch (p.stage) {
      case Pending::Stage::kProof: {
        std::string reply;
        SessionKeys keys;
        if (!p.handshake.Answer(p.in, &reply, &keys).ok()) {
          ++stats_.failedAuthentication;
          const std::string no = RejectionReply();  // best effort: an honest client learns its id is wrong
          send(p.socket(), no.data(), no.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          return false;
        }
        p.out += reply;
        p.channel = Channel(std::move(p.fd), keys);
        ++stats_.authenticated;
        p.stage = Pending::Stage::kHeader;
        p.in.clear();
        p.want = kFrameHeaderBytes;
        Advance(p, POLLOUT);
        break;
      }
      case Pending::Stage::kHeader: {
        uint64_t length = 0;
        if (!ParseFrameHeader(p.in.data(), options_.maxFirstFrame, &length).ok()) return false;
        p.stage = Pending::Stage::kFrame;
        p.want = kFrameHeaderBytes + length + kFrameTagBytes;
        break;
      }
      case Pending::Stage::kFrame: {
        Arrival a;
        if (!p.channel.Open(p.in, options_.maxFirstFrame, &a.firstFrame).ok()) return false;
        if (!p.out.empty()) {
          // The proof has not fully left yet; it is a few bytes on a fresh socket, so this
          // only happens to a peer that is not reading: drop it.
          return false;
        }
        a.channel = std::move(p.channel);
        a.credentials = p.credentials;
        ready_.push_back(std::move(a));
        return false;  // no longer pending
      }
    }
  }
}

Status Acceptor::Next(Deadline deadline, Arrival* arrival) {
  bool woken = false;
  return NextOr(deadline, nullptr, arrival, &woken);
}

Status Acceptor::NextOr(Deadline deadline, std::vector<pollfd>* others, Arrival* arrival, bool* woken) {
  *woken = false;
  for (;;) {
    if (!ready_.empty()) {
      *arrival = std::move(ready_.front());
      ready_.pop_front();
      return Status::Ok();
    }
    if (!listenerStatus_.ok()) return listenerStatus_;
    const Deadline now = Clock::now();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if ((*it)->deadline <= now) {
        ++stats_.expired;
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    const int64_t left = MsLeft(deadline);
    if (left <= 0) return Timeout("no connection completed in time");

    const bool resting = restUntil_ > now;
    std::vector<pollfd> fds;
    fds.push_back({resting ? -1 : listener_, POLLIN, 0});
    int64_t wait = std::min<int64_t>(left, 1000);
    if (resting) wait = std::min<int64_t>(wait, std::max<int64_t>(1, MsLeft(restUntil_)));
    for (const auto& p : pending_) {
      fds.push_back({p->socket(), static_cast<short>(POLLIN | (p->out.empty() ? 0 : POLLOUT)), 0});
      wait = std::min<int64_t>(wait, std::max<int64_t>(1, MsLeft(p->deadline)));
    }
    const size_t ours = fds.size();
    if (others != nullptr) {
      for (auto& o : *others) o.revents = 0;
      fds.insert(fds.end(), others->begin(), others->end());
    }
    int n = poll(fds.data(), fds.size(), static_cast<int>(wait));
    if (n < 0 && errno != EINTR) return ErrnoError("poll", errno);
    if (n <= 0) continue;
    for (size_t i = ours; i < fds.size(); ++i) {
      (*others)[i - ours].revents = fds[i].revents;
      *woken |= fds[i].revents != 0;
    }
    if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      listenerStatus_ = Aborted("the listener was shut down");
    }
    // Pending connections first (they were here before), then new ones.
    size_t i = 1;
    for (auto it = pending_.begin(); it != pending_.end(); ++i) {
      if (fds[i].revents != 0 && !Advance(**it, fds[i].revents)) {
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    if (fds[0].revents & POLLIN) AcceptNew();
    if (*woken) return Status::Ok();
  }
}

}  // namespace cco
