// File descriptors between the processes of one LSA team: a Unix-socket mesh (abstract
// namespace, one connection per pair) over which each rank hands its peers the
// descriptor of a physical allocation (SCM_RIGHTS). Peers in the same process work too.
#ifndef CCO_HOST_BOOTSTRAP_FD_MESH_H_
#define CCO_HOST_BOOTSTRAP_FD_MESH_H_

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"

namespace cco {

class FdMesh {
 public:
  // Opens this rank's listener under a name unique to this process; do this before ranks
  // learn the team, so peers never connect to a listener that does not exist yet.
  static Status Listen(const Nonce& nonce, int worldRank, std::unique_ptr<FdMesh>* out);
  const std::string& name() const { return name_; }

  // Connects to every other member of the team: their listener names, this rank at myIndex.
  Status Connect(const std::vector<std::string>& teamNames, int myIndex, int64_t timeoutMs);

  // Sends `myFd` to every peer and receives each peer's descriptor (fds[myIndex] = -1);
  // `tag` identifies the operation on both sides. The caller owns the received fds.
  Status AllExchange(int myFd, uint64_t tag, std::vector<int>* fds);

  void Abort();

 private:
  explicit FdMesh(int worldRank) : world_rank_(worldRank) {}

  int world_rank_;
  std::string name_;
  int my_index_ = 0;
  int64_t timeout_ms_ = 0;
  std::vector<std::string> team_;
  Fd listener_;
  std::vector<Fd> peers_;  // by team index
};

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_FD_MESH_H_
