#include "proxy/proxy.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>

#include <algorithm>
#include <chrono>

#include "comm/communicator.h"
#include "common/env.h"

namespace cco {
namespace {

// Descriptors taken from one ring per pass, so that one busy ring cannot starve the others.
constexpr int kBurst = 32;
// A proxy that has just worked spins, because a kernel's next post usually follows within
// microseconds; one idle for a while yields the core, and one idle for long naps.
constexpr int kSpinPasses = 1024;
constexpr auto kYieldFor = std::chrono::milliseconds(20);
constexpr auto kNap = std::chrono::microseconds(20);
// After the network backend applied a request, how long the rings alone are polled for the
// kernel's answer (a ping-pong's reply: on the cpu platform it is posted 0.3-0.5 us after the
// signal lands; the pass it would otherwise wait for, an epoll and the backend's bookkeeping,
// took 2-3 us on the device machine's VM).
constexpr int64_t kReplyWaitUs = 4;
constexpr int64_t kMaxReplyWaitUs = 1000;
// How often the proxy looks for host peers that ended.
constexpr auto kWatchEvery = std::chrono::milliseconds(2);
constexpr uint64_t kWatchPasses = 64;

}  // namespace

Proxy::Proxy(ccoComm* comm)
    : comm_(comm),
      trace_(env::Flag("CCO_GDA_TRACE")),
      // env::Int gives the fallback for a negative value: only the top needs a bound.
      replyWait_(std::chrono::microseconds(
          std::min<int64_t>(env::Int("CCO_NET_REPLY_WAIT_US", kReplyWaitUs), kMaxReplyWaitUs))) {}

Proxy::~Proxy() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  net_.reset();  // its sockets and stream, before this proxy's stream
  if (streamMade_) {
    comm_->platform->StreamSynchronize(comm_->device, stream_);
    comm_->platform->StreamDestroy(comm_->device, stream_);
  }
}

Status Proxy::Attach(const std::shared_ptr<GdaResources>& g) {
  if (!streamMade_) {
    CCO_RETURN_IF_ERROR(comm_->platform->StreamCreate(comm_->device, &stream_).Prefixed("the GDA proxy's stream"));
    streamMade_ = true;
  }
  uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    attached_.push_back(g);
    target = ++generation_;  // the thread re-reads the attached lists
  }
  Status s = StartThread();
  if (!s.ok()) Detach(g.get());
  else AwaitPass(target);
  return s;
}

Status Proxy::Attach(const std::shared_ptr<SdmaResources>& s) {
  uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    attachedSdma_.push_back(s);
    target = ++generation_;
  }
  Status started = StartThread();
  if (!started.ok()) Detach(s.get());
  else AwaitPass(target);
  return started;
}

Status Proxy::StartThread() {
  if (thread_.joinable()) return Status::Ok();
  try {
    thread_ = std::thread([this] { Loop(); });
  } catch (const std::system_error& e) {
    return SystemError(Fmt("starting the proxy thread: ", e.what()));
  }
  return Status::Ok();
}

template <class T> void Proxy::Remove(std::vector<std::shared_ptr<T>>* list, const T* item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = list->begin(); it != list->end(); ++it) {
      if (it->get() == item) {
        list->erase(it);
        break;
      }
    }
  }
  Quiesce();
}

void Proxy::Detach(const GdaResources* g) {
  Remove(&attached_, g);
  if (g->netInFlight.load() == 0) return;
  WaitNetIdle(g);
  Quiesce();  // the counters and ring words the completions wrote
}

