#include "net/tcp_backend.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "common/env.h"
#include "net/tcp_wire.h"

namespace cco {
namespace {

constexpr size_t kHeader = sizeof(TcpHeader);
// Bytes one socket moves per direction per pass, so that one busy peer cannot starve others.
constexpr size_t kPassBudget = size_t{8} << 20;
// Answers a target keeps queued for one peer before it stops reading that peer's requests.
constexpr size_t kMaxAnswers = 4096;
// put_value's unaligned bytes go through small pinned words of their own.
constexpr int kValueWords = 64;

using Clock = std::chrono::steady_clock;

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

}  // namespace

TcpOptions TcpOptionsFromEnv(int64_t timeoutMs) {
  TcpOptions o;
  o.timeoutMs = std::max<int64_t>(1, env::Int("CCO_NET_TIMEOUT_MS", timeoutMs));
  const int64_t chunk = env::Int("CCO_TCP_CHUNK_BYTES", static_cast<int64_t>(o.chunkBytes));
  o.chunkBytes = static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(chunk, 4096), 1 << 20)) & ~size_t{7};
  return o;
}

// Bytes on their way out of a socket: a header, then maybe a payload from device memory.
struct Outbound {
  struct Chunk {
    int index;
    size_t length;
    uint64_t token;  // its copy out of device memory has passed once the fence did
    size_t sent;
  };
  TcpHeader header;
  size_t headerSent = 0;
  uint64_t src = 0;     // the payload, in the flat range
  uint64_t bytes = 0;
  uint64_t staged = 0;  // payload bytes whose copy out is queued
  uint64_t sent = 0;
  std::deque<Chunk> chunks;
};

// Small reads go through a buffer, so that one recv takes a header, its payload and the next
// headers at once; a large payload is received straight into its chunks.
constexpr size_t kReadBuffer = 64 << 10;

// Bytes coming into a socket: a header, then maybe a payload for device memory.
struct Inbound {
  std::vector<char> buffer = std::vector<char>(kReadBuffer);
  size_t bufferStart = 0, bufferEnd = 0;
  bool buffered() const { return bufferStart != bufferEnd; }
  TcpHeader header;
  size_t headerGot = 0;
  bool payload = false;    // reading the payload of `header`
  bool discard = false;    // ... to drop it (a refused put)
  uint64_t dst = 0, left = 0, done = 0;
  int chunk = -1;
  size_t filled = 0;
  uint64_t lastToken = 0;  // the copy of the payload's last chunk
  // A request in progress (target side): where its signal goes, or why it was refused.
  uint64_t signalAddress = 0;
  uint64_t refusal = 0;
};

struct TcpBackend::Socket {
  Socket(Platform* p, int device, const TcpOptions& o)
      : sendPool(p, device, o.chunkBytes, o.chunks), recvPool(p, device, o.chunkBytes, o.chunks),
        values(p, device, sizeof(uint64_t), kValueWords) {}
  Fd fd;
  std::deque<Outbound> out;
  Inbound in;
  StagingPool sendPool, recvPool, values;
  struct Landing {
    StagingPool* pool;
    int chunk;
    uint64_t token;
  };
  std::deque<Landing> landing;  // chunks whose copy into device memory is queued
};

struct TcpBackend::Peer {
  Peer(int32_t r, Platform* p, int device, const TcpOptions& o) : rank(r), requests(p, device, o), answers(p, device, o) {}
  int32_t rank;
  Socket requests;  // this rank's requests out, the peer's answers in
  Socket answers;   // the peer's requests in, this rank's answers out
  bool lost = false;
  Clock::time_point lastProgress = Clock::now();  // a byte moved either way

  // Initiator: requests sent, oldest first (seq is consecutive).
  struct Pending {
    uint64_t seq, cookie;
    bool get;
    uint64_t dst, bytes;
    bool done = false;
    uint64_t token = 0;  // a get: the copy of its last bytes into device memory
    Status status;
    Clock::time_point posted;
  };
  std::deque<Pending> pending;
  uint64_t lastSent = 0;

