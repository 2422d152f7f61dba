// SPDX-License-Identifier: MIT
// Ranks lost, and the communicator's failure: a host peer whose process ended (its
// descriptor-mesh socket hangs up), or a network peer the backend gave up on. Every ring to a
// lost rank fails, now and in device communicators attached later; the first loss fails the
// communicator (the abort word rises, so every device wait ends) and names the rank at fault.
//
// Naming it: when several host peers are seen ended at once (the rank that died, and others
// that failed because of it and exited soon after), each one's status word (in its resource
// pool, which this rank has mapped) tells them apart: a rank that failed first wrote whom it
// blamed; one that left destroyed its communicator; one that wrote nothing ended on its own.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "proxy/proxy.h"

namespace cco {
namespace {

// How often the proxy looks for host peers that ended while it serves rings (when it serves
// none, it waits on their sockets instead).
constexpr auto kWatchEvery = std::chrono::milliseconds(2);
// How long an idle proxy blocks at most (Wake and the sockets end it sooner), and where host
// peers' liveness words are watched too (a death shows there before the sockets hang up).
constexpr int kIdleWaitMs = 100;
constexpr int kIdleWaitWatchingWordsMs = 5;

// How a peer that ended went: its status word (a host peer), or its notice (a network peer).
struct Ending {
  int host = -1;      // its host index (-1: a network peer)
  int32_t rank = -1;  // its world rank
  uint64_t status = kRankRunning;
};

// Of peers seen ended together (the rank that died, and others that failed because of it and
// ended soon after), which says who is at fault: one that ended on its own (no word), lowest
// first; else one that failed because of a rank it named; else (every one left) the first.
enum class Fault { kEndedOnItsOwn, kFailedBecauseOf, kLeft };
Fault FaultOf(const std::vector<Ending>& ended, const Ending** teller, int32_t* blamed) {
  for (const Ending& e : ended)
    if (e.status == kRankRunning) {
      *teller = &e;
      *blamed = e.rank;
      return Fault::kEndedOnItsOwn;
    }
  for (const Ending& e : ended)
    if ((e.status & ~uint64_t{0xffffffff}) == kRankFailedAfter) {
      *teller = &e;
      *blamed = static_cast<int32_t>(e.status & 0xffffffff);
      return Fault::kFailedBecauseOf;
    }
  *teller = &ended.front();
  *blamed = ended.front().rank;
  return Fault::kLeft;
}

// The rank at fault among host peers seen ended together, and what to say.
std::string Verdict(const std::vector<Ending>& ended, int32_t* blamed) {
  const Ending* e = nullptr;
  switch (FaultOf(ended, &e, blamed)) {
    case Fault::kEndedOnItsOwn:
      return Fmt("rank ", e->rank, " (a process on this host) ended: its rings fail, its signals will not come");
    case Fault::kFailedBecauseOf:
      return Fmt("rank ", *blamed, " was lost (rank ", e->rank,
                 ", a process on this host, failed because of it and ended)");
    case Fault::kLeft: break;
  }
  return Fmt("rank ", e->rank,
             " (a process on this host) left: it destroyed its communicator while this one "
             "was still in use");
}

}  // namespace

const PeerLiveness* Proxy::PeerWord(int hostIndex) const {
  return static_cast<size_t>(hostIndex) < ctx_.peerLiveness.size() ? ctx_.peerLiveness[hostIndex] : nullptr;
}

uint64_t Proxy::StatusWordOf(int hostIndex) const {
  uint64_t status = kRankRunning;
  if (ctx_.statusWords)
    (void)ctx_.platform->CopyFromDevice(ctx_.device, &status, ctx_.hostSlices[hostIndex] + ctx_.statusOffset,
                                        sizeof(status));
  return status;
}

// While rings are served: every few milliseconds, a poll without reading (the mesh's own
// exchanges are untouched) and a look at the peers' liveness words.
void Proxy::WatchHostPeers() {
  nextWatch_ = std::chrono::steady_clock::now() + kWatchEvery;
  std::vector<pollfd> fds;
  for (const auto& w : watched_) fds.push_back(pollfd{w.second, 0, 0});
  std::vector<Ending> ended;
  std::optional<PhaseTrace> trace;  // CCO_TRACE_PHASES: how long a loss takes to reach the waits
  const bool polled = !fds.empty() && poll(fds.data(), fds.size(), 0) > 0;
  for (size_t i = 0; i < fds.size(); ++i) {
    // Its socket hung up, or (sooner) its liveness word says the thread holding it died.
    const bool hungUp = polled && (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL));
    const PeerLiveness* word = PeerWord(watched_[i].first);
    if (!hungUp && !(word != nullptr && word->Died())) continue;
    if (!trace) trace.emplace(ctx_.topo.rank, "losing host peers");
    Ending e;
    e.host = watched_[i].first;
    e.rank = ctx_.topo.hostMembers[e.host];
    e.status = StatusWordOf(e.host);
    ended.push_back(e);
  }
  for (const Ending& e : ended) {
    deadHosts_.push_back(e.host);
    watched_.erase(std::find_if(watched_.begin(), watched_.end(),
                                [&](const std::pair<int, int>& w) { return w.first == e.host; }));
  }
  // The error first: whoever sees a wait end (a ring failed, the abort word) finds it said;
  // AsyncError reports it once the rings have failed (lossMu_).
  std::unique_lock<std::mutex> loss(lossMu_, std::defer_lock);
  if (!ended.empty()) {
    loss.lock();
    trace->Mark("their status words read");
    int32_t blamed = -1;
    const std::string why = Verdict(ended, &blamed);
    FailCommunicator(blamed, why, &*trace);
    std::this_thread::sleep_for(lossPause_);
  }
  FailLostPeers();
  if (!trace) return;
  trace->Mark("their rings failed");
  // Last: a kernel whose wait ended on it and then posts to the dead rank meets a failed ring.
  RaiseAbortWord(&*trace);
}

