#include "bootstrap/fd_mesh.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "bootstrap/acceptor.h"
#include "bootstrap/messages.h"
#include "bootstrap/root.h"

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
    return RemoteError(Fmt("the process at LSA rank ", member, "'s socket belongs to user ", cred.uid, ", not to ", geteuid()));
  // Pids mean something only inside one pid namespace (containers sharing a network).
  const uint64_t ns = PidNamespace();
  if (ns != 0 && m.pidNamespace == ns && cred.pid != m.pid)
    return RemoteError(Fmt("the process at LSA rank ", member, "'s socket is pid ", cred.pid, ", but that rank announced pid ",
                           m.pid, " (another process on this host?)"));
  return Status::Ok();
}

Status FdMesh::Connect(const Key& secret, const std::vector<Member>& team, int myIndex, int64_t timeoutMs) {
  team_ = team;
  my_index_ = myIndex;
  timeout_ms_ = timeoutMs;
  peers_.clear();
  peers_.resize(team_.size());
  const Deadline deadline = DeadlineIn(timeoutMs);
  // Lower indices listen for us; we listen for higher ones.
  for (int i = 0; i < myIndex; ++i) {
    if (team_[i].inThisProcess) continue;
    const std::string where = Fmt("reaching LSA rank ", i, " on this host");
    Fd fd;
    CCO_RETURN_IF_ERROR(ConnectUnix(team_[i].name, deadline, &fd).Prefixed(where));
    CCO_RETURN_IF_ERROR(CheckPeer(fd.get(), i).Prefixed(where));
    CCO_RETURN_IF_ERROR(Channel::Connect(std::move(fd), secret, "mesh", deadline, &peers_[i]).Prefixed(where));
    CCO_RETURN_IF_ERROR(peers_[i].Send(EncodeMeshJoin(MeshJoin{myIndex}), deadline).Prefixed(where));
  }
  size_t expected = 0;
  for (size_t i = myIndex + 1; i < team_.size(); ++i) expected += team_[i].inThisProcess ? 0 : 1;
  Acceptor acceptor(listener_.get(), secret, AcceptorOptions{"mesh", HandshakeMs(timeoutMs), 64, kMaxJoinBytes, true});
  for (size_t joined = 0; joined < expected;) {
    Arrival a;
    CCO_RETURN_IF_ERROR(acceptor.Next(deadline, &a).Prefixed(Fmt("waiting for the ranks of this host after LSA rank ", myIndex)));
    MeshJoin join;
    if (!DecodeMeshJoin(a.firstFrame, &join).ok() || join.member <= myIndex ||
        join.member >= static_cast<int32_t>(team_.size()) || team_[join.member].inThisProcess || peers_[join.member].valid())
      continue;  // not a member this rank waits for: dropped
    if (!CheckPeer(a.channel.fd(), join.member).ok()) continue;  // a member's name in another process's mouth
    peers_[join.member] = std::move(a.channel);
    ++joined;
  }
  listener_.Reset();  // the team is complete
  return Status::Ok();
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
