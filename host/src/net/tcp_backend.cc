// SPDX-License-Identifier: MIT
// The tcp backend's connections, reading and writing, and the initiator's side; the target's
// side (requests in, answers out) is in tcp_target.cc.
#include "net/tcp_backend.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <iterator>

#include "common/env.h"
#include "net/tcp_connection.h"
#include "platform/proxy_scope.h"

namespace cco {

using tcp::kHeader;
using tcp::Outbound;

namespace {

// Bytes one socket moves per direction per pass, so that one busy peer cannot starve others.
constexpr size_t kPassBudget = size_t{8} << 20;
// A requests socket that sent payload this recently may still hold it in the kernel's buffer:
// no acks ride behind it.
constexpr auto kPayloadQuiet = std::chrono::milliseconds(1);

Status SocketOptions(int fd, int64_t timeoutMs) {
  CCO_RETURN_IF_ERROR(SetNonBlocking(fd));
  int one = 1;
  const unsigned userTimeout = static_cast<unsigned>(std::min<int64_t>(timeoutMs, 0x7fffffff));
  // Keepalive in whole seconds: probes begin after a third of the bound, every third.
  const int probeS = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(timeoutMs / 3000, 3600)));
  const int probes = 2;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof(userTimeout)) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &probeS, sizeof(probeS)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &probeS, sizeof(probeS)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes)) != 0)
    return ErrnoError("setting the GDA tcp socket's options", errno);
  return Status::Ok();
}

// recv/send that tell "would block" (0 moved, ok), "closed" and errors apart.
Status RecvSome(int fd, void* data, size_t size, size_t* got) {
  *got = 0;
  const ssize_t n = recv(fd, data, size, MSG_DONTWAIT);
  if (n > 0) *got = static_cast<size_t>(n);
  else if (n == 0) return RemoteError("it closed the connection");
  else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return ErrnoError("recv", errno);
  return Status::Ok();
}

// Up to two pieces in one call: a header and the start of its payload go out together.
Status SendSome(int fd, iovec* pieces, int count, bool more, size_t* sent) {
  *sent = 0;
  msghdr m{};
  m.msg_iov = pieces;
  m.msg_iovlen = static_cast<size_t>(count);
  const ssize_t n = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0));
  if (n >= 0) *sent = static_cast<size_t>(n);
  else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return ErrnoError("send", errno);
  return Status::Ok();
}

// Up to `want` bytes into `dst`: from the buffer, else from the socket unless it is drained
// (0: nothing there).
Status Take(int fd, tcp::Inbound& in, char* dst, size_t want, size_t* got) {
  if (!in.buffered()) {
    *got = 0;
    if (in.drained) return Status::Ok();
    if (want >= tcp::kReadBuffer) {
      CCO_RETURN_IF_ERROR(RecvSome(fd, dst, want, got));
      in.drained = *got < want;
      return Status::Ok();
    }
    in.bufferStart = in.bufferEnd = 0;
    CCO_RETURN_IF_ERROR(RecvSome(fd, in.buffer.data(), tcp::kReadBuffer, &in.bufferEnd));
    in.drained = in.bufferEnd < tcp::kReadBuffer;
    if (in.bufferEnd == 0) {
      *got = 0;
      return Status::Ok();
    }
  }
  *got = std::min(want, in.bufferEnd - in.bufferStart);
  memcpy(dst, in.buffer.data() + in.bufferStart, *got);
  in.bufferStart += *got;
  return Status::Ok();
}

}  // namespace