void Proxy::FailLostPeers() {
  for (int host : deadHosts_) FailHostPeer(host);
  for (int32_t rank : lostNetPeers_) FailNetPeer(rank);
}

void Proxy::FailHostPeer(int hostIndex) {
  const ProxyContext& c = ctx_;
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

// Every ring to it, whether or not an op to it was in flight: a wait for its signals must end.
void Proxy::FailNetPeer(int32_t rank) {
  for (auto& g : threadWork_)
    for (uint32_t ring = 0; ring < g->rings.count; ++ring) {
      const int p = static_cast<int>(ring % g->peerCount);
      if (g->peerRank[p] == rank && g->peerNet[p] && !g->rings.consumers[ring].failed())
        FailRing(g->rings, ring, CCO_GDA_RING_PEER_FAILED, rank);
    }
}

// Of several network peers lost together (the rank that died, and others that failed because
// of it and closed their connections soon after), the cause is one that did not fail first,
// else the rank one of them blamed: a peer says so in its kTcpFailed notice (net/tcp_wire.h),
// or, a process on this host, in its status word.
void Proxy::TakeNetLosses(NetBackend& net) {
  netLosses_.clear();
  net.TakeLostPeers(&netLosses_);
  if (netLosses_.empty()) return;
  std::lock_guard<std::mutex> loss(lossMu_);                 // AsyncError reports it once the rings have failed
  PhaseTrace trace(ctx_.topo.rank, "losing network peers");  // CCO_TRACE_PHASES
  std::vector<Ending> ended;
  for (const NetLoss& loss : netLosses_) {
    Ending e;
    e.rank = loss.peer;
    e.status = HostPeerStatus(loss.peer);
    if (loss.blamedByPeer >= 0 && loss.blamedByPeer < ctx_.topo.nRanks)
      e.status = kRankFailedAfter | static_cast<uint32_t>(loss.blamedByPeer);
    ended.push_back(e);
  }
  const Ending* e = nullptr;
  int32_t blamed = -1;
  switch (FaultOf(ended, &e, &blamed)) {
    case Fault::kEndedOnItsOwn:
      FailCommunicator(blamed,
                       Fmt("rank ", blamed, " was lost (", net.name(), "): ",
                           netLosses_[e - ended.data()].why.message(), "; its rings fail, its signals will not come"),
                       &trace);
      break;
    case Fault::kFailedBecauseOf:
      FailCommunicator(blamed,
                       Fmt("rank ", blamed, " was lost (rank ", e->rank, " failed because of it and closed its ",
                           net.name(), " connection)"),
                       &trace);
      break;
    case Fault::kLeft:
      FailCommunicator(blamed,
                       Fmt("rank ", blamed, " left (", net.name(),
                           "): it destroyed its communicator while this one was still in use"),
                       &trace);
      break;
  }
  std::this_thread::sleep_for(lossPause_);
  for (const NetLoss& loss : netLosses_) {
    lostNetPeers_.push_back(loss.peer);
    FailNetPeer(loss.peer);
  }
  trace.Mark("their rings failed");
  RaiseAbortWord(&trace);  // last, as for host peers
}

uint64_t Proxy::HostPeerStatus(int32_t rank) const {
  for (const auto& peer : ctx_.peerSockets)  // the host peers in other processes
    if (ctx_.topo.hostMembers[peer.first] == rank) return StatusWordOf(peer.first);
  return kRankRunning;
}

void Proxy::FailCommunicator(int32_t blamed, const std::string& why, PhaseTrace* trace) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lastError_.empty()) lastError_ = why;
    // This rank's word says whom it blamed (before any wait ends: a peer that sees this
    // process end soon after then blames the same rank), unless it is leaving already.
    if (!failed_ && !leaving_ && ctx_.statusWords)
      (void)ctx_.platform->WriteDeviceWord(ctx_.device, ctx_.MySlice() + ctx_.statusOffset,
                                           kRankFailedAfter | static_cast<uint32_t>(blamed));
    first = !failed_ && !leaving_;
    failed_ = true;
  }
  if (trace) trace->Mark("own status word written");
  // The network peers hear it too (before any wait ends), for the same reason.
  if (first && threadNet_) threadNet_->SayFailed(blamed, *this);
  if (trace && first && threadNet_) trace->Mark("network peers told");
}

