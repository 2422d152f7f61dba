// SPDX-License-Identifier: MIT
// The client side of many authenticated Unix-socket connections at once, driven by the
// caller's poll loop, so that a rank serves its own listener meanwhile (the descriptor mesh:
// each rank connects to some peers and is connected to by the others, all at the same time).
// Each target is connected, checked (the caller's test of the kernel's word on who listens),
// authenticated (the client half of auth/handshake.h) and sent its first frame without
// blocking. A connection the server closed before it authenticated (pushed out by a crowd
// of newer ones, or too slow for its handshake bound) is made again, until the deadline; a
// server that proves another secret, or fails the check, is an error at once.
#ifndef CCO_HOST_BOOTSTRAP_CONNECTOR_H_
#define CCO_HOST_BOOTSTRAP_CONNECTOR_H_

#include <poll.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/channel.h"

namespace cco {

class Connector {
 public:
  // Whether the process listening at a target's socket may be talked to (SO_PEERCRED).
  using Check = std::function<Status(int id, int fd)>;

  Connector(const Key& secret, const char* purpose, Check check);
  ~Connector();
  Connector(const Connector&) = delete;
  Connector& operator=(const Connector&) = delete;

  // Starts connecting to the Unix socket `name` (abstract namespace), as target `id`.
  void Add(int id, const std::string& name, const std::string& firstFrame);

  // The sockets to poll for the connections under way (cleared first); Handle takes the
  // same entries back with their revents.
  void Fds(std::vector<pollfd>* fds);
  void Handle(const std::vector<pollfd>& fds);
  // Moves on what needs no socket event: retries that are due, bounds that passed.
  void Tick();
  // How long a poll may wait before Tick has something to do (at most `limit`).
  int64_t WaitMs(int64_t limit) const;

  bool busy() const { return !pending_.empty(); }
  // The first failure of a target, with its id (-1: none).
  const Status& error() const { return error_; }
  int failedId() const { return failedId_; }
  // Connections made since the last call, with their target ids.
  std::vector<std::pair<int, Channel>> TakeConnected();
  // The ids still under way.
  std::vector<int> Pending() const;

 private:
  struct Attempt;
  void Start(Attempt& a);
  void Fail(Attempt& a, Status why);
  // Moves one attempt along; false once it is finished with (connected or failed).
  bool Advance(Attempt& a, short revents);

  Key secret_;
  const char* purpose_;
  Check check_;
  std::vector<std::unique_ptr<Attempt>> pending_;
  std::vector<std::pair<int, Channel>> connected_;
  Status error_;
  int failedId_ = -1;
};

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_CONNECTOR_H_
