// SPDX-License-Identifier: MIT
// The server side of every CCO listener (rendezvous root, hub, descriptor mesh): it never
// waits on one connection. Each accepted connection gets the server half of the
// handshake (auth/handshake.h) and must then send one frame that says who it is, all
// within `handshakeMs`; until then it is "pending". At most `maxPending` connections are
// pending at once: a newer one pushes the oldest unauthenticated one out (an honest peer
// authenticates in a round trip, and retries if it was pushed out before). When the process runs out of file
// descriptors, the oldest pending connection is closed to make room and the listener rests for a moment instead of
// spinning. Strangers, slow clients and floods therefore cost the job nothing but their own connections.
#ifndef CCO_HOST_BOOTSTRAP_ACCEPTOR_H_
#define CCO_HOST_BOOTSTRAP_ACCEPTOR_H_

#include <poll.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/channel.h"

namespace cco {

struct AcceptorOptions {
  const char* purpose = "";    // the handshake's purpose ("root", "hub", "mesh")
  int64_t handshakeMs = 5000;  // handshake plus first frame, per connection
  size_t maxPending = 64;
  size_t maxFirstFrame = 4096;  // the bound of the identifying frame
  bool unixSameUid = false;     // Unix listeners: only this user's processes (SO_PEERCRED)
};

// An authenticated connection and the frame it introduced itself with.
struct Arrival {
  Channel channel;
  std::string firstFrame;
  PeerCredentials credentials{0, 0};  // Unix sockets only
};

// What an acceptor turned away, for tests and diagnostics.
struct AcceptorStats {
  size_t accepted = 0;
  size_t authenticated = 0;
  size_t failedAuthentication = 0;  // wrong proof, or not a CCO client
  size_t expired = 0;               // too slow
  size_t evicted = 0;               // pushed out by newer ones, or for a free descriptor
  size_t wrongUser = 0;
  size_t descriptorShortages = 0;
};

class Acceptor {
 public:
  // `listener` is non-blocking and stays the caller's.
  Acceptor(int listener, const Key& secret, const AcceptorOptions& options);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  // The next arrival; ccoTimeout at the deadline, ccoAborted once the listener is shut down.
  Status Next(Deadline deadline, Arrival* arrival);
  // The same, also waiting on `others` (the caller's own sockets, in one poll with the
  // listener's): when one of them is ready it returns at once, ccoSuccess with *woken set,
  // their revents filled in and *arrival untouched (an arrival made meanwhile waits for the
  // next call).
  Status NextOr(Deadline deadline, std::vector<pollfd>* others, Arrival* arrival, bool* woken);

  // A server that learns how many honest clients come at once (the root, from the first
  // rank's hello) lets that many be pending: honest ranks that connect together are then
  // not pushed out by one another.
  void SetMaxPending(size_t maxPending) { options_.maxPending = maxPending; }

  size_t pending() const { return pending_.size(); }
  const AcceptorStats& stats() const { return stats_; }

 private:
  struct Pending;
  void AcceptNew();
  // Makes room: the oldest unauthenticated pending connection, else the oldest of all.
  void EvictOne();
  // Moves one pending connection along; false when it is finished with (done or dropped).
  bool Advance(Pending& p, short revents);

  int listener_;
  Key secret_;
  AcceptorOptions options_;
  std::deque<std::unique_ptr<Pending>> pending_;  // oldest first
  std::deque<Arrival> ready_;
  Deadline restUntil_{};
  Status listenerStatus_;
  AcceptorStats stats_;
};

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_ACCEPTOR_H_
