// SPDX-License-Identifier: MIT
// The pieces of choosing a network backend that need no communicator: what CCO_NET asks
// for, which pairs of ranks the network serves, whether this process can use
// verbs, and the exchange of verbs endpoints in rounds. The choice itself, collective over a
// communicator, is comm/net_setup.h's.
#ifndef CCO_HOST_NET_SELECT_H_
#define CCO_HOST_NET_SELECT_H_

#include <stdint.h>

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/verbs_backend.h"
#include "topology/topology.h"

namespace cco {

enum class NetChoice : int { kAuto = 0, kTcp = 1, kVerbs = 2 };

// CCO_NET, checked: "" (auto), "tcp", "verbs".
Status NetChoiceFromEnv(NetChoice* choice);

// For every world rank q, whether GDA between this rank and q goes through the network: q
// is on another host, or (CCO_NET set) in another node of this one.
std::vector<bool> NetPeers(const Topology& t, NetChoice choice);

// Whether this process can use verbs: the library, the options and an active port. On
// success *device is open (the caller owns it).
Status ProbeVerbs(const VerbsApi** api, VerbsOptions* options, VerbsDevice* device);

// Collective: hands every peer this rank's ends of the queue pairs to it and returns theirs
// to this rank. mine and *theirs: [peer][lane], nRanks * lanes. gather(name, data, bytes,
// out) is an all-gather of `bytes` from every rank, at most maxBytes at a time; it runs in
// rounds over the peers (an all-gather of every rank's whole table would outgrow a
// contribution's bound past 1024 ranks, and hold nRanks^2 endpoints at once).
using AllGatherFn = std::function<Status(const std::string& name, const void* data, size_t bytes, void* out)>;
Status ExchangeEndpoints(int nRanks, int me, int lanes, const std::vector<VerbsEndpoint>& mine, size_t maxBytes,
                         const AllGatherFn& gather, std::vector<VerbsEndpoint>* theirs);

}  // namespace cco

#endif  // CCO_HOST_NET_SELECT_H_
