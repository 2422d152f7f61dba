// SPDX-License-Identifier: MIT
// The tcp backend (net/backend.h): GDA between ranks of different hosts over TCP, on the
// connections of net/tcp_mesh.h, with the protocol of net/tcp_wire.h.
//
// Everything runs on the proxy's thread, never blocking: sockets are non-blocking and
// watched with epoll (with one or two peers, simply read every pass), and payloads go
// through pinned chunks (net/staging.h) that a stream of the backend's own fills from
// device memory (sends) and empties into it (receives), up to `chunks` of `chunkBytes` in
// flight per socket and direction, so a large put is a pipeline of copy out, send, receive,
// copy in. Every chunk is allocated when the backend is made (never while kernels run,
// net/staging.h), all peers' within `stagingBytes` (see there). The target applies a request's data,
// then its signal, on that stream, and acknowledges once the stream has passed both: a
// completion means the bytes are in the target's memory.
//
// A dead peer is found in bounded time: the kernel reports a closed or reset connection at
// once; a silent one through TCP_USER_TIMEOUT (unacknowledged data) and keepalive (an idle
// connection), both set to the timeout; and a request the peer has not answered within the
// timeout fails its peer too. Then every op to that peer completes with an error naming it.
#ifndef CCO_HOST_NET_TCP_BACKEND_H_
#define CCO_HOST_NET_TCP_BACKEND_H_

#include <stdint.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "net/backend.h"
#include "net/staging.h"
#include "platform/platform.h"

namespace cco {

namespace tcp {
struct Peer;
struct Socket;
}  // namespace tcp

struct TcpOptions {
  int64_t timeoutMs = 120000;           // dead-peer bound (CCO_NET_TIMEOUT_MS, else CCO_TIMEOUT_MS)
  size_t chunkBytes = size_t{1} << 20;  // CCO_TCP_CHUNK_BYTES, 4 KiB to 1 MiB
  int chunks = 4;                       // per socket and direction
  // The pinned chunks of every peer together, allocated when the backend is made (never while
  // kernels run: net/staging.h). With more peers than fit at chunkBytes, chunks shrink, to
  // 4 KiB at the least: past 1024 peers at the default the chunks need more (64 KiB a peer).
  // Each peer's 1 KiB of put_value words comes on top. CCO_TCP_STAGING_BYTES, 1 MiB to 64 GiB.
  size_t stagingBytes = size_t{64} << 20;
  // How long an ack may wait for a request of this rank's to the same peer to carry it, while
  // this rank talks to that peer too (CCO_TCP_ACK_DELAY_US). 0: an ack goes bare one pass
  // after it is due, unless a request left in between and carried it. Holding acks made a
  // ping-pong no faster and would delay a flush, so it is off unless asked for.
  int64_t ackDelayUs = 0;
  // Up to this many peers, every socket is read each pass instead of asking epoll which to
  // read (two sockets a peer: an idle recv costs little more than an epoll_wait, and a recv
  // that finds bytes is one call where epoll then recv is two, which shortens a round trip).
  // At most kMaxPollEverySocketPeers.
  size_t pollEverySocketPeers = 2;
  static constexpr size_t kMaxPollEverySocketPeers = 32;  // a pass's events, two a peer
};

// The options from the environment.
TcpOptions TcpOptionsFromEnv(int64_t timeoutMs);
// The chunk size a backend with `peers` peers stages through: options.chunkBytes, or less so
// that every pool of every peer fits options.stagingBytes (4 KiB at the least).
size_t StagingChunkBytes(const TcpOptions& options, size_t peers);

class TcpBackend : public NetBackend {
 public:
  // Takes the connections of ConnectTcpMesh (indexed by world rank; invalid where unused).
  static Status Create(Platform* platform, int device, const TcpOptions& options, std::vector<Fd> outgoing,
                       std::vector<Fd> incoming, std::unique_ptr<TcpBackend>* out);
  ~TcpBackend() override;

