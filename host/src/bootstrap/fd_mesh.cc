// SPDX-License-Identifier: MIT
#include "bootstrap/fd_mesh.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "bootstrap/acceptor.h"
#include "bootstrap/connector.h"
#include "bootstrap/messages.h"
#include "bootstrap/root.h"
#include "common/text.h"

namespace cco {

uint64_t PidNamespace() {
  struct stat st = {};
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

Status FdMesh::Listen(std::unique_ptr<FdMesh>* out) {
  std::unique_ptr<FdMesh> mesh(new FdMesh());
  mesh->name_ = RandomSocketName("cco-mesh-");
  CCO_RETURN_IF_ERROR(ListenUnix(mesh->name_, &mesh->listener_));
  *out = std::move(mesh);
  return Status::Ok();
}

Status FdMesh::CheckPeer(int fd, int member) const {
  PeerCredentials cred;
  CCO_RETURN_IF_ERROR(GetPeerCredentials(fd, &cred));
  const Member& m = team_[member];
  if (cred.uid != geteuid())
    return RemoteError(
        Fmt("the process at LSA rank ", member, "'s socket belongs to user ", cred.uid, ", not to ", geteuid()));
  // Pids mean something only inside one pid namespace (containers sharing a network).
  const uint64_t ns = PidNamespace();
  if (ns != 0 && m.pidNamespace == ns && cred.pid != m.pid)
    return RemoteError(Fmt("the process at LSA rank ", member, "'s socket is pid ", cred.pid,
                           ", but that rank announced pid ", m.pid, " (another process on this host?)"));
  return Status::Ok();
}

Status FdMesh::Connect(const Key& secret, const std::vector<Member>& team, int myIndex, int64_t timeoutMs) {
  team_ = team;
  my_index_ = myIndex;
  timeout_ms_ = timeoutMs;
  peers_.clear();
  peers_.resize(team_.size());
  const Deadline deadline = DeadlineIn(timeoutMs);
  // Lower indices listen for us; we listen for higher ones. Both at once: every connection
  // of the team is under way together, and no rank's connecting waits for another's.
  Connector outgoing(secret, "mesh", [this](int member, int fd) {
    return CheckPeer(fd, member).Prefixed(Fmt("reaching LSA rank ", member, " on this host"));
  });
  for (int i = 0; i < myIndex; ++i)
    if (!team_[i].inThisProcess) outgoing.Add(i, team_[i].name, EncodeMeshJoin(MeshJoin{myIndex}));
  std::vector<int> incoming;  // the members that must still connect to this rank
  for (size_t i = myIndex + 1; i < team_.size(); ++i)
    if (!team_[i].inThisProcess) incoming.push_back(static_cast<int>(i));
  // Each member of the team may be mid-handshake with this rank at once.
  Acceptor acceptor(
      listener_.get(), secret,
      AcceptorOptions{"mesh", HandshakeMs(timeoutMs), std::max<size_t>(64, team_.size()), kMaxJoinBytes, true});
  size_t joined = 0;
  std::vector<pollfd> fds;
  while (outgoing.busy() || joined < incoming.size()) {
    outgoing.Tick();
    for (auto& c : outgoing.TakeConnected()) peers_[c.first] = std::move(c.second);
    if (!outgoing.error().ok()) return outgoing.error();
    if (!outgoing.busy() && joined == incoming.size()) break;
    if (MsLeft(deadline) <= 0) return MeshTimeout(outgoing.Pending(), incoming);
    outgoing.Fds(&fds);
    // Wake for a retry that falls due (the acceptor's own waits are its business).
    const Deadline wake = std::min(deadline, DeadlineIn(outgoing.WaitMs(1000)));
    if (joined == incoming.size()) {
      int n = poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, MsLeft(wake))));
      if (n < 0 && errno != EINTR) return ErrnoError("poll", errno);
      if (n > 0) outgoing.Handle(fds);
      continue;
    }
    Arrival a;
    bool woken = false;
    Status s = acceptor.NextOr(wake, &fds, &a, &woken);
    if (s.code() == ccoTimeout) continue;  // a retry is due, or the bound passed (checked above)
    if (!s.ok()) return s.Prefixed(Fmt("waiting for the ranks of this host after LSA rank ", myIndex));
    if (woken) {
      outgoing.Handle(fds);
      continue;
    }
    MeshJoin join;
    if (!DecodeMeshJoin(a.firstFrame, &join).ok() || join.member <= myIndex ||
        join.member >= static_cast<int32_t>(team_.size()) || team_[join.member].inThisProcess ||
        peers_[join.member].valid())
      continue;                                                  // not a member this rank waits for: dropped
    if (!CheckPeer(a.channel.fd(), join.member).ok()) continue;  // a member's name in another process's mouth
    peers_[join.member] = std::move(a.channel);
    ++joined;
  }
  for (auto& c : outgoing.TakeConnected()) peers_[c.first] = std::move(c.second);
  listener_.Reset();  // the team is complete
  return Status::Ok();
}

