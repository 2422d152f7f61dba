// SPDX-License-Identifier: MIT
#include "proxy/trace_stamps.h"

#include <time.h>

#include <utility>

namespace cco {

uint64_t TraceNow() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

TraceStamps::TraceStamps(uint32_t capacity, uint64_t* clockWord) : stamps_(capacity), clockWord_(clockWord) {}

std::vector<TraceStamps::Stamp> TraceStamps::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stamps_;
}

void TraceStamps::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Stamp& s : stamps_) s = Stamp();
  ++generation_;
}

RingTrace::RingTrace(std::shared_ptr<TraceStamps> stamps, uint32_t rings)
    : stamps_(std::move(stamps)), pending_(rings) {}

void RingTrace::Tick() {
  if (stamps_->clockWord_ != nullptr) __atomic_store_n(stamps_->clockWord_, TraceNow(), __ATOMIC_RELAXED);
}

void RingTrace::Queued(uint32_t ring, uint64_t ticket, uint32_t traceRecord, uint64_t taken) {
  const uint64_t queued = TraceNow();
  std::lock_guard<std::mutex> lock(stamps_->mu_);
  if (ring >= pending_.size() || traceRecord == 0 || traceRecord > stamps_->stamps_.size()) return;
  TraceStamps::Stamp& s = stamps_->stamps_[traceRecord - 1];
  s.taken = taken;
  s.queued = queued;
  s.done = 0;
  pending_[ring].push_back(Pending{ticket, traceRecord - 1, stamps_->generation_});
}

void RingTrace::Poll(uint32_t ring, const ccoGdaRingHost* host) {
  if (ring >= pending_.size() || pending_[ring].empty()) return;
  const uint64_t consumed = __atomic_load_n(&host->consumed, __ATOMIC_ACQUIRE);
  std::deque<Pending>& pending = pending_[ring];
  if (!cco_gda_before(pending.front().ticket, consumed)) return;
  const uint64_t now = TraceNow();
  std::lock_guard<std::mutex> lock(stamps_->mu_);
  while (!pending.empty() && cco_gda_before(pending.front().ticket, consumed)) {
    if (pending.front().generation == stamps_->generation_) stamps_->stamps_[pending.front().index].done = now;
    pending.pop_front();
  }
}

}  // namespace cco
