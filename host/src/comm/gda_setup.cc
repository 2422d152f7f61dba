// SPDX-License-Identifier: MIT
#include "comm/gda_setup.h"

#include "comm/agree.h"
#include "comm/net_setup.h"
#include "net/select.h"

namespace cco {
namespace {

ccoGdaTopo TopoOf(const Topology& t) {
  ccoGdaTopo g = {t.rank, t.nRanks, t.lsaRank, t.lsaSize, t.lsaWorldBase, t.node, t.nNodes, 1};
  for (int r = 0; r < t.nRanks; ++r) {
    int size = 0;
    for (int q = 0; q < t.nRanks; ++q) size += t.nodeOfRank[q] == t.nodeOfRank[r];
    if (size != t.lsaSize) g.uniform = 0;
  }
  return g;
}

// The host index of world rank `rank`, or -1 off this host.
int HostIndexOf(const ccoComm& c, int rank) {
  for (size_t i = 0; i < c.topo.hostMembers.size(); ++i)
    if (c.topo.hostMembers[i] == rank) return static_cast<int>(i);
  return -1;
}

// Resolves each connected peer once (the proxy looks them up per descriptor): its rank, its
// host index, and whether the network backend serves it (net/select.h).
void ResolvePeers(const ccoComm& c, const std::vector<bool>& net, GdaResources& g) {
  g.peerRank.resize(g.peerCount);
  g.peerHost.resize(g.peerCount);
  g.peerNet.resize(g.peerCount);
  for (int i = 0; i < g.peerCount; ++i) {
    g.peerRank[i] = cco_gda_conn_team_peer(g.connectionType, &g.topo, i);
    g.peerHost[i] = HostIndexOf(c, g.peerRank[i]);
    g.peerNet[i] = net[g.peerRank[i]];
  }
}

}  // namespace

int GdaPeerCount(const ccoComm& c, const ccoDevCommRequirements& reqs) {
  // CROSSNODE and RAIL on one node connect only this rank to itself: nothing to set up.
  if (reqs.gdaConnectionType != CCO_GDA_CONNECTION_FULL && c.topo.nNodes <= 1) return 0;
  const ccoGdaTopo topo = TopoOf(c.topo);
  return cco_gda_conn_peer_count(reqs.gdaConnectionType, &topo);
}

Status CreateGdaResources(ccoComm& c, const ccoDevCommRequirements& reqs, std::shared_ptr<GdaResources>* out) {
  auto g = std::make_shared<GdaResources>();
  g->connectionType = reqs.gdaConnectionType;
  g->contexts = reqs.gdaContextCount;
  g->topo = TopoOf(c.topo);
  g->peerCount = cco_gda_conn_peer_count(g->connectionType, &g->topo);
  g->signalIds = static_cast<uint32_t>(reqs.gdaSignalCount + reqs.gdaBarrierCount);
  g->counterWords = static_cast<uint32_t>(reqs.gdaCounterCount);
  g->sent.assign(static_cast<size_t>(g->peerCount) * g->signalIds, 0);
  g->sentHost.assign(g->sent.size(), 0);
  g->marks.assign(static_cast<size_t>(g->contexts) * g->counterWords * g->peerCount, 0);

  // The network first, collectively, whatever this rank's own requirements say: every rank
  // of a communicator across hosts (or nodes under CCO_NET) has a peer there.
  NetChoice choice = NetChoice::kAuto;
  (void)NetChoiceFromEnv(&choice);  // checked, and agreed by every rank, in ccoDevCommCreate's first round
  const std::vector<bool> net = NetPeers(c.topo, choice);
  bool anyNet = false;
  for (bool n : net) anyNet |= n;
  if (anyNet) CCO_RETURN_IF_ERROR(EnsureNetBackend(c, choice).Prefixed("ccoDevCommCreate"));

  Status local = g->contexts > 0 ? Status::Ok()
                                 : InvalidArgument("reqs->gdaContextCount is 0, but the connection type asks for GDA");
  ResolvePeers(c, net, *g);
  if (anyNet) g->received.assign(static_cast<size_t>(g->signalIds) * c.topo.nRanks, 0);
  if (local.ok())
    local = AllocateRings(c.platform, c.device, static_cast<uint32_t>(g->contexts * g->peerCount),
                          CCO_GDA_RING_DEPTH_DEFAULT, /*mirrorConsumed=*/false, &g->rings)
                .Prefixed("GDA");
  Status s = Agree(c, "ccoDevCommCreate (GDA resources)", local);
  if (!s.ok()) {
    (void)DestroyGdaResources(c, *g);  // the failure that came first is the one to report
    return s;
  }
  *out = std::move(g);
  return Status::Ok();
}

Status DestroyGdaResources(ccoComm& c, GdaResources& g) { return FreeRings(c.platform, c.device, &g.rings); }

}  // namespace cco