TcpOptions TcpOptionsFromEnv(int64_t timeoutMs) {
  TcpOptions o;
  o.timeoutMs = env::WaitMs("CCO_NET_TIMEOUT_MS", timeoutMs);  // the verbs backend's bound too
  const int64_t chunk = env::Int("CCO_TCP_CHUNK_BYTES", static_cast<int64_t>(o.chunkBytes));
  o.chunkBytes = static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(chunk, 4096), 1 << 20)) & ~size_t{7};
  o.ackDelayUs = std::min<int64_t>(env::Int("CCO_TCP_ACK_DELAY_US", o.ackDelayUs), 10000);  // env::Int: never negative
  const int64_t staging = env::Int("CCO_TCP_STAGING_BYTES", static_cast<int64_t>(o.stagingBytes));
  o.stagingBytes =
      static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(staging, int64_t{1} << 20), int64_t{64} << 30));
  return o;
}

size_t StagingChunkBytes(const TcpOptions& o, size_t peers) {
  // Each peer: two sockets, each with a send and a receive pool of o.chunks (its 1 KiB of
  // put_value words come on top).
  const size_t chunks = std::max<size_t>(1, peers) * 4 * static_cast<size_t>(o.chunks);
  const size_t fits = o.stagingBytes / chunks & ~size_t{4095};
  return std::max<size_t>(4096, std::min(o.chunkBytes, fits));
}

TcpBackend::TcpBackend(Platform* platform, int device, const TcpOptions& options)
    : platform_(platform), device_(device), options_(options) {}

Status TcpBackend::Create(Platform* platform, int device, const TcpOptions& options, std::vector<Fd> outgoing,
                          std::vector<Fd> incoming, std::unique_ptr<TcpBackend>* out) {
  std::unique_ptr<TcpBackend> b(new TcpBackend(platform, device, options));
  ProxyWorkScope scope;  // the stream is the proxy's (platform/proxy_scope.h)
  CCO_RETURN_IF_ERROR(platform->StreamCreate(device, &b->stream_).Prefixed("the GDA tcp stream"));
  b->streamMade_ = true;
  b->fence_.reset(new StreamFence(platform, device, b->stream_));
  CCO_RETURN_IF_ERROR(b->fence_->Init());
  b->epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!b->epoll_.valid()) return ErrnoError("epoll_create1", errno);
  size_t peers = 0;
  for (size_t q = 0; q < outgoing.size(); ++q)
    peers += outgoing[q].valid() && q < incoming.size() && incoming[q].valid();
  b->options_.chunkBytes = StagingChunkBytes(options, peers);
  b->peers_.resize(outgoing.size());
  size_t slabBytes = 0;
  for (size_t q = 0; q < outgoing.size(); ++q) {
    if (!outgoing[q].valid() || q >= incoming.size() || !incoming[q].valid()) continue;
    b->peers_[q].reset(new Peer(static_cast<int32_t>(q), b->options_));
    for (StagingPool* pool : b->peers_[q]->ChunkPools()) slabBytes += pool->bytes();
    for (StagingPool* pool : b->peers_[q]->WordPools()) slabBytes += pool->bytes();
  }
  // Every chunk and word in one allocation, now: none is made while kernels run
  // (net/staging.h). The chunks first, so that each pool starts where a chunk would.
  if (slabBytes > 0) CCO_RETURN_IF_ERROR(b->slab_.Init(platform, device, slabBytes));
  size_t placed = 0;
  for (bool words : {false, true})
    for (auto& peer : b->peers_)
      if (peer != nullptr)
        for (StagingPool* pool : words ? peer->WordPools() : peer->ChunkPools()) {
          pool->Place(b->slab_, placed);
          placed += pool->bytes();
        }
  for (size_t q = 0; q < outgoing.size(); ++q) {
    if (b->peers_[q] == nullptr) continue;
    Peer& p = *b->peers_[q];
    p.requests.fd = std::move(outgoing[q]);
    p.answers.fd = std::move(incoming[q]);
    int which = 0;
    for (Socket* s : {&p.requests, &p.answers}) {
      CCO_RETURN_IF_ERROR(SocketOptions(s->fd.get(), options.timeoutMs));
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.u64 = (static_cast<uint64_t>(q) << 1) | static_cast<uint64_t>(which++);
      if (epoll_ctl(b->epoll_.get(), EPOLL_CTL_ADD, s->fd.get(), &e) != 0) return ErrnoError("epoll_ctl", errno);
    }
  }
  b->pollEverySocket_ = peers <= std::min(options.pollEverySocketPeers, TcpOptions::kMaxPollEverySocketPeers);
  b->now_ = Clock::now();  // the pass clock's first reading: after the allocations above
  *out = std::move(b);
  return Status::Ok();
}