void Proxy::WaitNetIdle(const GdaResources* g) {
  const Deadline deadline = DeadlineIn(comm_->timeoutMs);
  while (g->netInFlight.load() > 0 && thread_.joinable() && !stop_) {
    if (MsLeft(deadline) <= 0) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (lastError_.empty())
          lastError_ = Fmt("ccoDevCommDestroy: ", g->netInFlight.load(), " GDA network op(s) still unanswered after ",
                           comm_->timeoutMs, " ms");
      }
      // Their completions, whenever they come, must not touch what is about to be freed.
      const_cast<GdaResources*>(g)->netAbandoned = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void Proxy::SetNet(std::shared_ptr<NetBackend> net) {
  std::lock_guard<std::mutex> lock(mu_);
  net_ = std::move(net);
  ++generation_;
}

bool Proxy::HasNet() const {
  std::lock_guard<std::mutex> lock(mu_);
  return net_ != nullptr;
}

const char* Proxy::NetName() const {
  std::lock_guard<std::mutex> lock(mu_);
  return net_ != nullptr ? net_->name() : "none";
}

void Proxy::Detach(const SdmaResources* s) {
  Remove(&attachedSdma_, s);
  for (uint64_t stream : s->streams) Synchronize(stream, "an SDMA queue's stream");
}

void Proxy::AddWindow(uint32_t id, uint64_t offset, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  windows_[id] = Window{offset, size};
}

void Proxy::RemoveWindow(uint32_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (windows_.erase(id) == 0) return;
  }
  Quiesce();  // no copy the thread queued still reads or writes the window's memory
}

void Proxy::AwaitPass(uint64_t target) {
  while (thread_.joinable() && !stop_ && seenGeneration_.load() < target) std::this_thread::yield();
}

void Proxy::Quiesce() {
  // The thread's pass in flight may still use what was removed: wait for a pass that
  // began after this, then for the work it queued.
  AwaitPass(++generation_);
  if (streamMade_) Synchronize(stream_, "the GDA proxy's stream");
  std::vector<std::shared_ptr<SdmaResources>> sdma;
  std::shared_ptr<NetBackend> net;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sdma = attachedSdma_;
    net = net_;
  }
  if (net) net->Drain();  // its copies into and out of windows too
  for (auto& s : sdma)
    for (uint64_t stream : s->streams) Synchronize(stream, "an SDMA queue's stream");
}

void Proxy::Synchronize(uint64_t stream, const char* what) {
  Status s = comm_->platform->StreamSynchronize(comm_->device, stream);
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (lastError_.empty()) lastError_ = s.Prefixed(what).message();
  }
}

Status Proxy::AsyncError() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!lastError_.empty()) return RemoteError(Fmt("the proxy: ", lastError_));
  const std::string net = net_ ? net_->lastError() : std::string();
  if (!net.empty()) return RemoteError(Fmt("the ", net_->name(), " backend: ", net));
  return Status::Ok();
}

void Proxy::Loop() {
  using Clock = std::chrono::steady_clock;
  std::vector<std::shared_ptr<GdaResources>>& work = threadWork_;
  std::vector<std::shared_ptr<SdmaResources>>& sdmaWork = threadSdma_;
  uint64_t generation = ~0ull;
  int idle = 0;
  uint64_t passes = 0;
  Clock::time_point idleSince = Clock::now();
  if (comm_->mesh) watched_ = comm_->mesh->PeerSockets();  // connected at ccoCommCreate, before any attach
  while (!stop_) {
    // The list is copied only when Attach or Detach changed it: the hot loop takes no lock.
    if (generation_.load() != generation) {
      std::lock_guard<std::mutex> lock(mu_);
      work = attached_;
      sdmaWork = attachedSdma_;
      threadNet_ = net_;
      generation = generation_.load();
    }
    // Rings first: what they hand the network backend goes out in the same iteration.
    bool did = false;
    for (auto& g : work) did |= Pass(*g);
    for (auto& s : sdmaWork) did |= Pass(*s);
    if (threadNet_) {
      did |= ProgressNet(*threadNet_);
      if (threadNet_->AwaitsReply()) AwaitReply();
    }
    // The clock is read every kWatchPasses passes only: a busy pass costs a few ring polls.
    if (++passes % kWatchPasses == 0 && Clock::now() >= nextWatch_) WatchHostPeers();
    // Resources detached before `generation` are no longer in use.
    if (seenGeneration_.load(std::memory_order_relaxed) != generation) seenGeneration_ = generation;
    if (did) {
      idle = 0;
      continue;
    }
    if (idle++ == 0) idleSince = Clock::now();
    if (idle < kSpinPasses) continue;
    if (Clock::now() - idleSince < kYieldFor) sched_yield();
    else std::this_thread::sleep_for(kNap);
  }
}