  // Target: answers owed, in request order.
  struct Answer {
    uint64_t seq;
    uint16_t type;    // kTcpAck, kTcpGetData, kTcpRefused
    uint64_t token;   // the request's work on the stream
    uint64_t value;   // a refusal's reason
    uint64_t src, bytes;  // a get's data
    uint64_t pass = 0;    // the Progress call that queued it
  };
  std::deque<Answer> owed;
  uint64_t expectSeq = 1;

  Pending* Find(uint64_t seq) {
    if (pending.empty() || seq < pending.front().seq || seq - pending.front().seq >= pending.size()) return nullptr;
    return &pending[seq - pending.front().seq];
  }
};

TcpBackend::TcpBackend(Platform* platform, int device, const TcpOptions& options)
    : platform_(platform), device_(device), options_(options) {}

Status TcpBackend::Create(Platform* platform, int device, const TcpOptions& options, std::vector<Fd> outgoing,
                          std::vector<Fd> incoming, std::unique_ptr<TcpBackend>* out) {
  std::unique_ptr<TcpBackend> b(new TcpBackend(platform, device, options));
  CCO_RETURN_IF_ERROR(platform->StreamCreate(device, &b->stream_).Prefixed("the GDA tcp stream"));
  b->streamMade_ = true;
  b->fence_.reset(new StreamFence(platform, device, b->stream_));
  CCO_RETURN_IF_ERROR(b->fence_->Init());
  b->epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!b->epoll_.valid()) return ErrnoError("epoll_create1", errno);
  b->peers_.resize(outgoing.size());
  for (size_t q = 0; q < outgoing.size(); ++q) {
    if (!outgoing[q].valid() || q >= incoming.size() || !incoming[q].valid()) continue;
    b->peers_[q].reset(new Peer(static_cast<int32_t>(q), platform, device, options));
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
  *out = std::move(b);
  return Status::Ok();
}

TcpBackend::~TcpBackend() {
  peers_.clear();  // sockets closed; the staging memory waits for the stream below
  if (streamMade_) platform_->StreamSynchronize(device_, stream_);
  fence_.reset();
  if (streamMade_) platform_->StreamDestroy(device_, stream_);
}

std::string TcpBackend::lastError() const {
  std::lock_guard<std::mutex> lock(errorMu_);
  return lastError_;
}

bool TcpBackend::Reaches(int32_t peer) const {
  return peer >= 0 && static_cast<size_t>(peer) < peers_.size() && peers_[peer] != nullptr;
}

void TcpBackend::Post(const NetOp& op) {
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
    o.header.signalSum = op.signalSum;
  }
  if (type == kTcpPut) {
    o.src = op.local;
    o.bytes = op.bytes;
  }
  Peer::Pending pending;
  pending.seq = o.header.seq;
  pending.cookie = op.cookie;
  pending.get = type == kTcpGet;
  pending.dst = op.local;
  pending.bytes = op.bytes;
  pending.posted = Clock::now();
  p.pending.push_back(pending);
  p.requests.out.push_back(std::move(o));
}

bool TcpBackend::Progress(NetTargetMap& map, std::vector<NetCompletion>* done) {
  ++pass_;
  bool did = !refusedAtPost_.empty();
  done->insert(done->end(), refusedAtPost_.begin(), refusedAtPost_.end());
  refusedAtPost_.clear();

  epoll_event events[64];
  const int n = epoll_wait(epoll_.get(), events, 64, 0);
  for (int i = 0; i < n; ++i) {
    const size_t q = static_cast<size_t>(events[i].data.u64 >> 1);
    if (q >= peers_.size() || peers_[q] == nullptr || peers_[q]->lost) continue;
    Peer& p = *peers_[q];
    const bool target = (events[i].data.u64 & 1) != 0;
    Status error;
    bool moved = false;
    if (!Read(p, target ? p.answers : p.requests, target, map, &moved, &error))
      FailPeer(p, error.Prefixed(Fmt("rank ", p.rank)), done);
    if (moved) p.lastProgress = Clock::now();
    did |= moved;
  }
  const Clock::time_point now = Clock::now();
  for (auto& peer : peers_) {
    if (peer == nullptr || peer->lost) continue;
    Peer& p = *peer;
    bool moved = ReleaseLanded(p.requests) | ReleaseLanded(p.answers);
    // Bytes already read but not yet acted on (a header that waited for room, the rest of
    // the buffer): no new bytes wake epoll for them.
    Status error;
    bool readable = true;
    for (Socket* s : {&p.requests, &p.answers}) {
      const bool waiting = s->in.buffered() || (s->in.headerGot == kHeader && !s->in.payload);
      if (readable && waiting && !Read(p, *s, s == &p.answers, map, &moved, &error)) readable = false;
    }
    if (!readable) {
      FailPeer(p, error.Prefixed(Fmt("rank ", p.rank)), done);
      continue;
    }
    moved |= PumpAnswers(p);
    if (!Write(p.requests, &moved, &error) || !Write(p.answers, &moved, &error)) {
      FailPeer(p, error.Prefixed(Fmt("rank ", p.rank)), done);
      continue;
    }
    moved |= Complete(p, done);
    if (moved) p.lastProgress = now;
    did |= moved;
    // A peer that owes answers and has moved nothing for the whole bound is gone, however
    // its kernel's TCP still behaves (a stopped process, a wedged host).
    const auto bound = std::chrono::milliseconds(options_.timeoutMs);
    if (!p.pending.empty() && now - std::max(p.pending.front().posted, p.lastProgress) > bound)
      FailPeer(p, Timeout(Fmt("rank ", p.rank, " answered nothing for ", options_.timeoutMs, " ms")), done);
  }
  return did;
}