TcpBackend::~TcpBackend() {
  ProxyWorkScope scope;
  // Copies into and out of the staging chunks may still be queued: they run first.
  if (streamMade_) platform_->StreamSynchronize(device_, stream_);
  peers_.clear();
  fence_.reset();
  if (streamMade_) platform_->StreamDestroy(device_, stream_);
}

void TcpBackend::SayFailed(int32_t blamed, NetTargetMap& map) {
  for (auto& p : peers_) {
    if (!p || p->lost || !p->answers.fd.valid()) continue;
    tcp::Outbound o;
    o.header = TcpAnswerHeader(kTcpFailed, 0);
    o.header.value = static_cast<uint64_t>(blamed);
    // Sent now, behind whatever is queued before it: this rank may be about to exit, and
    // the notice must not wait for a pass that never comes.
    p->answers.out.push_back(o);
    Status error;
    bool did = false;
    if (!Write(*p, p->answers, true, map, &did, &error))
      LosePeer(*p, error.Prefixed(Fmt("rank ", p->rank)), &refusedAtPost_, map);
  }
}

void TcpBackend::Drain() {
  ProxyWorkScope scope;
  if (streamMade_) platform_->StreamSynchronize(device_, stream_);
}

std::string TcpBackend::lastError() const {
  std::lock_guard<std::mutex> lock(errorMu_);
  return lastError_;
}

bool TcpBackend::Reaches(int32_t peer) const {
  return peer >= 0 && static_cast<size_t>(peer) < peers_.size() && peers_[peer] != nullptr;
}

void TcpBackend::Post(const NetOp& op, NetTargetMap& map) {
  if (!Reaches(op.peer) || peers_[op.peer]->lost) {
    NetCompletion c;
    c.cookie = op.cookie;
    c.peerLost = true;
    c.status = RemoteError(Reaches(op.peer) ? Fmt("rank ", op.peer, " was lost earlier: ", lastError())
                                            : Fmt("no tcp connection to rank ", op.peer));
    refusedAtPost_.push_back(c);
    return;
  }
  Peer& p = *peers_[op.peer];
  const TcpType type = op.kind == NetOpKind::kPut        ? kTcpPut
                       : op.kind == NetOpKind::kPutValue ? kTcpPutValue
                       : op.kind == NetOpKind::kSignal   ? kTcpSignal
                                                         : kTcpGet;
  Outbound o;
  o.header = TcpRequestHeader(type, ++p.lastSent);
  o.header.gdaId = op.gdaId;
  o.header.window = op.window;
  o.header.offset = op.offset;
  o.header.bytes = op.bytes;
  o.header.value = op.value;
  if (op.signal) {
    o.header.flags = kTcpHasSignal;
    o.header.signalId = op.signalId;
    o.header.signalAdd = op.signalAdd;
  }
  if (type == kTcpPut) {
    o.window = op.localWindow;
    o.offset = op.localOffset;
    o.bytes = op.bytes;
  }
  Peer::Pending pending;
  pending.seq = o.header.seq;
  pending.cookie = op.cookie;
  pending.get = type == kTcpGet;
  pending.localWindow = op.localWindow;
  pending.localOffset = op.localOffset;
  pending.bytes = op.bytes;
  pending.posted = now_;  // the last pass's clock: the bound is milliseconds
  p.pending.push_back(pending);
  p.lastPost = now_;
  // A request to a connection with nothing else on its way out leaves at once (its payload,
  // where it has one, as soon as it is out of device memory): the pass that would send it
  // is a ring drain and an epoll away.
  const bool alone = p.requests.out.empty();
  p.requests.out.push_back(std::move(o));
  Status error;
  bool did = false;
  if (alone && !Write(p, p.requests, false, map, &did, &error))
    LosePeer(p, error.Prefixed(Fmt("rank ", p.rank)), &refusedAtPost_, map);
}