void Proxy::AwaitReply() {
  if (replyWait_.count() == 0) return;
  const auto until = std::chrono::steady_clock::now() + replyWait_;
  do {
    for (auto& g : threadWork_)
      if (Pass(*g)) return;
  } while (std::chrono::steady_clock::now() < until);
}

// One pass over a ring set: up to kBurst descriptors per ring go to issue(ring, ticket,
// desc, stream), which queues their work on streamOf(ring) through `stream` (copies that
// continue each other join: copy_queue.h); then the ring's `consumed` is written behind
// that work. A descriptor that fails stops its ring, naming peerOf(ring) and nameOf(ring);
// the work of the descriptors before it is still queued, and only then counted consumed.
template <class IssueFn, class StreamOf, class PeerOf, class NameOf>
bool Proxy::Drain(RingSet& rings, IssueFn issue, StreamOf streamOf, PeerOf peerOf, NameOf nameOf) {
  ccoComm& c = *comm_;
  bool did = false;
  for (uint32_t ring = 0; ring < rings.count; ++ring) {
    RingConsumer& consumer = rings.consumers[ring];
    CopyQueue stream(c.platform, c.device, streamOf(ring));
    for (int i = 0; i < kBurst && !consumer.failed(); ++i) {
      ccoGdaDesc d;
      uint64_t ticket;
      if (!consumer.Next(&d, &ticket)) break;
      did = true;
      bool deferred = false;
      Status s = issue(ring, ticket, d, &deferred, stream);
      if (!s.ok()) {
        Fail(rings, ring, peerOf(ring), nameOf(ring), s);
        break;
      }
      if (!deferred) consumer.Complete(ticket);  // queued: `consumed` is written behind it below
    }
    // One write per ring per pass, behind the work it vouches for (the copy held back first).
    Status s = stream.Flush();
    uint64_t consumed;
    if (s.ok() && consumer.Unpublished(&consumed)) s = stream.WriteValue64(rings.consumedAddress(ring), consumed);
    if (!s.ok()) Fail(rings, ring, peerOf(ring), nameOf(ring), s);
  }
  return did;
}

bool Proxy::Pass(GdaResources& g) {
  return Drain(
      g.rings,
      [&](uint32_t ring, uint64_t ticket, const ccoGdaDesc& d, bool* deferred, CopyQueue& stream) {
        return Issue(g, ring, ticket, d, deferred, stream);
      },
      [&](uint32_t) { return stream_; }, [&](uint32_t ring) { return g.peerRank[ring % g.peerCount]; },
      [&](uint32_t ring) { return Fmt("GDA context ", ring / g.peerCount); });
}

bool Proxy::Pass(SdmaResources& s) {
  return Drain(
      s.rings,
      [&](uint32_t ring, uint64_t ticket, const ccoGdaDesc& d, bool*, CopyQueue& stream) {
        return Issue(s, ring, ticket, d, stream);
      },
      [&](uint32_t ring) { return s.streams[ring % s.queues]; },
      [&](uint32_t ring) { return comm_->topo.lsaWorldBase + static_cast<int32_t>(ring / s.queues); },
      [&](uint32_t ring) { return Fmt("SDMA queue ", ring % s.queues); });
}

Status Proxy::Resolve(uint32_t id, uint64_t offset, uint64_t bytes, uint64_t* windowOffset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(id);
  if (it == windows_.end()) return InvalidArgument(Fmt("window id ", id, " is not a live window of this communicator"));
  if (!it->second.Holds(offset, bytes))
    return InvalidArgument(Fmt(bytes, " bytes at offset ", offset, " run past window ", id, "'s ", it->second.size, " bytes"));
  *windowOffset = it->second.offset + offset;
  return Status::Ok();
}

// A put (this rank's source, `theirs`'s destination) or a get (the other way round): both
// windows resolved and bounded, as addresses in this rank's flat range.
Status Proxy::Endpoints(const ccoGdaDesc& d, uint64_t theirs, uint64_t* dst, uint64_t* src) {
  const bool put = d.op == CCO_GDA_OP_PUT;
  uint64_t dstOffset = 0, srcOffset = 0;
  CCO_RETURN_IF_ERROR(Resolve(d.dstWindow, d.dstOffset, d.bytes, &dstOffset).Prefixed("the destination"));
  CCO_RETURN_IF_ERROR(Resolve(d.srcWindow, d.srcOffset, d.bytes, &srcOffset).Prefixed("the source"));
  *dst = (put ? theirs : comm_->MySlice()) + dstOffset;
  *src = (put ? comm_->MySlice() : theirs) + srcOffset;
  return Status::Ok();
}