  const char* name() const override { return "tcp"; }
  bool Reaches(int32_t peer) const override;
  void Post(const NetOp& op, NetTargetMap& map) override;
  bool Progress(NetTargetMap& map, std::vector<NetCompletion>* done) override;
  std::string lastError() const override;
  bool AwaitsReply() const override { return awaitReply_; }
  int InputFd() const override { return epoll_.get(); }       // every socket, level-triggered
  bool readsEverySocket() const { return pollEverySocket_; }  // rather than asking epoll
  void Drain() override;
  void SayFailed(int32_t blamed, NetTargetMap& map) override;

 private:
  using Peer = tcp::Peer;
  using Socket = tcp::Socket;
  TcpBackend(Platform* platform, int device, const TcpOptions& options);

  // The socket's reading and writing; false with *error when the peer must be given up.
  bool Read(Peer& p, Socket& s, bool target, NetTargetMap& map, bool* did, Status* error);
  bool Write(Peer& p, Socket& s, bool target, NetTargetMap& map, bool* did, Status* error);
  // A complete header: acted on, or *stall when it must wait (for a free chunk, for room
  // for answers, or for an earlier get's bytes to be copied out).
  Status OnRequest(Peer& p, Socket& s, NetTargetMap& map, bool* stall);
  Status OnAnswer(Peer& p, Socket& s);
  // A chunk of payload is complete: into its window (looked up now), or dropped.
  Status LandChunk(Peer& p, Socket& s, bool target, NetTargetMap& map);
  Status FinishPayload(Peer& p, Socket& s, bool target, NetTargetMap& map);
  Status FinishRequest(Peer& p, Socket& s, NetTargetMap& map);
  // The copy of a chunk's bytes into device memory, queued; the chunk is freed once it passed.
  Status Land(Socket& s, StagingPool& pool, int chunk, uint64_t dst, size_t bytes, uint64_t* token);
  bool ReleaseLanded(Socket& s);
  // Target: answers whose work the stream has passed go out, acks merged, or held for a
  // request of this rank's to carry (QueueAck sends the held ones bare).
  bool PumpAnswers(Peer& p);
  bool HoldDueAcks(Peer& p);  // the acks at the front of what is owed, whose work is done
  void QueueAck(Peer& p);
  // Initiator: the requests up to `seq` are acknowledged (an ACK, a carried ack, or a later
  // answer); an error if one of them was a get still without its data.
  Status AckUpTo(Peer& p, uint64_t seq, bool* advanced = nullptr);
  Status ApplyCarriedAck(Peer& p);
  // Initiator: requests done, in order, become completions.
  bool Complete(Peer& p, std::vector<NetCompletion>* done);
  void CheckAlive(Peer& p, Clock::time_point now, std::vector<NetCompletion>* done);
  // FailPeer, once what the peer sent before its end is read (a notice it failed, answers).
  void LosePeer(Peer& p, const Status& why, std::vector<NetCompletion>* done, NetTargetMap& map);
  void FailPeer(Peer& p, const Status& why, std::vector<NetCompletion>* done);

  Platform* platform_;
  int device_;
  TcpOptions options_;
  uint64_t stream_ = 0;
  bool streamMade_ = false;
  std::unique_ptr<StreamFence> fence_;
  PinnedSlab slab_;  // every peer's chunks (their pools point into it)
  Fd epoll_;
  bool pollEverySocket_ = false;              // few peers: every socket is read each pass, not epoll's
  std::vector<std::unique_ptr<Peer>> peers_;  // by world rank; null where unused
  std::vector<NetCompletion> refusedAtPost_;  // ops posted to a lost peer
  uint64_t pass_ = 0;                         // Progress calls so far
  bool appliedThisPass_ = false;              // a request was applied in this pass
  bool answerableThisPass_ = false;           // ... one with a signal, or a put_value
  bool deferredLast_ = false;                 // the last pass left its bookkeeping to this one
  bool awaitReply_ = false;                   // and applied an answerable request and read
                                              // every socket it read empty
  Clock::time_point now_ = Clock::now();      // read once per Progress
  mutable std::mutex errorMu_;                // lastError is read from other threads
  std::string lastError_;
};

}  // namespace cco

#endif  // CCO_HOST_NET_TCP_BACKEND_H_