bool TcpBackend::Progress(NetTargetMap& map, std::vector<NetCompletion>* done) {
  ++pass_;
  now_ = Clock::now();  // one clock read per pass serves every timestamp of it
  bool did = !refusedAtPost_.empty();
  done->insert(done->end(), refusedAtPost_.begin(), refusedAtPost_.end());
  refusedAtPost_.clear();

  // New requests leave first: whatever else this pass finds (answers to read, acks to send)
  // waits behind them, so a reply the kernel just posted is not held up by bookkeeping.
  for (auto& peer : peers_) {
    if (peer == nullptr || peer->lost || peer->requests.out.empty()) continue;
    Status error;
    if (!Write(*peer, peer->requests, false, map, &did, &error))
      LosePeer(*peer, error.Prefixed(Fmt("rank ", peer->rank)), done, map);
  }
  // Which sockets to read: with few peers every socket (TcpOptions::pollEverySocketPeers),
  // else those epoll reports.
  epoll_event events[2 * TcpOptions::kMaxPollEverySocketPeers];
  int n = 0;
  if (pollEverySocket_) {
    for (size_t q = 0; q < peers_.size(); ++q)
      if (peers_[q] != nullptr && !peers_[q]->lost)
        for (uint64_t target = 0; target < 2; ++target) events[n++].data.u64 = (uint64_t{q} << 1) | target;
  } else {
    n = epoll_wait(epoll_.get(), events, static_cast<int>(std::size(events)), 0);
  }
  bool moreInput = false;  // a socket read this pass still has bytes to act on
  for (int i = 0; i < n; ++i) {
    const size_t q = static_cast<size_t>(events[i].data.u64 >> 1);
    if (q >= peers_.size() || peers_[q] == nullptr || peers_[q]->lost) continue;
    Peer& p = *peers_[q];
    const bool target = (events[i].data.u64 & 1) != 0;
    Socket& s = target ? p.answers : p.requests;
    s.in.drained = false;  // bytes came in since (or may have: read it)
    Status error;
    if (!Read(p, s, target, map, &did, &error)) LosePeer(p, error.Prefixed(Fmt("rank ", p.rank)), done, map);
    else moreInput |= s.in.buffered() || !s.in.drained || (s.in.headerGot == kHeader && !s.in.payload);
  }
  // epoll may have had more ready sockets than the pass reads.
  if (!pollEverySocket_ && n == static_cast<int>(std::size(events))) moreInput = true;
  // A request applied just now may have the kernel post a reply at once: the rest of the
  // pass (chunks, answers, completions, liveness) waits for the next, so that the
  // proxy reads its rings first and the reply leaves from Post. Never two passes running.
  // Where the request was one a kernel waits on and every socket read was emptied, the proxy
  // gives the reply a moment (AwaitsReply); a stream of plain puts is not held up so.
  if (appliedThisPass_ && !deferredLast_) {
    deferredLast_ = true;
    awaitReply_ = answerableThisPass_ && !moreInput;
    appliedThisPass_ = answerableThisPass_ = false;
    return true;
  }
  appliedThisPass_ = answerableThisPass_ = deferredLast_ = awaitReply_ = false;
  for (auto& peer : peers_) {
    if (peer == nullptr || peer->lost) continue;
    Peer& p = *peer;
    did |= ReleaseLanded(p.requests) | ReleaseLanded(p.answers);
    // Bytes already read but not yet acted on (a header that waited, the rest of the
    // buffer): no new bytes wake epoll for them.
    Status error;
    bool alive = true;
    for (Socket* s : {&p.requests, &p.answers}) {
      const bool waiting = s->in.buffered() || (s->in.headerGot == kHeader && !s->in.payload);
      if (alive && waiting) alive = Read(p, *s, s == &p.answers, map, &did, &error);
    }
    if (alive) {
      did |= PumpAnswers(p);
      alive = Write(p, p.requests, false, map, &did, &error) && Write(p, p.answers, true, map, &did, &error);
    }
    if (!alive) {
      LosePeer(p, error.Prefixed(Fmt("rank ", p.rank)), done, map);
      continue;
    }
    error = ApplyCarriedAck(p);
    if (!error.ok()) {
      FailPeer(p, error.Prefixed(Fmt("rank ", p.rank)), done);
      continue;
    }
    did |= Complete(p, done);
    CheckAlive(p, now_, done);
  }
  return did;
}