// An SDMA descriptor on resolved pointers: each offset from the LSA flat base must fall in the
// slice of the rank it names (a put: the destination `peer`'s, the source this rank's; a get
// the other way round) and inside one live window there.
Status Proxy::FlatEndpoints(const ccoGdaDesc& d, int32_t peer, uint64_t* dst, uint64_t* src) {
  ccoComm& c = *comm_;
  const bool put = d.op == CCO_GDA_OP_PUT;
  struct End {
    const char* what;
    uint64_t offset;
    int32_t rank;
    uint64_t* address;
  } ends[] = {{"the destination", d.dstOffset, put ? peer : c.topo.lsaRank, dst},
              {"the source", d.srcOffset, put ? c.topo.lsaRank : peer, src}};
  std::lock_guard<std::mutex> lock(mu_);
  for (const End& e : ends) {
    const uint64_t rank = e.offset / c.stride, inSlice = e.offset % c.stride;
    if (rank != static_cast<uint64_t>(e.rank))
      return InvalidArgument(Fmt(e.what, " pointer lies in LSA rank ", rank, "'s memory, not rank ", e.rank, "'s"));
    bool inWindow = false;
    for (const auto& w : windows_)
      inWindow |= inSlice >= w.second.offset && w.second.Holds(inSlice - w.second.offset, d.bytes);
    if (!inWindow)
      return InvalidArgument(Fmt(e.what, " pointer's ", d.bytes, " bytes at offset ", inSlice, " of LSA rank ", e.rank,
                                 "'s memory are not inside one live window"));
    *e.address = c.LsaSlice(e.rank) + inSlice;
  }
  return Status::Ok();
}

namespace {

// What every GDA descriptor must satisfy, whichever backend carries it.
Status CheckGdaDesc(const GdaResources& g, const ccoGdaDesc& d) {
  switch (d.op) {
    case CCO_GDA_OP_PUT:
    case CCO_GDA_OP_GET:
    case CCO_GDA_OP_SIGNAL: break;
    case CCO_GDA_OP_PUT_VALUE:
      if (d.bytes > 8) return InvalidArgument(Fmt("put_value of ", d.bytes, " bytes (at most 8)"));
      break;
    default: return InvalidArgument(Fmt("unknown GDA operation ", static_cast<int>(d.op)));
  }
  if (d.signalOp != CCO_SIGNAL_NONE) {
    if (d.signalOp != CCO_SIGNAL_INC && d.signalOp != CCO_SIGNAL_ADD)
      return InvalidArgument(Fmt("unknown signal operation ", static_cast<int>(d.signalOp)));
    if (d.signalId >= g.signalIds) return InvalidArgument(Fmt("signal ", d.signalId, " is not below ", g.signalIds));
  }
  if ((d.flags & CCO_GDA_DESC_MARKER) && d.counterId >= g.counterWords)
    return InvalidArgument(Fmt("counter ", d.counterId, " is not below ", g.counterWords));
  return Status::Ok();
}

// The pair of windows a copy runs between: copies join only within one pair (copy_queue.h).
uint64_t WindowPair(const ccoGdaDesc& d) { return uint64_t{d.dstWindow} << 32 | d.srcWindow; }

}  // namespace

