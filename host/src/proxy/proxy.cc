#include "proxy/proxy.h"

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

}  // namespace

Proxy::Proxy(ccoComm* comm) : comm_(comm), trace_(env::Flag("CCO_GDA_TRACE")) {}

Proxy::~Proxy() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (streamMade_) comm_->platform->StreamDestroy(comm_->device, stream_);
  if (staging_ != nullptr) comm_->platform->HostMappedFree(comm_->device, staging_);
}

Status Proxy::Attach(const std::shared_ptr<GdaResources>& g) {
  if (!streamMade_) {
    CCO_RETURN_IF_ERROR(comm_->platform->StreamCreate(comm_->device, &stream_).Prefixed("the GDA proxy's stream"));
    streamMade_ = true;
    CCO_RETURN_IF_ERROR(comm_->platform->HostMappedAlloc(comm_->device, 64, reinterpret_cast<void**>(&staging_),
                                                         &stagingDevice_).Prefixed("the GDA proxy's staging word"));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    attached_.push_back(g);
    ++generation_;  // the thread re-reads the attached list
  }
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread([this] { Loop(); });
    } catch (const std::system_error& e) {
      Detach(g.get());
      return SystemError(Fmt("starting the GDA proxy thread: ", e.what()));
    }
  }
  return Status::Ok();
}

void Proxy::Detach(const GdaResources* g) {
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = attached_.begin(); it != attached_.end(); ++it) {
      if (it->get() == g) {
        attached_.erase(it);
        break;
      }
    }
    target = ++generation_;
  }
  // The thread's pass in flight may still hold `g`: wait for a pass that began after this.
  while (thread_.joinable() && !stop_ && seenGeneration_.load() < target) std::this_thread::yield();
}

void Proxy::AddWindow(uint32_t id, uint64_t offset, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  windows_[id] = Window{offset, size};
}

void Proxy::RemoveWindow(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  windows_.erase(id);
}

std::string Proxy::lastError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lastError_;
}

