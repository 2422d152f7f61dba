// Host peers in other processes: a process that ended hangs up its descriptor-mesh socket,
// and every ring to its ranks fails, now and in device communicators attached later.
#include <poll.h>

#include <chrono>

#include "proxy/proxy.h"

namespace cco {
namespace {

// How often the proxy looks for host peers that ended.
constexpr auto kWatchEvery = std::chrono::milliseconds(2);

}  // namespace

// Every few milliseconds: a poll without reading (the mesh's own exchanges are untouched).
void Proxy::WatchHostPeers() {
  nextWatch_ = std::chrono::steady_clock::now() + kWatchEvery;
  std::vector<pollfd> fds;
  for (const auto& w : watched_) fds.push_back(pollfd{w.second, 0, 0});
  if (!fds.empty() && poll(fds.data(), fds.size(), 0) > 0) {
    for (size_t i = fds.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLHUP | POLLERR | POLLNVAL))) continue;
      deadHosts_.push_back(watched_[i].first);
      const int32_t rank = ctx_.topo.hostMembers[watched_[i].first];
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

}  // namespace cco