// Checks everything first, so that a descriptor the proxy refuses has no effect at all.
Status Proxy::Issue(GdaResources& g, uint32_t ring, uint64_t ticket, const ccoGdaDesc& d, bool* deferred,
                    CopyQueue& stream) {
  ccoComm& c = *comm_;
  CCO_RETURN_IF_ERROR(CheckGdaDesc(g, d));
  const int peerIndex = static_cast<int>(ring % g.peerCount);
  if (g.peerNet[peerIndex]) {
    *deferred = true;
    return IssueNet(g, ring, ticket, d);
  }
  const int32_t peer = g.peerRank[peerIndex];
  const int host = g.peerHost[peerIndex];
  if (host < 0) return Unsupported(Fmt("rank ", peer, " is on another host and no network backend serves it"));

  uint64_t dst = 0, src = 0;
  bool inlineWord = false;
  switch (d.op) {
    case CCO_GDA_OP_PUT:
    case CCO_GDA_OP_GET: CCO_RETURN_IF_ERROR(Endpoints(d, c.HostSlice(host), &dst, &src)); break;
    case CCO_GDA_OP_PUT_VALUE: {
      uint64_t dstOffset = 0;
      CCO_RETURN_IF_ERROR(Resolve(d.dstWindow, d.dstOffset, d.bytes, &dstOffset).Prefixed("the destination"));
      dst = c.HostSlice(host) + dstOffset;
      inlineWord = d.bytes == sizeof(uint64_t) && dst % sizeof(uint64_t) == 0;  // a stream write below
      if (inlineWord) break;
      // The slot's own staging word: nobody overwrites it before the copy ran.
      *g.rings.stagingWord(ring, ticket) = d.srcOffset;
      src = g.rings.stagingAddress(ring, ticket);
      break;
    }
    default: break;  // a signal alone
  }
  if (inlineWord)  // an aligned word: a stream write, no copy engine
    CCO_RETURN_IF_ERROR(stream.WriteValue64(dst, d.srcOffset));
  else if (d.op != CCO_GDA_OP_SIGNAL && d.bytes > 0)
    CCO_RETURN_IF_ERROR(stream.Copy(dst, src, d.bytes, d.op == CCO_GDA_OP_PUT_VALUE ? 0 : WindowPair(d)));
  // Behind the data on the stream: this rank's word of the target's signal, its new sum.
  uint64_t signalAddress = 0, sum = 0;
  if (d.signalOp != CCO_SIGNAL_NONE) {
    sum = g.sentTo(peerIndex, d.signalId) += d.signalOp == CCO_SIGNAL_INC ? 1 : d.signalValue;
    signalAddress = c.HostSlice(host) + g.signalOffset +
                    sizeof(uint64_t) * cco_gda_signal_word(d.signalId, c.topo.rank, c.topo.nRanks);
    CCO_RETURN_IF_ERROR(stream.WriteValue64(signalAddress, sum));
  }
  if (trace_)
    fprintf(stderr, "cco proxy rank %d: ring %u ticket %llu op %d peer %d (host %d) dst 0x%llx src 0x%llx bytes %llu, "
            "signal %u op %d: word 0x%llx = %llu\n", c.topo.rank, ring, static_cast<unsigned long long>(ticket), d.op, peer,
            host, static_cast<unsigned long long>(dst), static_cast<unsigned long long>(src),
            static_cast<unsigned long long>(d.bytes), d.signalId, d.signalOp,
            static_cast<unsigned long long>(signalAddress), static_cast<unsigned long long>(sum));
  // Everything issued before is ahead of it on the stream.
  if (d.flags & CCO_GDA_DESC_MARKER) CCO_RETURN_IF_ERROR(PassMarker(g, ring, d.counterId, stream));
  return Status::Ok();
}

// The counter counts, per context, the markers every ring of the context has passed.
Status Proxy::PassMarker(GdaResources& g, uint32_t ring, uint32_t counterId, CopyQueue& stream) {
  ccoComm& c = *comm_;
  const int context = static_cast<int>(ring / g.peerCount), peerIndex = static_cast<int>(ring % g.peerCount);
  ++g.mark(context, counterId, peerIndex);
  uint64_t total = 0;
  for (int ctx = 0; ctx < g.contexts; ++ctx) {
    uint64_t passed = g.mark(ctx, counterId, 0);
    for (int p = 1; p < g.peerCount; ++p) passed = std::min(passed, g.mark(ctx, counterId, p));
    total += passed;
  }
  return stream.WriteValue64(c.MySlice() + g.counterOffset + sizeof(uint64_t) * counterId, total);
}