// A peer that owes answers and has sent none for the whole bound is gone, however its
// kernel's TCP still behaves (a stopped process, a wedged host). The clock starts at the
// oldest request's post, or at its last byte sent while it is still going out, or at the
// peer's last answer; the peer's own requests do not count.
void TcpBackend::CheckAlive(Peer& p, Clock::time_point now, std::vector<NetCompletion>* done) {
  if (p.pending.empty()) return;
  const Peer::Pending& oldest = p.pending.front();
  Clock::time_point since = std::max(oldest.posted, p.lastAnswer);
  if (!p.requests.out.empty() && p.requests.out.front().header.seq <= oldest.seq) since = std::max(since, p.lastSend);
  if (now - since > std::chrono::milliseconds(options_.timeoutMs))
    FailPeer(p, Timeout(Fmt("rank ", p.rank, " answered nothing for ", options_.timeoutMs, " ms")), done);
}

bool TcpBackend::Read(Peer& p, Socket& s, bool target, NetTargetMap& map, bool* did, Status* error) {
  tcp::Inbound& in = s.in;
  size_t budget = kPassBudget;
  while (budget > 0) {
    size_t got = 0;
    if (!in.payload) {
      if (in.headerGot < kHeader) {
        *error = Take(s.fd.get(), in, reinterpret_cast<char*>(&in.header) + in.headerGot, kHeader - in.headerGot, &got);
        if (!error->ok()) return false;
        if (got == 0) return true;
        *did = true;
        if (!target) p.lastAnswer = now_;
        budget -= std::min(budget, got);
        in.headerGot += got;
        if (in.headerGot < kHeader) continue;
      }
      bool stall = false;
      *error = target ? OnRequest(p, s, map, &stall) : OnAnswer(p, s);
      if (!error->ok()) return false;
      if (stall) return true;  // the header waits, complete, until it can go on
      in.headerGot = 0;
      continue;
    }
    if (in.discard) {
      char scratch[4096];
      *error = Take(s.fd.get(), in, scratch, std::min<uint64_t>(sizeof(scratch), in.left), &got);
    } else {
      if (in.chunk < 0) {
        in.chunk = s.recvPool.Acquire();
        if (in.chunk < 0) return true;  // every chunk is still landing: read on later
        in.filled = 0;
      }
      const size_t want = std::min<uint64_t>(s.recvPool.chunkBytes() - in.filled, in.left);
      *error = Take(s.fd.get(), in, s.recvPool.host(in.chunk) + in.filled, want, &got);
    }
    if (!error->ok()) return false;
    if (got == 0) return true;
    *did = true;
    if (!target) p.lastAnswer = now_;
    budget -= std::min(budget, got);
    in.left -= got;
    if (in.discard) {
      in.done += got;
    } else {
      in.filled += got;
      if (in.filled == s.recvPool.chunkBytes() || in.left == 0) *error = LandChunk(p, s, target, map);
      if (!error->ok()) return false;
    }
    if (in.left == 0) {
      *error = FinishPayload(p, s, target, map);
      if (!error->ok()) return false;
    }
  }
  return true;
}

