// SPDX-License-Identifier: MIT
// File descriptors between the processes of one LSA team: a mesh of authenticated Unix
// sockets (abstract namespace, random names, one connection per pair of ranks in different
// processes) over which each rank hands its peers the descriptor of a physical allocation
// (SCM_RIGHTS). A connection is taken only from a process of this user (SO_PEERCRED) whose
// pid is the one its rank announced through the authenticated bootstrap, and only after it
// proved the communicator's secret. Ranks that share a process need no descriptors at all
// (comm/window.cc maps their memory directly), so they are not part of the mesh.
#ifndef CCO_HOST_BOOTSTRAP_FD_MESH_H_
#define CCO_HOST_BOOTSTRAP_FD_MESH_H_

#include <stdint.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/channel.h"

namespace cco {

class FdMesh {
 public:
  // A member of the LSA team, as its rank announced itself.
  struct Member {
    std::string name;  // its listener
    int32_t pid = 0;
    uint64_t pidNamespace = 0;
    bool inThisProcess = false;
  };

  // Opens this rank's listener under a fresh random name; do this before ranks learn the
  // team, so peers never connect to a listener that does not exist yet.
  static Status Listen(std::unique_ptr<FdMesh>* out);
  const std::string& name() const { return name_; }

  // Connects to every member of the team in another process, this rank at myIndex.
  Status Connect(const Key& secret, const std::vector<Member>& team, int myIndex, int64_t timeoutMs);

  // Sends `myFd` to every member in another process and receives theirs, handing each to
  // `take(member, fd)` as it arrives (take owns it; members in this process are skipped); `tag`
  // identifies the operation on both sides. One received descriptor is open at a time: a
  // process's descriptor table that grows mid-exchange stalls every peer for an RCU grace
  // period (milliseconds), and a rank receiving from every peer at once would grow it.
  // myFd < 0 (this rank has no descriptor: its export failed) still takes part, so that its
  // peers fail at once instead of at the timeout; a member that sent none fails the exchange.
  // Returns the first failure: a failed `take`, a member without a descriptor, or a
  // descriptor this process could not take (its descriptor limit) after every member's
  // message was still received and its descriptor closed, so the next exchange stays in
  // step; a broken stream (a send or receive that failed, a message of another
  // exchange) at once, and then every later exchange fails at once with it: the streams are
  // out of step for good.
  Status AllExchange(int myFd, uint64_t tag, const std::function<Status(int member, int fd)>& take);

  void Abort();

  // (team index, socket) of every member in another process: when one of those processes
  // ends, its socket hangs up, which the proxy watches for (poll without reading).
  std::vector<std::pair<int, int>> PeerSockets() const;

 private:
  FdMesh() = default;
  // The kernel's word on who is at the other end of member i's connection.
  Status CheckPeer(int fd, int member) const;
  // Connect's timeout, naming the members it did not reach and those that did not come.
  Status MeshTimeout(const std::vector<int>& unreached, const std::vector<int>& incoming) const;

  std::string name_;
  int my_index_ = 0;
  int64_t timeout_ms_ = 0;
  std::vector<Member> team_;
  Fd listener_;
  std::vector<Channel> peers_;  // by team index
  Status broken_;               // why the streams are out of step (AllExchange)
};

// This process's pid namespace (the inode of /proc/self/ns/pid; 0 if unknown): pids are
// compared only between processes of one namespace.
uint64_t PidNamespace();

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_FD_MESH_H_