Status FdMesh::MeshTimeout(const std::vector<int>& unreached, const std::vector<int>& incoming) const {
  std::vector<int> silent;
  for (int i : incoming)
    if (!peers_[i].valid()) silent.push_back(i);
  std::string what;
  if (!unreached.empty())
    what = Fmt("LSA ", RanksPhrase(unreached), " of this host did not answer on the descriptor mesh");
  if (!silent.empty())
    what += Fmt(what.empty() ? "" : "; ", "LSA ", RanksPhrase(silent), " of this host did not connect to it");
  return Timeout(Fmt(what, " within ", timeout_ms_, " ms (CCO_TIMEOUT_MS): stuck, or failed before the mesh"));
}

Status FdMesh::AllExchange(int myFd, uint64_t tag, const std::function<Status(int member, int fd)>& take) {
  if (!broken_.ok()) return broken_;
  const Deadline deadline = DeadlineIn(timeout_ms_);
  const auto broke = [this](Status why) {
    broken_ = why.Prefixed("the host's descriptor mesh broke in an earlier exchange");
    return why;
  };
  const std::string message = EncodeFdMessage(tag);
  for (size_t i = 0; i < team_.size(); ++i) {
    if (!peers_[i].valid()) continue;
    Status sent = peers_[i].Send(message, deadline, myFd);
    if (!sent.ok()) return broke(sent.Prefixed(Fmt("sending to LSA rank ", i)));
  }
  // A failure in `take`, or a member with nothing to send, still receives (and closes) every
  // member's message, so that the next exchange on these sockets reads its own messages,
  // not this one's leftovers.
  Status first;
  for (size_t i = 0; i < team_.size(); ++i) {
    if (!peers_[i].valid()) continue;
    std::string bytes;
    uint64_t got = 0;
    int fd = -1;
    bool inStep = false;
    Status s = peers_[i].Recv(&bytes, kMaxJoinBytes, deadline, &fd, &inStep);
    // Only its descriptor lost (this process's descriptor limit): the frame itself was read
    // whole, so the stream is in step if it is this exchange's; a failed take.
    Status lost;
    if (!s.ok() && inStep) std::swap(lost, s);
    if (s.ok()) s = DecodeFdMessage(bytes, &got);
    if (s.ok() && got != tag)
      s = RemoteError(Fmt("a peer sent the descriptor of another operation (tag ", got, ", expected ", tag, ")"));
    if (!s.ok()) {
      if (fd >= 0) close(fd);
      return broke(s.Prefixed(Fmt("receiving from LSA rank ", i)));  // the stream itself is broken
    }
    if (!lost.ok()) {
      if (first.ok()) first = lost.Prefixed(Fmt("receiving from LSA rank ", i));
      continue;
    }
    if (fd < 0) {
      if (first.ok()) first = RemoteError(Fmt("LSA rank ", i, " sent no descriptor (it could not export its memory)"));
      continue;
    }
    if (!first.ok()) {
      close(fd);
      continue;
    }
    first = take(static_cast<int>(i), fd);
  }
  return first;
}

std::vector<std::pair<int, int>> FdMesh::PeerSockets() const {
  std::vector<std::pair<int, int>> sockets;
  for (size_t i = 0; i < peers_.size(); ++i)
    if (peers_[i].valid()) sockets.emplace_back(static_cast<int>(i), peers_[i].fd());
  return sockets;
}

void FdMesh::Abort() {
  for (auto& p : peers_)
    if (p.valid()) shutdown(p.fd(), SHUT_RDWR);
  if (listener_.valid()) shutdown(listener_.get(), SHUT_RDWR);
}

}  // namespace cco