void Proxy::RaiseAbortWord(PhaseTrace* trace) {
  if (ctx_.abortWord == nullptr) return;
  uint32_t live = kAbortWordLive;  // an abort already raised it: it stays an abort
  __atomic_compare_exchange_n(ctx_.abortWord, &live, kAbortWordFailed, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  RingOwnBell();  // waits asleep on it look now
  if (trace) trace->Mark("abort word raised");
}

void Proxy::Leaving() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failed_ && !leaving_ && ctx_.statusWords)
    (void)ctx_.platform->WriteDeviceWord(ctx_.device, ctx_.MySlice() + ctx_.statusOffset, kRankLeft);
  leaving_ = true;
}

void Proxy::IdleWait() {
  std::vector<pollfd> fds;
  for (const auto& w : watched_) fds.push_back(pollfd{w.second, 0, 0});
  if (wake_ >= 0) fds.push_back(pollfd{wake_, POLLIN, 0});
  if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kIdleWaitMs));
    return;
  }
  bool words = false;  // a host peer's liveness word to look at: a death shows there first
  for (const auto& w : watched_) words |= PeerWord(w.first) != nullptr;
  const int waitMs = words ? kIdleWaitWatchingWordsMs : kIdleWaitMs;
  if (poll(fds.data(), fds.size(), waitMs) > 0 && wake_ >= 0 && (fds.back().revents & POLLIN)) DrainWake();
}

}  // namespace cco