// A descriptor for a rank the network backend serves: this side's memory is resolved and
// bounded here, the peer's by the peer (which refuses what it cannot honour).
Status Proxy::IssueNet(GdaResources& g, uint32_t ring, uint64_t ticket, const ccoGdaDesc& d) {
  ccoComm& c = *comm_;
  if (!threadNet_) return Unsupported("no network backend");
  const int peerIndex = static_cast<int>(ring % g.peerCount);
  NetOp op;
  op.peer = g.peerRank[peerIndex];
  op.gdaId = g.id;
  op.context = static_cast<int>(ring / g.peerCount);
  op.bytes = d.bytes;
  uint64_t localOffset = 0, theirs = 0;
  switch (d.op) {
    case CCO_GDA_OP_PUT:
    case CCO_GDA_OP_GET: {
      // A put reads this rank's source and writes the peer's destination; a get the reverse.
      const bool put = d.op == CCO_GDA_OP_PUT;
      op.kind = put ? NetOpKind::kPut : NetOpKind::kGet;
      CCO_RETURN_IF_ERROR(Resolve(d.srcWindow, d.srcOffset, d.bytes, put ? &localOffset : &theirs).Prefixed("the source"));
      CCO_RETURN_IF_ERROR(
          Resolve(d.dstWindow, d.dstOffset, d.bytes, put ? &theirs : &localOffset).Prefixed("the destination"));
      op.window = put ? d.dstWindow : d.srcWindow;
      op.offset = put ? d.dstOffset : d.srcOffset;
      op.localWindow = put ? d.srcWindow : d.dstWindow;
      op.localOffset = put ? d.srcOffset : d.dstOffset;
      break;
    }
    case CCO_GDA_OP_PUT_VALUE:
      op.kind = NetOpKind::kPutValue;
      CCO_RETURN_IF_ERROR(Resolve(d.dstWindow, d.dstOffset, d.bytes, &theirs).Prefixed("the destination"));
      if (d.bytes == 0) op.kind = NetOpKind::kSignal;  // nothing to write: the signal alone
      op.window = d.dstWindow;
      op.offset = d.dstOffset;
      op.value = d.srcOffset;
      break;
    default: op.kind = NetOpKind::kSignal; break;
  }
  op.local = c.MySlice() + localOffset;
  if (d.signalOp != CCO_SIGNAL_NONE) {
    op.signal = true;
    op.signalId = d.signalId;
    op.signalAdd = d.signalOp == CCO_SIGNAL_INC ? 1 : d.signalValue;
    op.signalWindow = g.signalWindow;
    op.signalWindowOffset =
        g.signalWindowOffset + sizeof(uint64_t) * cco_gda_signal_word(d.signalId, c.topo.rank, c.topo.nRanks);
  }
  // Nothing to write and no signal (a marker alone): an empty put, which completes in order.
  if (op.kind == NetOpKind::kSignal && !op.signal) op.kind = NetOpKind::kPut, op.bytes = 0;
  op.cookie = nextCookie_++;
  netPending_[op.cookie] = NetPending{g.shared_from_this(), ring, ticket, (d.flags & CCO_GDA_DESC_MARKER) != 0,
                                      d.counterId};
  ++g.netInFlight;
  if (trace_)
    fprintf(stderr, "cco proxy rank %d: ring %u ticket %llu op %d to rank %d over %s, window %u offset %llu bytes %llu\n",
            c.topo.rank, ring, static_cast<unsigned long long>(ticket), d.op, op.peer, threadNet_->name(), op.window,
            static_cast<unsigned long long>(op.offset), static_cast<unsigned long long>(op.bytes));
  threadNet_->Post(op, *this);
  return Status::Ok();
}

// The host words say why (posters' waits read them); the device-side mirror makes the
// direct path (device/gda_direct.hpp), which reads no host memory while a ring is idle,
// take the ring and meet the error too. The mirror is written first, at once (not behind
// the proxy's stream): whoever saw the error then finds the ring failed on the device too.
void Proxy::FailRing(RingSet& rings, uint32_t ring, ccoGdaRingError error, int32_t peer) {
  Status s = comm_->platform->WriteDeviceWord(comm_->device, rings.failedAddress(ring), 1);
  rings.consumers[ring].Fail(error, peer);
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (lastError_.empty()) lastError_ = Fmt("marking a failed ring on the device: ", s.message());
  }
}