Status TcpBackend::LandChunk(Peer& p, Socket& s, bool target, NetTargetMap& map) {
  tcp::Inbound& in = s.in;
  uint64_t dst = 0;
  Status where = map.WindowAddress(in.window, in.offset + in.done, in.filled, &dst);
  if (where.ok()) {
    CCO_RETURN_IF_ERROR(Land(s, s.recvPool, in.chunk, dst, in.filled, &in.lastToken));
  } else {
    // The window went away while its bytes arrived: the rest is dropped, the op fails.
    s.recvPool.Release(in.chunk);
    in.discard = true;
    if (target) {
      in.refusal = kRefusedWindow;
    } else if (Peer::Pending* get = p.Find(in.header.seq)) {
      get->status = where.Prefixed(Fmt("a get from rank ", p.rank, " landing"));
    }
  }
  in.done += in.filled;
  in.chunk = -1;
  in.filled = 0;
  return Status::Ok();
}

Status TcpBackend::Land(Socket& s, StagingPool& pool, int chunk, uint64_t dst, size_t bytes, uint64_t* token) {
  CCO_RETURN_IF_ERROR(platform_->CopyOnStream(device_, stream_, dst, pool.device(chunk), bytes));
  CCO_RETURN_IF_ERROR(fence_->Mark(token));
  s.landing.push_back(Socket::Landing{&pool, chunk, *token});
  return Status::Ok();
}

bool TcpBackend::ReleaseLanded(Socket& s) {
  bool did = false;
  while (!s.landing.empty() && fence_->Passed(s.landing.front().token)) {
    s.landing.front().pool->Release(s.landing.front().chunk);
    s.landing.pop_front();
    did = true;
  }
  return did;
}

Status TcpBackend::FinishPayload(Peer& p, Socket& s, bool target, NetTargetMap& map) {
  tcp::Inbound& in = s.in;
  in.payload = false;
  in.discard = false;
  in.headerGot = 0;
  if (target) return FinishRequest(p, s, map);
  Peer::Pending* get = p.Find(in.header.seq);
  if (get == nullptr) return InternalError("a get's data without its request");
  get->done = true;
  get->token = in.lastToken;
  return Status::Ok();
}

Status TcpBackend::OnAnswer(Peer& p, Socket& s) {
  tcp::Inbound& in = s.in;
  const TcpHeader& h = in.header;
  CCO_RETURN_IF_ERROR(CheckAnswer(h, p.lastSent));
  if (h.type == kTcpAck) return AckUpTo(p, h.seq);
  if (h.type == kTcpFailed) {
    if (p.failedBecause < 0) p.failedBecause = static_cast<int32_t>(h.value);
    return Status::Ok();
  }
  // Earlier requests still open were acknowledged by acks carried on the other connection,
  // which may not have arrived yet.
  CCO_RETURN_IF_ERROR(AckUpTo(p, h.seq - 1));
  Peer::Pending* first = nullptr;  // the oldest request not yet answered
  for (auto& pending : p.pending)
    if (!pending.done) {
      first = &pending;
      break;
    }
  if (first == nullptr || first->seq != h.seq) return RemoteError(Fmt("it answered request ", h.seq, " out of order"));
  if (h.type == kTcpRefused) {
    first->done = true;
    first->status = InvalidArgument(
        Fmt("rank ", p.rank, " refused ", first->get ? "a get" : "a request", ": ", RefusalText(h.value)));
    return Status::Ok();
  }
  // kTcpGetData
  if (!first->get || h.bytes != first->bytes)
    return RemoteError(
        Fmt("it sent ", h.bytes, " bytes for request ", h.seq, ", which asked for ", first->get ? first->bytes : 0));
  if (h.bytes == 0) {
    first->done = true;
    return Status::Ok();
  }
  in.payload = true;
  in.discard = false;
  in.window = first->localWindow;
  in.offset = first->localOffset;
  in.left = h.bytes;
  in.done = 0;
  in.lastToken = 0;
  return Status::Ok();
}

