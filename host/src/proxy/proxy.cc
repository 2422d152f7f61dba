// SPDX-License-Identifier: MIT
#include "proxy/proxy.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>

#include "common/env.h"
#include "platform/proxy_scope.h"
#include "proxy/host_bell.h"
#include "topology/cpu_affinity.h"

namespace cco {
namespace {

// Descriptors taken from one ring per pass, so that one busy ring cannot starve the others.
constexpr int kBurst = 32;
// A proxy that has just worked spins, because a kernel's next post usually follows within
// microseconds. Where the process has cores to spare it goes on spinning (yielding) for a
// while before it naps; where it has few, the threads it would spin against are the ones it
// waits for (a kernel's rank, the peer's proxy, on a 2-core machine), so it naps at once.
constexpr int kSpinPasses = 1024;
constexpr auto kYieldFor = std::chrono::milliseconds(20);
constexpr int kCpusToKeepSpinning = 8;
// A nap: the network's input ends it sooner (NetBackend::InputFd). The thread's timer slack
// is 1 us, not Linux's 50 us, so that the nap is the length asked for.
constexpr auto kNap = std::chrono::microseconds(20);
// Where the kernels' doorbells end a nap too (the cpu platform), only what nothing announces
// waits for its end: the host peers' watch, the network backend's timers.
constexpr auto kLongNap = std::chrono::milliseconds(1);
constexpr unsigned long kTimerSlackNs = 1000;
// How long after a waiting device thread read the network's input (HelpWait, HelpNap) the
// thread's naps leave that input to the waits: what comes in once no wait reads it waits this
// long at most. As long as a nap: a shorter window (200 us was measured) has the thread take the
// input back between a ping-pong's waits on 2 cores, and its round trip doubles in one run of three.
constexpr auto kHelperReadsFor = kLongNap;
// CCO_TEST_PROXY_NAP_MS's bound: a test lengthens the long naps past its waits' timeouts, so
// that a doorbell the thread misses fails the test instead of costing a nap.
constexpr int64_t kMaxTestNapMs = 60000;

// kLongNap, or CCO_TEST_PROXY_NAP_MS where a test sets it.
std::chrono::nanoseconds LongNap() {
  const int64_t testMs = std::min<int64_t>(env::Int("CCO_TEST_PROXY_NAP_MS", 0), kMaxTestNapMs);
  return testMs > 0 ? std::chrono::nanoseconds(std::chrono::milliseconds(testMs)) : std::chrono::nanoseconds(kLongNap);
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// After the network backend applied a request, how long the rings alone are polled for the
// kernel's answer: a ping-pong's reply is usually posted sooner after its signal lands than a
// whole pass (an epoll and the backend's bookkeeping) would come back to the rings.
constexpr int64_t kReplyWaitUs = 4;
constexpr int64_t kMaxReplyWaitUs = 1000;
// How many passes go by between looks at the clock for the host peers' watch.
constexpr uint64_t kWatchPasses = 64;
// CCO_TEST_LOSS_PAUSE_MS's bound.
constexpr int64_t kMaxLossPauseMs = 1000;

}  // namespace

Proxy::Proxy(ProxyContext context)
    : ctx_(std::move(context)),
      trace_(env::Flag("CCO_GDA_TRACE")),
      // env::Int gives the fallback for a negative value: only the top needs a bound.
      replyWait_(std::chrono::microseconds(
          std::min<int64_t>(env::Int("CCO_NET_REPLY_WAIT_US", kReplyWaitUs), kMaxReplyWaitUs))),
      lossPause_(std::chrono::milliseconds(std::min<int64_t>(env::Int("CCO_TEST_LOSS_PAUSE_MS", 0), kMaxLossPauseMs))),
      longNap_(LongNap()),
      wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      doorbellsWake_(wake_ >= 0 && ctx_.bells) {
  if (ctx_.bells && ctx_.statusWords)
    for (uint64_t slice : ctx_.hostSlices) bells_.push_back(BellAddress(slice, ctx_.statusOffset));
  gate_ = std::make_shared<HelpGate>();
  gate_->proxy = this;
  PublishHelpGate(OwnBell(), doorbellsWake_ ? wake_ : -1, gate_);
}

void Proxy::RingBells() const {
  for (uint64_t bell : bells_) RingHostBell(bell);
}

void Proxy::RingOwnBell() const {
  if (OwnBell() != 0) RingHostBell(OwnBell());
}

uint64_t Proxy::OwnBell() const { return bells_.empty() ? 0 : bells_[ctx_.topo.hostRank]; }

Proxy::~Proxy() {
  WithdrawHelpGate(OwnBell(), doorbellsWake_ ? wake_ : -1);
  {
    std::lock_guard<std::mutex> pass(gate_->mu);  // waits out a helper's pass; none comes after
    gate_->proxy = nullptr;
  }
  stop_ = true;
  Wake();
  if (thread_.joinable()) thread_.join();
  if (wake_ >= 0) close(wake_);
  ProxyWorkScope scope;  // the streams are the proxy's (platform/proxy_scope.h)
  net_.reset();          // its sockets and stream, before this proxy's stream
  if (streamMade_) {
    ctx_.platform->StreamSynchronize(ctx_.device, stream_);
    ctx_.platform->StreamDestroy(ctx_.device, stream_);
  }
  tail_.reset();
  if (tailWord_ != nullptr) ctx_.platform->HostMappedFree(ctx_.device, tailWord_);
  for (uint64_t stream : queueStreams_) {
    ctx_.platform->StreamSynchronize(ctx_.device, stream);
    ctx_.platform->StreamDestroy(ctx_.device, stream);
  }
}

Status Proxy::QueueStreams(int queues, std::vector<uint64_t>* streams) {
  ProxyWorkScope scope;
  std::lock_guard<std::mutex> lock(queueStreamsMu_);
  while (static_cast<int>(queueStreams_.size()) < queues) {
    uint64_t stream = 0;
    CCO_RETURN_IF_ERROR(ctx_.platform->StreamCreate(ctx_.device, &stream)
                            .Prefixed(Fmt("SDMA queue ", queueStreams_.size(), "'s stream")));
    queueStreams_.push_back(stream);
  }
  streams->assign(queueStreams_.begin(), queueStreams_.begin() + queues);
  return Status::Ok();
}

Status Proxy::Attach(const std::shared_ptr<GdaResources>& g) {
  if (!streamMade_) {
    ProxyWorkScope scope;
    CCO_RETURN_IF_ERROR(ctx_.platform->StreamCreate(ctx_.device, &stream_).Prefixed("the GDA proxy's stream"));
    streamMade_ = true;
    // Without its marker word, every word goes on the stream, as it always may.
    uint64_t device = 0;
    if (ctx_.platform->HostMappedAlloc(ctx_.device, sizeof(uint64_t), &tailWord_, &device).ok())
      tail_.reset(new StreamTail(static_cast<const uint64_t*>(tailWord_), device));
    else tailWord_ = nullptr;
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
    thread_ = std::thread([this] {
      // For as long as this thread runs, this rank's liveness word is held: killed, the kernel
      // marks it at once, and host peers see the death before this process's sockets close.
      const bool held = ctx_.liveness != nullptr && ctx_.liveness->Hold();
      Loop();
      if (held) ctx_.liveness->LetGo();
    });
  } catch (const std::system_error& e) {
    return SystemError(Fmt("starting the proxy thread: ", e.what()));
  }
  return Status::Ok();
}

Status Proxy::Watch() {
  if (ctx_.peerSockets.empty()) return Status::Ok();  // no host peer in another process
  return StartThread();
}

void Proxy::Wake() {
  if (wake_ < 0) return;
  const uint64_t one = 1;
  (void)!write(wake_, &one, sizeof(one));  // a full counter wakes the thread all the same
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

void Proxy::SetNet(std::shared_ptr<NetBackend> net) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    net_ = std::move(net);
    ++generation_;
  }
  Wake();
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

void Proxy::AwaitPass(uint64_t target) {
  Wake();
  while (thread_.joinable() && !stop_ && seenGeneration_.load() < target) std::this_thread::yield();
}

void Proxy::Quiesce() {
  // The thread's pass in flight may still use what was removed: wait for a pass that
  // began after this, then for the work it queued.
  AwaitPass(++generation_);
  if (streamMade_) Synchronize(stream_, "the GDA proxy's stream");
  std::shared_ptr<NetBackend> net;
  {
    std::lock_guard<std::mutex> lock(mu_);
    net = net_;
  }
  if (net) net->Drain();  // its copies into and out of windows too
  std::vector<uint64_t> queues;
  {
    std::lock_guard<std::mutex> lock(queueStreamsMu_);
    queues = queueStreams_;
  }
  for (uint64_t stream : queues) Synchronize(stream, "an SDMA queue's stream");
}

void Proxy::Synchronize(uint64_t stream, const char* what) {
  ProxyWorkScope scope;
  Status s = ctx_.platform->StreamSynchronize(ctx_.device, stream);
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (lastError_.empty()) lastError_ = s.Prefixed(what).message();
  }
}

Status Proxy::AsyncError() const {
  std::lock_guard<std::mutex> loss(lossMu_);  // a loss being handled: its rings fail first
  std::lock_guard<std::mutex> lock(mu_);
  // Not the network backend's own first error: every failure it meets is a peer it lost, which
  // this thread turns into the verdict (naming the rank at fault) in the same pass; read
  // before that, it could name a rank that only followed the death.
  if (!lastError_.empty()) return RemoteError(Fmt("the proxy: ", lastError_));
  return Status::Ok();
}

void Proxy::Loop() {
  ProxyWorkScope scope;  // every stream call of the thread in the proxy's own context
  using Clock = std::chrono::steady_clock;
  std::vector<std::shared_ptr<GdaResources>>& work = threadWork_;
  std::vector<std::shared_ptr<SdmaResources>>& sdmaWork = threadSdma_;
  uint64_t generation = ~0ull;
  int idle = 0;
  uint64_t passes = 0;
  Clock::time_point idleSince = Clock::now();
  watched_ = ctx_.peerSockets;
  CpuList cpus;  // where it cannot be read, nap: the cautious choice
  const bool spinsLong = GetThreadCpus(&cpus).ok() && static_cast<int>(cpus.size()) >= kCpusToKeepSpinning;
  prctl(PR_SET_TIMERSLACK, kTimerSlackNs, 0, 0, 0);  // this thread's
  while (!stop_) {
    // A pass holds the gate (a waiting device thread may make one itself: Help). Where one does,
    // the thread stands aside rather than queue behind it: a queued thread is woken at the
    // helper's release to redo the pass just made, on a core the helper's peer may need.
    std::unique_lock<std::mutex> pass(gate_->mu, std::try_to_lock);
    if (!pass.owns_lock()) {
      if (generation_.load() == generation) {
        StandAside();
        continue;
      }
      pass.lock();  // Attach or Detach waits for this thread's pass (helpers do not nap meanwhile)
    }
    // The list is copied only when Attach or Detach changed it: the hot loop takes no other lock.
    if (generation_.load() != generation) {
      std::lock_guard<std::mutex> lock(mu_);
      work = attached_;
      sdmaWork = attachedSdma_;
      threadNet_ = net_;
      generation = generation_.load();
      if (doorbellsWake_) ForEachConsumer([&](RingConsumer& c) { c.WakeBy(wake_); });
    }
    // Rings first: what they hand the network backend goes out in the same iteration.
    bool did = PassAll();
    if (threadNet_) did |= ProgressNet(*threadNet_);  // with the peers it lost
    if (did) RingBells();                             // before the reply's wait: the kernel that replies may sleep
    // Spinning for the reply pays where the peer runs on another core; on a few cores it
    // holds the one the reply needs (one CPU shared by both ranks: 22 us a round trip with
    // the wait, 18 without; two: the same).
    if (spinsLong && threadNet_ && threadNet_->AwaitsReply()) AwaitReply();
    // The clock is read every kWatchPasses passes only: a busy pass costs a few ring polls.
    if (++passes % kWatchPasses == 0 && Clock::now() >= nextWatch_) WatchHostPeers();
    // Resources detached before `generation` are no longer in use.
    if (seenGeneration_.load(std::memory_order_relaxed) != generation) seenGeneration_ = generation;
    pass.unlock();
    if (did) {
      idle = 0;
      continue;
    }
    // Nothing to serve but the watch: no kernel's post can come, so wait on the sockets.
    if (work.empty() && sdmaWork.empty() && !threadNet_) {
      IdleWait();
      std::lock_guard<std::mutex> watch(gate_->mu);
      WatchHostPeers();
      continue;
    }
    if (idle++ == 0) idleSince = Clock::now();
    const auto idleFor = Clock::now() - idleSince;
    if (spinsLong) {
      if (idle < kSpinPasses) continue;
      if (idleFor < kYieldFor) {
        sched_yield();
        continue;
      }
    }
    Nap();
  }
}

bool Proxy::Help() {
  if (stop_) return false;
  bool did = PassAll();
  if (threadNet_) did |= ProgressNet(*threadNet_);
  if (did) RingBells();
  return did;
}

bool Proxy::HelpWait() {
  // A wait that passes reads the input: the thread sleeping on it too would be woken by each
  // reply only to hand it on (one CPU shared by two ranks: a switch more and 5 us a hop).
  if (threadNet_) helperReadAt_.store(SteadyNs(), std::memory_order_relaxed);
  return Help();
}

bool Proxy::HelpNap(const void* bell, uint32_t seen, long boundNs) {
  const int input = threadNet_ ? threadNet_->InputFd() : -1;
  // Not while Attach or Detach waits for the thread's next pass: the thread needs the gate.
  if (stop_ || input < 0 || seenGeneration_.load() != generation_.load()) return false;
  const ccoHostBell* b = static_cast<const ccoHostBell*>(bell);
  if (__atomic_load_n(&b->rings, __ATOMIC_SEQ_CST) != seen) return false;
  helperReadAt_.store(SteadyNs(), std::memory_order_relaxed);
  SleepOn(input, boundNs);
  (void)Help();
  return true;
}

void Proxy::StandAside() {
  // Asleep first: a doorbell from here on makes its pass or writes wake_. One rung before is in
  // a ring the helper may have passed already: the thread takes the gate for a last look, or
  // the holder finds threadAside after its release and makes that pass (help_gate.cc).
  if (doorbellsWake_) SetAsleep(true);
  gate_->threadAside.store(true);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::unique_lock<std::mutex> pass(gate_->mu, std::try_to_lock);
  if (!pass.owns_lock()) {
    // The helper reads the network's input (HelpWait, HelpNap): the thread sleeps on wake_ alone,
    // no longer than the input is left to waits (input that comes once they stop waits that long).
    const std::chrono::nanoseconds bound =
        doorbellsWake_ ? std::min<std::chrono::nanoseconds>(longNap_, kHelperReadsFor) : kNap;
    SleepOn(-1, bound.count());
  }
  gate_->threadAside.store(false);
  if (doorbellsWake_) SetAsleep(false);
}

void Proxy::Nap() {
  if (doorbellsWake_) {
    // Asleep first, then a last look at the rings: a doorbell after that look finds the
    // thread asleep and writes wake_ (device/arch/host.h).
    std::unique_lock<std::mutex> pass(gate_->mu);
    SetAsleep(true);
    if (PassAll()) {
      SetAsleep(false);
      RingBells();
      return;
    }
  }
  // A waiting device thread that read the input lately (HelpWait, HelpNap) will again: the reply
  // it waits for wakes it alone, and the nap ends when the input would be the thread's again.
  int64_t napNs = (doorbellsWake_ ? longNap_ : std::chrono::nanoseconds(kNap)).count();
  const int64_t windowNs = std::chrono::nanoseconds(kHelperReadsFor).count();
  const int64_t sinceHelper = SteadyNs() - helperReadAt_.load(std::memory_order_relaxed);
  const bool helperReads = sinceHelper < windowNs;
  if (helperReads) napNs = std::min(napNs, windowNs - sinceHelper);
  SleepOn(threadNet_ && !helperReads ? threadNet_->InputFd() : -1, napNs);
  if (doorbellsWake_) SetAsleep(false);
}

void Proxy::SleepOn(int input, int64_t ns) const {
  pollfd fds[2];
  nfds_t count = 0;
  if (input >= 0) fds[count++] = pollfd{input, POLLIN, 0};
  if (wake_ >= 0) fds[count++] = pollfd{wake_, POLLIN, 0};
  const timespec bound{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  (void)ppoll(fds, count, &bound, nullptr);
  if (wake_ >= 0 && (fds[count - 1].revents & POLLIN)) DrainWake();  // wake_ is the last one polled
}

void Proxy::DrainWake() const {
  uint64_t rung = 0;
  (void)!read(wake_, &rung, sizeof(rung));
}

void Proxy::SetAsleep(bool asleep) {
  ForEachConsumer([&](RingConsumer& c) { c.Asleep(asleep); });
}

bool Proxy::PassAll() {
  bool did = false;
  for (auto& g : threadWork_) did |= Pass(*g);
  for (auto& s : threadSdma_) did |= Pass(*s);
  return did;
}

template <class Fn> void Proxy::ForEachConsumer(Fn fn) {
  for (auto& g : threadWork_)
    for (RingConsumer& c : g->rings.consumers) fn(c);
  for (auto& s : threadSdma_)
    for (RingConsumer& c : s->rings.consumers) fn(c);
}

void Proxy::AwaitReply() {
  if (replyWait_.count() == 0) return;
  const auto until = std::chrono::steady_clock::now() + replyWait_;
  do {
    for (auto& g : threadWork_)
      if (Pass(*g)) {
        RingBells();
        return;
      }
  } while (std::chrono::steady_clock::now() < until);
}

// One pass over a ring set: up to kBurst descriptors per ring go to issue(ring, ticket,
// desc, stream), which queues their work on streamOf(ring) through `stream` (copies that
// continue each other join: copy_queue.h); then the ring's `consumed` is written behind
// that work. A descriptor that fails stops its ring, naming peerOf(ring) and nameOf(ring);
// the work of the descriptors before it is still queued, and only then counted consumed.
template <class IssueFn, class StreamOf, class PeerOf, class NameOf>
bool Proxy::Drain(RingSet& rings, IssueFn issue, StreamOf streamOf, PeerOf peerOf, NameOf nameOf, StreamTail* tail) {
  const ProxyContext& c = ctx_;
  RingTrace* trace = rings.trace.get();  // the device communicator traces (trace_stamps.h)
  if (trace) trace->Tick();
  bool did = false;
  for (uint32_t ring = 0; ring < rings.count; ++ring) {
    RingConsumer& consumer = rings.consumers[ring];
    ccoGdaDesc d;
    uint64_t ticket;
    bool have = !consumer.failed() && consumer.Next(&d, &ticket);
    // An idle ring (nothing to take, nothing to publish) costs the look alone, no queue made
    // and flushed: most rings are idle at most passes, and a pass is what a spinning proxy
    // takes to see the next post (on a core shared with the peer, what it keeps from it).
    if (!have && !consumer.HasUnpublished()) {
      if (trace) trace->Poll(ring, rings.hostWords(ring));
      continue;
    }
    CopyQueue stream(c.platform, c.device, streamOf(ring), tail);
    for (int i = 0; have; have = ++i < kBurst && !consumer.failed() && consumer.Next(&d, &ticket)) {
      did = true;
      const uint64_t taken = trace && d.traceRecord ? TraceNow() : 0;
      bool deferred = false;
      Status s = issue(ring, ticket, d, &deferred, stream);
      if (!s.ok()) {
        Fail(rings, ring, peerOf(ring), nameOf(ring), s);
        break;
      }
      if (taken) trace->Queued(ring, ticket, d.traceRecord, taken);
      if (!deferred) consumer.Complete(ticket);  // queued: `consumed` is written behind it below
    }
    // One write per ring per pass, behind the work it vouches for (the copy held back first, the
    // words written before it in the same submission), with the tail's marker after it; a CPU
    // store where nothing queued before it still runs.
    Status s;
    uint64_t consumed;
    if (consumer.Unpublished(&consumed)) {
      if (stream.Idle() && !rings.mirrorConsumed) {
        consumer.StoreConsumed(consumed);
      } else {
        s = stream.WriteValue64(rings.consumedAddress(ring), consumed);
        // Posters of a mirrored ring read only this copy, and nothing else raises it.
        if (s.ok() && rings.mirrorConsumed) s = stream.WriteValue64(rings.consumedCacheAddress(ring), consumed);
        if (s.ok()) s = stream.Mark();
      }
    }
    if (s.ok()) s = stream.Flush();
    if (!s.ok()) Fail(rings, ring, peerOf(ring), nameOf(ring), s);
    if (trace) trace->Poll(ring, rings.hostWords(ring));
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
      [&](uint32_t ring) { return Fmt("GDA context ", ring / g.peerCount); }, tail_.get());
}

bool Proxy::Pass(SdmaResources& s) {
  return Drain(
      s.rings,
      [&](uint32_t ring, uint64_t ticket, const ccoGdaDesc& d, bool*, CopyQueue& stream) {
        return Issue(s, ring, ticket, d, stream);
      },
      [&](uint32_t ring) { return s.streams[ring % s.queues]; },
      [&](uint32_t ring) { return ctx_.topo.lsaWorldBase + static_cast<int32_t>(ring / s.queues); },
      [&](uint32_t ring) { return Fmt("SDMA queue ", ring % s.queues); }, nullptr);
}

// The host words say why (posters' waits read them); the device-side mirror makes the
// direct path (device/gda_direct.hpp), which reads no host memory while a ring is idle,
// take the ring and meet the error too. The mirror is written first, at once (not behind
// the proxy's stream): whoever saw the error then finds the ring failed on the device too.
void Proxy::FailRing(RingSet& rings, uint32_t ring, ccoGdaRingError error, int32_t peer) {
  Status s = ctx_.platform->WriteDeviceWord(ctx_.device, rings.failedAddress(ring), 1);
  rings.consumers[ring].Fail(error, peer);
  RingOwnBell();  // the host words too: waits asleep on them look now
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (lastError_.empty()) lastError_ = Fmt("marking a failed ring on the device: ", s.message());
  }
}

void Proxy::Fail(RingSet& rings, uint32_t ring, int32_t peer, const std::string& where, const Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);  // said before a wait can end on the ring
    if (lastError_.empty()) lastError_ = Fmt(where, ", peer rank ", peer, ": ", why.message());
  }
  FailRing(rings, ring, why.code() == ccoUnsupported ? CCO_GDA_RING_PEER_FAILED : CCO_GDA_RING_BAD_DESCRIPTOR, peer);
}

}  // namespace cco