// Every few milliseconds: a poll without reading (the mesh's own exchanges are untouched).
void Proxy::WatchHostPeers() {
  nextWatch_ = std::chrono::steady_clock::now() + kWatchEvery;
  std::vector<pollfd> fds;
  for (const auto& w : watched_) fds.push_back(pollfd{w.second, 0, 0});
  if (!fds.empty() && poll(fds.data(), fds.size(), 0) > 0) {
    for (size_t i = fds.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLHUP | POLLERR | POLLNVAL))) continue;
      deadHosts_.push_back(watched_[i].first);
      const int32_t rank = comm_->topo.hostMembers[watched_[i].first];
      FailHostPeer(watched_[i].first);  // before the error is reported: then every ring says so
      std::lock_guard<std::mutex> lock(mu_);
      if (lastError_.empty())
        lastError_ = Fmt("rank ", rank, " (a process on this host) ended: its rings fail, its signals will not come");
      watched_.erase(watched_.begin() + static_cast<long>(i));
    }
  }
  for (int host : deadHosts_) FailHostPeer(host);  // idempotent: also rings attached since
}

void Proxy::FailHostPeer(int hostIndex) {
  const ccoComm& c = *comm_;
  const int32_t rank = c.topo.hostMembers[hostIndex];
  for (auto& g : threadWork_)
    for (uint32_t ring = 0; ring < g->rings.count; ++ring) {
      const int p = static_cast<int>(ring % g->peerCount);
      if (g->peerHost[p] == hostIndex && !g->peerNet[p] && !g->rings.consumers[ring].failed())
        FailRing(g->rings, ring, CCO_GDA_RING_PEER_FAILED, rank);
    }
  const int lsaPeer = hostIndex - c.topo.lsaHostBase;
  if (lsaPeer < 0 || lsaPeer >= c.topo.lsaSize) return;
  for (auto& s : threadSdma_)
    for (uint32_t ring = 0; ring < s->rings.count; ++ring)
      if (static_cast<int>(ring / s->queues) == lsaPeer && !s->rings.consumers[ring].failed())
        FailRing(s->rings, ring, CCO_GDA_RING_PEER_FAILED, rank);
}

bool Proxy::ProgressNet(NetBackend& net) {
  netDone_.clear();
  const bool did = net.Progress(*this, &netDone_);
  for (const NetCompletion& done : netDone_) {
    auto it = netPending_.find(done.cookie);
    if (it == netPending_.end()) continue;
    NetPending p = std::move(it->second);
    netPending_.erase(it);
    if (!p.g) continue;
    GdaResources& g = *p.g;
    if (g.netAbandoned) {  // its device communicator is gone: nothing of it may be touched
      --g.netInFlight;
      continue;
    }
    const int32_t peer = g.peerRank[p.ring % g.peerCount];
    Status s = done.status;
    if (s.ok()) {
      g.rings.consumers[p.ring].Complete(p.ticket);
      if (p.marker) {
        CopyQueue stream(comm_->platform, comm_->device, stream_);  // a write alone: nothing held back
        s = PassMarker(g, p.ring, p.counterId, stream);
      }
    }
    if (!s.ok()) {
      const std::string where = Fmt("GDA context ", p.ring / g.peerCount, " over ", net.name());
      if (done.peerLost) {
        FailRing(g.rings, p.ring, CCO_GDA_RING_PEER_FAILED, peer);
        std::lock_guard<std::mutex> lock(mu_);
        if (lastError_.empty()) lastError_ = Fmt(where, ", peer rank ", peer, ": ", s.message());
      } else {
        Fail(g.rings, p.ring, peer, where, s);
      }
    }
    --g.netInFlight;
  }
  return did;
}

Status Proxy::WindowAddress(uint32_t window, uint64_t offset, uint64_t bytes, uint64_t* address) {
  uint64_t windowOffset = 0;
  CCO_RETURN_IF_ERROR(Resolve(window, offset, bytes, &windowOffset));
  *address = comm_->MySlice() + windowOffset;
  return Status::Ok();
}

Status Proxy::AddSignal(uint32_t gdaId, uint32_t signalId, int32_t sender, uint64_t add, uint64_t* address,
                        uint64_t* sum) {
  CCO_RETURN_IF_ERROR(SignalAddress(gdaId, signalId, sender, address));
  for (const auto& g : threadWork_) {
    if (g->id != gdaId) continue;
    if (g->received.empty()) return InvalidArgument("no network peers on this device communicator");
    *sum = g->received[static_cast<size_t>(signalId) * comm_->topo.nRanks + sender] += add;
    return Status::Ok();
  }
  return InvalidArgument(Fmt("no device communicator ", gdaId, " here"));
}

