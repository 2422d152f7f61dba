// SPDX-License-Identifier: MIT
// The proxy's network backends: how a GDA operation reaches a rank of another node, and how
// the operations of such ranks land in this rank's memory.
//
// The proxy hands a backend one NetOp per descriptor it took from a ring, already checked
// on this side; the backend moves it and later hands back a NetCompletion with the op's
// cookie. A completion means the op is done at the target: a put's bytes and its signal
// word are in the target's memory (remote completion, what flush promises), a get's bytes
// are in this rank's. Ops to one peer complete in the order they were posted.
//
// The target side never trusts the wire: every window, offset, size and signal index an
// incoming op names is checked against this rank's own tables (NetTargetMap) before a byte
// moves, and an op that fails the check is refused back to its sender, with no effect.
//
// Backends: `tcp` (net/tcp_backend.h), everywhere; `verbs` (net/verbs_backend.h), where an
// RDMA device is. The proxy calls Post and Progress from its thread only.
#ifndef CCO_HOST_NET_BACKEND_H_
#define CCO_HOST_NET_BACKEND_H_

#include <stdint.h>

#include <vector>

#include "common/status.h"

namespace cco {

enum class NetOpKind : uint8_t { kPut = 1, kPutValue = 2, kSignal = 3, kGet = 4 };

struct NetOp {
  NetOpKind kind = NetOpKind::kPut;
  int32_t peer = -1;    // world rank
  uint32_t gdaId = 0;   // the device communicator (GdaResources::id: alike on every rank)
  uint32_t window = 0;  // at the peer: put and put_value's destination, get's source
  uint64_t offset = 0;  // ... and where in it
  uint64_t bytes = 0;   // put, get; put_value: 1 to 8
  uint64_t local = 0;   // in this rank's flat range: put's source, get's destination
  uint64_t value = 0;   // put_value's bytes, little-endian
  bool signal = false;  // then signal signalId at the peer gains signalAdd, after the data
  uint32_t signalId = 0;
  uint64_t signalAdd = 0;
  // Where that word is at the peer, for backends that write it themselves (verbs): in the
  // window that holds the device communicator's resources (the resource pool), at this byte offset.
  uint32_t signalWindow = 0;
  uint64_t signalWindowOffset = 0;
  uint32_t localWindow = 0;  // the window `local` lies in
  uint64_t localOffset = 0;  // ... and where in it
  int context = 0;           // the GDA context that posted it
  uint64_t cookie = 0;       // handed back in the completion
};

struct NetCompletion {
  uint64_t cookie = 0;
  Status status;          // refused by the target, or the peer was lost
  bool peerLost = false;  // the connection is gone: later ops to the peer fail at once
};

// A peer the backend gave up on, and why.
struct NetLoss {
  int32_t peer = -1;  // world rank
  Status why;
  int32_t blamedByPeer = -1;  // the rank the peer said its communicator failed because of (-1: none)
};

// What a backend asks the proxy, from the proxy's thread: where bytes of a window are
// (addresses in this rank's flat range, asked again for every chunk, so that nothing lands
// in a window deregistered meanwhile), whether a sender's word of a signal exists, and, to
// apply a signal, the word and the sender's new running sum (the target keeps the sums, so
// that a refused request adds nothing).
class NetTargetMap {
 public:
  virtual ~NetTargetMap() = default;
  virtual Status WindowAddress(uint32_t window, uint64_t offset, uint64_t bytes, uint64_t* address) = 0;
  virtual Status SignalAddress(uint32_t gdaId, uint32_t signalId, int32_t sender, uint64_t* address) = 0;
  virtual Status AddSignal(uint32_t gdaId, uint32_t signalId, int32_t sender, uint64_t add, uint64_t* address,
                           uint64_t* sum) = 0;
};

class NetBackend {
 public:
  virtual ~NetBackend() = default;
  virtual const char* name() const = 0;
  // Whether the backend has a connection to `peer` (world rank).
  virtual bool Reaches(int32_t peer) const = 0;
  // Queues `op`, or starts it at once where the connection is idle (reading this rank's
  // memory through `map`); its completion comes out of Progress (failed, when the peer is lost).
  virtual void Post(const NetOp& op, NetTargetMap& map) = 0;
  // Moves everything along without blocking, applying incoming ops through `map`; appends
  // the completions; whether anything happened.
  virtual bool Progress(NetTargetMap& map, std::vector<NetCompletion>* done) = 0;
  // Whether the last Progress applied a peer's request a kernel may wait on (a signal, a
  // put_value), read every socket it read empty and left its own bookkeeping for the next: the
  // kernel may answer within a microsecond, and the proxy then polls its rings alone for a
  // moment (Proxy::AwaitReply).
  virtual bool AwaitsReply() const { return false; }
  // A descriptor that polls readable when a peer's bytes wait to be read (-1: none): an idle
  // proxy naps on it, so that a request or an answer wakes it at once.
  virtual int InputFd() const { return -1; }
  // The first peer failure, "" if none. From any thread.
  virtual std::string lastError() const = 0;
  // The peers lost since the last call, each once, whether or not ops were in flight to them:
  // nothing they owe will come (their signals included), so whoever waits for it must stop.
  // From the proxy's thread, after Progress.
  void TakeLostPeers(std::vector<NetLoss>* out) {
    out->insert(out->end(), lostPeers_.begin(), lostPeers_.end());
    lostPeers_.clear();
  }

  // From any thread: returns once the copies the backend queued so far have run (a window
  // or device communicator is going away).
  virtual void Drain() {}

  // This rank's communicator failed because of world rank `blamed`: each live peer is told,
  // so that when this rank's connections close it blames `blamed`, not this rank (NetLoss).
  // From the proxy's thread; a backend that cannot tell them says nothing.
  virtual void SayFailed(int32_t blamed, NetTargetMap& map) {
    (void)blamed;
    (void)map;
  }

 protected:
  // A backend's FailPeer notes each peer it gives up on here, with the rank the peer said it
  // failed because of (-1: it said nothing).
  void NoteLost(int32_t peer, const Status& why, int32_t blamedByPeer = -1) {
    lostPeers_.push_back(NetLoss{peer, why, blamedByPeer});
  }

 private:
  std::vector<NetLoss> lostPeers_;
};

}  // namespace cco

#endif  // CCO_HOST_NET_BACKEND_H_
