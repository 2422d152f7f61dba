#include "bootstrap/fd_mesh.h"

#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/wire.h"

namespace cco {

Status FdMesh::Listen(const Nonce& nonce, int worldRank, std::unique_ptr<FdMesh>* out) {
  std::unique_ptr<FdMesh> mesh(new FdMesh(worldRank));
  // The pid keeps two processes that (wrongly) claim one rank from colliding here: the
  // rendezvous reports that mistake with a better message.
  mesh->name_ = Fmt("cco-", nonce.Hex(), "-", worldRank, "-", getpid());
  CCO_RETURN_IF_ERROR(ListenUnix(mesh->name_, &mesh->listener_));
  *out = std::move(mesh);
  return Status::Ok();
}

Status FdMesh::Connect(const std::vector<std::string>& teamNames, int myIndex, int64_t timeoutMs) {
  team_ = teamNames;
  my_index_ = myIndex;
  timeout_ms_ = timeoutMs;
  peers_.clear();
  peers_.resize(team_.size());
  const Deadline deadline = DeadlineIn(timeoutMs);
  // Lower indices listen for us; we listen for higher ones.
  for (int i = 0; i < myIndex; ++i) {
    CCO_RETURN_IF_ERROR(ConnectUnix(team_[i], deadline, &peers_[i])
                            .Prefixed(Fmt("reaching LSA rank ", i, " on this host")));
    const int32_t me = myIndex;
    CCO_RETURN_IF_ERROR(SendAll(peers_[i].get(), &me, sizeof(me), deadline));
  }
  for (size_t joined = myIndex + 1; joined < team_.size(); ++joined) {
    Fd conn;
    CCO_RETURN_IF_ERROR(Accept(listener_.get(), deadline, &conn)
                            .Prefixed(Fmt("waiting for the ranks of this host after rank ", world_rank_)));
    int32_t index = -1;
    CCO_RETURN_IF_ERROR(RecvAll(conn.get(), &index, sizeof(index), deadline));
    if (index <= myIndex || index >= static_cast<int32_t>(team_.size()) || peers_[index].valid())
      return RemoteError(Fmt("a process on this host joined rank ", world_rank_, "'s mesh as member ", index));
    peers_[index] = std::move(conn);
  }
  listener_.Reset();  // the team is complete
  return Status::Ok();
}

Status FdMesh::AllExchange(int myFd, uint64_t tag, std::vector<int>* fds) {
  fds->assign(team_.size(), -1);
  const Deadline deadline = DeadlineIn(timeout_ms_);
  for (size_t i = 0; i < team_.size(); ++i) {
    if (static_cast<int>(i) == my_index_) continue;
    CCO_RETURN_IF_ERROR(SendFd(peers_[i].get(), myFd, tag, deadline).Prefixed(Fmt("sending to LSA rank ", i)));
  }
  for (size_t i = 0; i < team_.size(); ++i) {
    if (static_cast<int>(i) == my_index_) continue;
    Status s = RecvFd(peers_[i].get(), tag, deadline, &(*fds)[i]);
    if (!s.ok()) {
      for (int& fd : *fds)
        if (fd >= 0) close(fd), fd = -1;
      return s.Prefixed(Fmt("receiving from LSA rank ", i));
    }
  }
  return Status::Ok();
}

void FdMesh::Abort() {
  for (auto& p : peers_)
    if (p.valid()) shutdown(p.get(), SHUT_RDWR);
  if (listener_.valid()) shutdown(listener_.get(), SHUT_RDWR);
}

}  // namespace cco