// Every request up to `seq` is applied; a get among them would have been answered with data.
Status TcpBackend::AckUpTo(Peer& p, uint64_t seq, bool* advanced) {
  for (auto& pending : p.pending) {
    if (pending.seq > seq) break;
    if (pending.done) continue;
    if (pending.get) return RemoteError(Fmt("it acknowledged get ", pending.seq, " without its data"));
    pending.done = true;
    if (advanced != nullptr) *advanced = true;
  }
  return Status::Ok();
}

Status TcpBackend::ApplyCarriedAck(Peer& p) {
  if (p.carriedAck == 0) return Status::Ok();
  for (const auto& pending : p.pending) {
    if (pending.done) continue;
    if (pending.seq <= p.carriedAfter) return Status::Ok();  // its answer is still on its way
    break;
  }
  bool advanced = false;
  CCO_RETURN_IF_ERROR(AckUpTo(p, p.carriedAck, &advanced));
  p.carriedAck = p.carriedAfter = 0;
  if (advanced) p.lastAnswer = now_;  // an answer to something; a stale ack keeps nothing alive
  return Status::Ok();
}

bool TcpBackend::Write(Peer& p, Socket& s, bool target, NetTargetMap& map, bool* did, Status* error) {
  size_t budget = kPassBudget;
  while (!s.out.empty() && budget > 0) {
    Outbound& o = s.out.front();
    // Acks ride on a request without payload, on a socket not busy with payload: behind a
    // put's bytes (or in a header held back until its first chunk is out of device memory)
    // they would arrive later than bare on the idle answers socket.
    bool carried = false;
    if (!target && o.headerSent == 0 && o.bytes == 0 && now_ - s.lastPayloadSend > kPayloadQuiet) {
      HoldDueAcks(p);
      if (p.ackDue != 0) {
        o.header.flags |= kTcpHasAck;
        o.header.ackSeq = p.ackDue;
        o.header.ackAfter = p.lastOrderedAnswer;
        p.ackDue = 0;
        carried = true;
      }
    }
    // Copies out of device memory run ahead of the socket by up to the pool's chunks; the
    // window is looked up for each, so nothing is read from one deregistered meanwhile
    // (a put's bytes go out as zeros and the put fails; a get's answer fails the connection).
    while (o.staged < o.bytes) {
      const int chunk = s.sendPool.Acquire();
      if (chunk < 0) break;
      const size_t length = std::min<uint64_t>(s.sendPool.chunkBytes(), o.bytes - o.staged);
      uint64_t src = 0, token = 0;
      Status where = map.WindowAddress(o.window, o.offset + o.staged, length, &src);
      if (where.ok()) {
        *error = platform_->CopyOnStream(device_, stream_, s.sendPool.device(chunk), src, length);
        if (error->ok()) *error = fence_->Mark(&token);
        if (!error->ok()) return false;
      } else if (target) {
        // A get's answer: its header may be out already, and nothing on the wire can tell the
        // peer that part of its data is missing. The connection fails (the peer's get with
        // it) rather than the get completing with zeros.
        s.sendPool.Release(chunk);
        *error = where.Prefixed("answering a get, the window it reads");
        return false;
      } else {
        memset(s.sendPool.host(chunk), 0, length);  // the put fails (its status), its bytes still go
        if (Peer::Pending* put = p.Find(o.header.seq))
          put->status = where.Prefixed(Fmt("a put to rank ", p.rank, " reading its source"));
      }
      o.chunks.push_back(Outbound::Chunk{chunk, length, token, 0});
      o.staged += length;
      if (o.getAnswer && o.staged == o.bytes) --p.unstagedGets;  // later writes may land now
    }
    // What can go now: the rest of the header, and the front chunk once it is out of the device.
    iovec pieces[2];
    int count = 0;
    if (o.headerSent < kHeader)
      pieces[count++] = iovec{reinterpret_cast<char*>(&o.header) + o.headerSent, kHeader - o.headerSent};
    Outbound::Chunk* c = o.chunks.empty() || !fence_->Passed(o.chunks.front().token) ? nullptr : &o.chunks.front();
    if (c != nullptr) pieces[count++] = iovec{s.sendPool.host(c->index) + c->sent, c->length - c->sent};
    if (count == 0) {
      if (o.sent < o.bytes) return true;  // still on its way out of the device
      s.out.pop_front();
      continue;
    }
    size_t sent = 0;
    const bool more = o.sent + (c != nullptr ? c->length - c->sent : 0) < o.bytes;
    *error = SendSome(s.fd.get(), pieces, count, more, &sent);
    if (carried && sent == 0) {  // the socket is full: the acks go back to waiting (bare, or the next request)
      p.ackDue = o.header.ackSeq;
      o.header.flags &= static_cast<uint16_t>(~kTcpHasAck);
      o.header.ackSeq = o.header.ackAfter = 0;
    }
    if (!error->ok()) return false;
    if (sent == 0) return true;
    *did = true;
    if (!target) p.lastSend = now_;
    budget -= std::min(budget, sent);
    const size_t header = std::min(sent, kHeader - o.headerSent);
    o.headerSent += header;
    sent -= header;
    if (c != nullptr && sent > 0) {
      s.lastPayloadSend = now_;
      c->sent += sent;
      o.sent += sent;
      if (c->sent == c->length) {
        s.sendPool.Release(c->index);
        o.chunks.erase(o.chunks.begin());
      }
    }
    if (o.headerSent == kHeader && o.sent == o.bytes) s.out.pop_front();
  }
  return true;
}