void Proxy::Loop() {
  using Clock = std::chrono::steady_clock;
  std::vector<std::shared_ptr<GdaResources>> work;
  uint64_t generation = ~0ull;
  int idle = 0;
  Clock::time_point idleSince = Clock::now();
  while (!stop_) {
    // The list is copied only when Attach or Detach changed it: the hot loop takes no lock.
    if (generation_.load() != generation) {
      std::lock_guard<std::mutex> lock(mu_);
      work = attached_;
      generation = generation_.load();
    }
    bool did = false;
    for (auto& g : work) did |= Pass(*g);
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

bool Proxy::Pass(GdaResources& g) {
  bool did = false;
  for (uint32_t ring = 0; ring < g.rings(); ++ring) {
    RingConsumer& consumer = g.consumers[ring];
    for (int i = 0; i < kBurst && !consumer.failed(); ++i) {
      ccoGdaDesc d;
      uint64_t ticket;
      if (!consumer.Next(&d, &ticket)) break;
      did = true;
      Status s = Execute(g, ring, d);
      if (!s.ok()) {
        Fail(g, ring, g.peerRank[ring % g.peerCount], s);
        break;
      }
      consumer.Complete(ticket);
    }
  }
  return did;
}

Status Proxy::Resolve(uint32_t id, uint64_t offset, uint64_t bytes, uint64_t* windowOffset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(id);
  if (it == windows_.end()) return InvalidArgument(Fmt("window id ", id, " is not a live window of this communicator"));
  if (offset > it->second.size || bytes > it->second.size - offset)
    return InvalidArgument(Fmt(bytes, " bytes at offset ", offset, " run past window ", id, "'s ", it->second.size, " bytes"));
  *windowOffset = it->second.offset + offset;
  return Status::Ok();
}

Status Proxy::Execute(GdaResources& g, uint32_t ring, const ccoGdaDesc& d) {
  ccoComm& c = *comm_;
  const int32_t peer = g.peerRank[ring % g.peerCount];
  const int host = g.peerHost[ring % g.peerCount];
  if (host < 0) return Unsupported(Fmt("rank ", peer, " is on another host: no network backend in this build"));

  uint64_t dst = 0, src = 0;
  switch (d.op) {
    case CCO_GDA_OP_PUT:
    case CCO_GDA_OP_GET: {
      const bool put = d.op == CCO_GDA_OP_PUT;
      uint64_t dstOffset = 0, srcOffset = 0;
      CCO_RETURN_IF_ERROR(Resolve(d.dstWindow, d.dstOffset, d.bytes, &dstOffset).Prefixed("the destination"));
      CCO_RETURN_IF_ERROR(Resolve(d.srcWindow, d.srcOffset, d.bytes, &srcOffset).Prefixed("the source"));
      dst = (put ? c.HostSlice(host) : c.MySlice()) + dstOffset;
      src = (put ? c.MySlice() : c.HostSlice(host)) + srcOffset;
      break;
    }
    case CCO_GDA_OP_PUT_VALUE: {
      if (d.bytes > 8) return InvalidArgument(Fmt("put_value of ", d.bytes, " bytes (at most 8)"));
      uint64_t dstOffset = 0;
      CCO_RETURN_IF_ERROR(Resolve(d.dstWindow, d.dstOffset, d.bytes, &dstOffset).Prefixed("the destination"));
      dst = c.HostSlice(host) + dstOffset;
      *staging_ = d.srcOffset;  // the value, copied from pinned memory like any other source
      src = stagingDevice_;
      break;
    }
    case CCO_GDA_OP_SIGNAL: break;
    default: return InvalidArgument(Fmt("unknown GDA operation ", static_cast<int>(d.op)));
  }
  if (d.op != CCO_GDA_OP_SIGNAL && d.bytes > 0) {
    CCO_RETURN_IF_ERROR(c.platform->CopyOnStream(c.device, stream_, dst, src, d.bytes));
    CCO_RETURN_IF_ERROR(c.platform->StreamSynchronize(c.device, stream_));
  }
  // The data has landed: now the target may see the signal.
  if (d.signalOp != CCO_SIGNAL_NONE) {
    if (d.signalOp != CCO_SIGNAL_INC && d.signalOp != CCO_SIGNAL_ADD)
      return InvalidArgument(Fmt("unknown signal operation ", static_cast<int>(d.signalOp)));
    if (d.signalId >= g.signalWords) return InvalidArgument(Fmt("signal ", d.signalId, " is not below ", g.signalWords));
    __atomic_fetch_add(g.peerTables[host] + d.signalId, d.signalOp == CCO_SIGNAL_INC ? 1 : d.signalValue, __ATOMIC_SEQ_CST);
  }
  if (trace_)
    fprintf(stderr, "cco proxy rank %d: ring %u op %d peer %d (host %d) dst 0x%llx src 0x%llx bytes %llu signal %u op %d%s\n",
            c.topo.rank, ring, d.op, peer, host, static_cast<unsigned long long>(dst), static_cast<unsigned long long>(src),
            static_cast<unsigned long long>(d.bytes), d.signalId, d.signalOp,
            d.signalOp ? Fmt(" -> table ", static_cast<void*>(g.peerTables[host]), " now ",
                             __atomic_load_n(g.peerTables[host] + d.signalId, __ATOMIC_SEQ_CST)).c_str() : "");
  if (d.flags & CCO_GDA_DESC_MARKER) {
    // Every earlier post on this ring is complete (rings are carried out in order): the
    // counter counts, per context, the marks every ring has passed.
    if (d.counterId >= g.counterWords) return InvalidArgument(Fmt("counter ", d.counterId, " is not below ", g.counterWords));
    const int context = static_cast<int>(ring / g.peerCount);
    ++g.mark(context, d.counterId, static_cast<int>(ring % g.peerCount));
    uint64_t total = 0;
    for (int ctx = 0; ctx < g.contexts; ++ctx) {
      uint64_t passed = g.mark(ctx, d.counterId, 0);
      for (int p = 1; p < g.peerCount; ++p) passed = std::min(passed, g.mark(ctx, d.counterId, p));
      total += passed;
    }
    __atomic_store_n(g.counters() + d.counterId, total, __ATOMIC_RELEASE);
  }
  return Status::Ok();
}

void Proxy::Fail(GdaResources& g, uint32_t ring, int32_t peer, const Status& why) {
  g.consumers[ring].Fail(why.code() == ccoUnsupported ? CCO_GDA_RING_PEER_FAILED : CCO_GDA_RING_BAD_DESCRIPTOR, peer);
  std::lock_guard<std::mutex> lock(mu_);
  if (lastError_.empty())
    lastError_ = Fmt("GDA context ", ring / g.peerCount, ", peer rank ", peer, ": ", why.message());
}

}  // namespace cco