Status Proxy::SignalAddress(uint32_t gdaId, uint32_t signalId, int32_t sender, uint64_t* address) {
  const ccoComm& c = *comm_;
  if (sender < 0 || sender >= c.topo.nRanks) return InvalidArgument(Fmt("sender ", sender));
  for (const auto& g : threadWork_) {
    if (g->id != gdaId) continue;
    if (signalId >= g->signalIds) return InvalidArgument(Fmt("signal ", signalId, " is not below ", g->signalIds));
    *address = c.MySlice() + g->signalOffset + sizeof(uint64_t) * cco_gda_signal_word(signalId, sender, c.topo.nRanks);
    return Status::Ok();
  }
  return InvalidArgument(Fmt("no device communicator ", gdaId, " here"));
}

// An SDMA descriptor: a copy on its queue's stream, then the pool slots it counts in.
// Checks everything first, so that a descriptor the proxy refuses has no effect at all.
Status Proxy::Issue(SdmaResources& s, uint32_t ring, uint64_t ticket, const ccoGdaDesc& d, CopyQueue& stream) {
  ccoComm& c = *comm_;
  const int32_t peer = static_cast<int32_t>(ring / s.queues), queue = static_cast<int32_t>(ring % s.queues);
  if (d.op != CCO_GDA_OP_PUT && d.op != CCO_GDA_OP_GET) return InvalidArgument(Fmt("unknown SDMA operation ", int{d.op}));
  if (d.signalOp != CCO_SIGNAL_NONE && d.signalOp != CCO_SIGNAL_INC)
    return InvalidArgument(Fmt("SDMA signal operation ", int{d.signalOp}, " (only INC)"));
  const bool put = d.op == CCO_GDA_OP_PUT;
  uint64_t dst = 0, src = 0;
  CCO_RETURN_IF_ERROR((d.flags & CCO_SDMA_DESC_FLAT) ? FlatEndpoints(d, peer, &dst, &src)
                                                     : Endpoints(d, c.LsaSlice(peer), &dst, &src));
  // On the queue's stream (Drain's streamOf); pointer descriptors name no window: never joined.
  CCO_RETURN_IF_ERROR(stream.Copy(dst, src, d.bytes, (d.flags & CCO_SDMA_DESC_FLAT) ? 0 : WindowPair(d)));
  // Behind the data on the queue's stream: the counts, each in a slot only this proxy writes.
  if (put && d.signalOp == CCO_SIGNAL_INC) {
    const uint32_t theirs = cco_sdma_slot(s.lsaRank, queue, static_cast<uint32_t>(s.queues));
    CCO_RETURN_IF_ERROR(stream.WriteValue64(c.LsaSlice(peer) + s.signalOffset + 8ull * theirs, ++s.sent[ring]));
  }
  if ((!put && d.signalOp == CCO_SIGNAL_INC) || (put && (d.flags & CCO_SDMA_DESC_LOCAL)))
    CCO_RETURN_IF_ERROR(stream.WriteValue64(c.MySlice() + s.localOffset + 8ull * ring, ++s.landed[ring]));
  if (trace_)
    fprintf(stderr, "cco proxy rank %d: SDMA peer %d queue %d ticket %llu %s %llu bytes, signal %d, flags %u\n",
            c.topo.rank, peer, queue, static_cast<unsigned long long>(ticket), put ? "put" : "get",
            static_cast<unsigned long long>(d.bytes), d.signalOp, d.flags);
  return Status::Ok();
}

void Proxy::Fail(RingSet& rings, uint32_t ring, int32_t peer, const std::string& where, const Status& why) {
  FailRing(rings, ring, why.code() == ccoUnsupported ? CCO_GDA_RING_PEER_FAILED : CCO_GDA_RING_BAD_DESCRIPTOR, peer);
  std::lock_guard<std::mutex> lock(mu_);
  if (lastError_.empty()) lastError_ = Fmt(where, ", peer rank ", peer, ": ", why.message());
}

}  // namespace cco
