// Which backend carries GDA between two ranks: `local` within a node; across nodes, `local`
// again when both are on this host (the flat range maps every rank of the host), else the
// network. CCO_NET (alias MORI_NET) overrides: "tcp" makes every pair of ranks in different
// nodes use tcp, on one host too (how a single machine tests the network path); "verbs"
// asks for rdma-core, which this build cannot run yet, so it fails rather than quietly use
// something else. Nothing downgrades what the user asked for.
#ifndef CCO_HOST_NET_SELECT_H_
#define CCO_HOST_NET_SELECT_H_

#include <vector>

#include "common/status.h"

struct ccoComm;

namespace cco {

enum class NetChoice : int { kAuto = 0, kTcp = 1, kVerbs = 2 };

// CCO_NET, checked: "" (auto), "tcp", "verbs".
Status NetChoiceFromEnv(NetChoice* choice);

// For every world rank q, whether GDA between this rank and q goes through the network.
std::vector<bool> NetPeers(const ccoComm& c, NetChoice choice);

// Collective: makes the communicator's network backend unless it has one (every rank of a
// communicator that spans hosts, or nodes under CCO_NET=tcp, takes part alike).
Status EnsureNetBackend(ccoComm& c, NetChoice choice);

}  // namespace cco

#endif  // CCO_HOST_NET_SELECT_H_