// Up to `want` bytes into `dst`: from the buffer, else from the socket (0: nothing there).
Status Take(int fd, Inbound& in, char* dst, size_t want, size_t* got) {
  if (!in.buffered()) {
    if (want >= kReadBuffer) return RecvSome(fd, dst, want, got);
    in.bufferStart = in.bufferEnd = 0;
    CCO_RETURN_IF_ERROR(RecvSome(fd, in.buffer.data(), kReadBuffer, &in.bufferEnd));
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

bool TcpBackend::Read(Peer& p, Socket& s, bool target, NetTargetMap& map, bool* did, Status* error) {
  Inbound& in = s.in;
  size_t budget = kPassBudget;
  while (budget > 0) {
    size_t got = 0;
    if (!in.payload) {
      if (in.headerGot < kHeader) {
        *error = Take(s.fd.get(), in, reinterpret_cast<char*>(&in.header) + in.headerGot, kHeader - in.headerGot, &got);
        if (!error->ok()) return false;
        if (got == 0) return true;
        *did = true;
        budget -= std::min(budget, got);
        in.headerGot += got;
        if (in.headerGot < kHeader) continue;
      }
      bool stall = false;
      *error = target ? OnRequest(p, s, map, &stall) : OnAnswer(p, s);
      if (!error->ok()) return false;
      if (stall) return true;  // the header waits, complete, until there is room
      in.headerGot = 0;
      continue;
    }
    if (in.discard) {
      char scratch[4096];
      *error = Take(s.fd.get(), in, scratch, std::min<uint64_t>(sizeof(scratch), in.left), &got);
    } else {
      if (in.chunk < 0) {
        in.chunk = s.recvPool.Acquire(error);
        if (!error->ok()) return false;
        if (in.chunk < 0) return true;  // every chunk is still landing: read on later
        in.filled = 0;
      }
      const size_t want = std::min<uint64_t>(s.recvPool.chunkBytes() - in.filled, in.left);
      *error = Take(s.fd.get(), in, s.recvPool.host(in.chunk) + in.filled, want, &got);
    }
    if (!error->ok()) return false;
    if (got == 0) return true;
    *did = true;
    budget -= std::min(budget, got);
    in.left -= got;
    if (!in.discard) {
      in.filled += got;
      if (in.filled == s.recvPool.chunkBytes() || in.left == 0) {
        *error = Land(s, s.recvPool, in.chunk, in.dst + in.done, in.filled, &in.lastToken);
        if (!error->ok()) return false;
        in.done += in.filled;
        in.chunk = -1;
      }
    }
    if (in.left == 0) {
      *error = FinishPayload(p, s, target);
      if (!error->ok()) return false;
    }
  }
  return true;
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

Status TcpBackend::OnRequest(Peer& p, Socket& s, NetTargetMap& map, bool* stall) {
  Inbound& in = s.in;
  const TcpHeader& h = in.header;
  if (p.owed.size() >= kMaxAnswers) {  // the peer does not read its answers: stop reading its requests
    *stall = true;
    return Status::Ok();
  }
  CCO_RETURN_IF_ERROR(CheckRequest(h, p.expectSeq));
  in.refusal = 0;
  in.signalAddress = 0;
  if ((h.flags & kTcpHasSignal) && !map.SignalAddress(h.gdaId, h.signalId, p.rank, &in.signalAddress).ok())
    in.refusal = kRefusedSignal;
  uint64_t address = 0;
  const bool writes = h.type != kTcpSignal && !(h.type == kTcpPut && h.bytes == 0);  // an empty put touches nothing
  if (writes && !map.WindowAddress(h.window, h.offset, h.bytes, &address).ok()) in.refusal = kRefusedWindow;

  if (h.type == kTcpGet) {
    ++p.expectSeq;
    p.owed.push_back(in.refusal ? Peer::Answer{h.seq, kTcpRefused, 0, in.refusal, 0, 0, pass_}
                                : Peer::Answer{h.seq, kTcpGetData, 0, 0, address, h.bytes, pass_});
    return Status::Ok();
  }
  if (h.type == kTcpPutValue && in.refusal == 0) {
    if (h.bytes == sizeof(uint64_t) && address % sizeof(uint64_t) == 0) {
      CCO_RETURN_IF_ERROR(platform_->StreamWriteValue64(device_, stream_, address, h.value));
    } else {
      Status error;
      const int word = s.values.Acquire(&error);
      CCO_RETURN_IF_ERROR(error);
      if (word < 0) {  // every word is still landing
        *stall = true;
        return Status::Ok();
      }
      memcpy(s.values.host(word), &h.value, sizeof(h.value));
      uint64_t token = 0;
      CCO_RETURN_IF_ERROR(Land(s, s.values, word, address, h.bytes, &token));
    }
  }
  ++p.expectSeq;
  if (h.type == kTcpPut && h.bytes > 0) {
    in.payload = true;
    in.discard = in.refusal != 0;
    in.dst = address;
    in.left = h.bytes;
    in.done = 0;
    return Status::Ok();
  }
  return FinishRequest(p, s);
}

// A request's data is queued: its signal goes behind it, then the acknowledgement waits for both.
Status TcpBackend::FinishRequest(Peer& p, Socket& s) {
  Inbound& in = s.in;
  if (in.refusal != 0) {
    p.owed.push_back(Peer::Answer{in.header.seq, kTcpRefused, 0, in.refusal, 0, 0, pass_});
    return Status::Ok();
  }
  if (in.header.flags & kTcpHasSignal)
    CCO_RETURN_IF_ERROR(platform_->StreamWriteValue64(device_, stream_, in.signalAddress, in.header.signalSum));
  uint64_t token = 0;
  CCO_RETURN_IF_ERROR(fence_->Mark(&token));
  p.owed.push_back(Peer::Answer{in.header.seq, kTcpAck, token, 0, 0, 0, pass_});
  return Status::Ok();
}

Status TcpBackend::FinishPayload(Peer& p, Socket& s, bool target) {
  Inbound& in = s.in;
  in.payload = false;
  in.discard = false;
  in.headerGot = 0;
  if (target) return FinishRequest(p, s);
  Peer::Pending* get = p.Find(in.header.seq);
  if (get == nullptr) return InternalError("a get's data without its request");
  get->done = true;
  get->token = in.lastToken;
  return Status::Ok();
}

Status TcpBackend::OnAnswer(Peer& p, Socket& s) {
  Inbound& in = s.in;
  const TcpHeader& h = in.header;
  CCO_RETURN_IF_ERROR(CheckAnswer(h, p.lastSent));
  Peer::Pending* first = nullptr;  // the oldest request not yet answered
  for (auto& pending : p.pending)
    if (!pending.done) {
      first = &pending;
      break;
    }
  if (h.type == kTcpAck) {
    // Everything up to h.seq is applied; a get among it would have been answered with data.
    for (auto& pending : p.pending) {
      if (pending.seq > h.seq || pending.done) continue;
      if (pending.get) return RemoteError(Fmt("it acknowledged get ", pending.seq, " without its data"));
      pending.done = true;
    }
    return Status::Ok();
  }
  if (first == nullptr || first->seq != h.seq)
    return RemoteError(Fmt("it answered request ", h.seq, " out of order"));
  if (h.type == kTcpRefused) {
    first->done = true;
    first->status = InvalidArgument(Fmt("rank ", p.rank, " refused ", first->get ? "a get" : "a request", ": ",
                                        RefusalText(h.value)));
    return Status::Ok();
  }
  // kTcpGetData
  if (!first->get || h.bytes != first->bytes)
    return RemoteError(Fmt("it sent ", h.bytes, " bytes for request ", h.seq, ", which asked for ",
                           first->get ? first->bytes : 0));
  if (h.bytes == 0) {
    first->done = true;
    return Status::Ok();
  }
  in.payload = true;
  in.discard = false;
  in.dst = first->dst;
  in.left = h.bytes;
  in.done = 0;
  in.lastToken = 0;
  return Status::Ok();
}

bool TcpBackend::PumpAnswers(Peer& p) {
  bool did = false;
  uint64_t ack = 0;
  auto flushAck = [&] {
    if (ack == 0) return;
    Outbound o;
    o.header = TcpAnswerHeader(kTcpAck, ack);
    p.answers.out.push_back(o);
    ack = 0;
  };
  // An ack waits one pass: the proxy's rings are drained in between, so a request the
  // target's kernel makes on seeing the signal (a reply) leaves before the ack, which only
  // gives the sender credit back. Gets and refusals go at once.
  while (!p.owed.empty() && fence_->Passed(p.owed.front().token) &&
         (p.owed.front().type != kTcpAck || p.owed.front().pass < pass_)) {
    const Peer::Answer a = p.owed.front();
    p.owed.pop_front();
    did = true;
    if (a.type == kTcpAck) {
      ack = a.seq;
      continue;
    }
    flushAck();
    Outbound o;
    o.header = TcpAnswerHeader(static_cast<TcpType>(a.type), a.seq);
    if (a.type == kTcpRefused) o.header.value = a.value;
    if (a.type == kTcpGetData) {
      o.header.bytes = a.bytes;
      o.src = a.src;
      o.bytes = a.bytes;
    }
    p.answers.out.push_back(o);
  }
  flushAck();
  return did;
}

bool TcpBackend::Write(Socket& s, bool* did, Status* error) {
  size_t budget = kPassBudget;
  while (!s.out.empty() && budget > 0) {
    Outbound& o = s.out.front();
    // Copies out of device memory run ahead of the socket by up to the pool's chunks.
    while (o.staged < o.bytes) {
      const int chunk = s.sendPool.Acquire(error);
      if (!error->ok()) return false;
      if (chunk < 0) break;
      const size_t length = std::min<uint64_t>(s.sendPool.chunkBytes(), o.bytes - o.staged);
      uint64_t token = 0;
      *error = platform_->CopyOnStream(device_, stream_, s.sendPool.device(chunk), o.src + o.staged, length);
      if (error->ok()) *error = fence_->Mark(&token);
      if (!error->ok()) return false;
      o.chunks.push_back(Outbound::Chunk{chunk, length, token, 0});
      o.staged += length;
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
    if (!error->ok()) return false;
    if (sent == 0) return true;
    *did = true;
    budget -= std::min(budget, sent);
    const size_t header = std::min(sent, kHeader - o.headerSent);
    o.headerSent += header;
    sent -= header;
    if (c != nullptr && sent > 0) {
      c->sent += sent;
      o.sent += sent;
      if (c->sent == c->length) {
        s.sendPool.Release(c->index);
        o.chunks.pop_front();
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

void TcpBackend::FailPeer(Peer& p, const Status& why, std::vector<NetCompletion>* done) {
  p.lost = true;
  {
    std::lock_guard<std::mutex> lock(errorMu_);
    if (lastError_.empty()) lastError_ = why.message();
  }
  for (Socket* s : {&p.requests, &p.answers}) {
    if (s->fd.valid()) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, s->fd.get(), nullptr);
    s->fd.Reset();
    s->out.clear();  // chunks still being filled by the stream stay allocated until the backend goes
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
}

}  // namespace cco