bool TcpBackend::Complete(Peer& p, std::vector<NetCompletion>* done) {
  bool did = false;
  while (!p.pending.empty() && p.pending.front().done && fence_->Passed(p.pending.front().token)) {
    NetCompletion c;
    c.cookie = p.pending.front().cookie;
    c.status = p.pending.front().status;
    done->push_back(c);
    p.pending.pop_front();
    did = true;
  }
  return did;
}

void TcpBackend::LosePeer(Peer& p, const Status& why, std::vector<NetCompletion>* done, NetTargetMap& map) {
  // A peer's connections end together: what it sent before its end (a failure notice,
  // answers) is read first from both, so that a notice is not lost to which socket, read or
  // written, showed the end first.
  bool did = false;
  for (Socket* s : {&p.requests, &p.answers}) {
    Status ignored;
    s->in.drained = false;  // (a socket written when the end showed was not read this pass)
    if (s->fd.valid()) (void)Read(p, *s, s == &p.answers, map, &did, &ignored);
  }
  FailPeer(p, why, done);
}

void TcpBackend::FailPeer(Peer& p, const Status& why, std::vector<NetCompletion>* done) {
  p.lost = true;
  NoteLost(p.rank, why, p.failedBecause);
  {
    std::lock_guard<std::mutex> lock(errorMu_);
    if (lastError_.empty()) lastError_ = why.message();
  }
  for (Socket* s : {&p.requests, &p.answers}) {
    if (s->fd.valid()) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, s->fd.get(), nullptr);
    s->fd.Reset();
    s->out.clear();  // chunks the stream may still fill stay allocated until the backend goes
  }
  for (const auto& pending : p.pending) {
    NetCompletion c;
    c.cookie = pending.cookie;
    c.peerLost = true;
    c.status = RemoteError(why.message());
    done->push_back(c);
  }
  p.pending.clear();
  p.owed.clear();
  p.ackDue = p.carriedAck = p.carriedAfter = 0;
  p.unstagedGets = 0;
}

}  // namespace cco
