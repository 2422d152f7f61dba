// Which backend carries GDA between two ranks: `local` within a node; across nodes, `local`
// again when both are on this host (the flat range maps every rank of the host), else the
// network: `verbs` when every rank has a usable RDMA device (net/verbs_device.h), else `tcp`.
// CCO_NET (alias MORI_NET) overrides: "tcp" makes every pair of ranks in different nodes use
// tcp, on one host too (how a single machine tests the network path); "verbs" makes them use
// verbs, and fails, naming the ranks and why, where a rank has no usable device. Nothing
// downgrades what the user asked for.
#ifndef CCO_HOST_NET_SELECT_H_
#define CCO_HOST_NET_SELECT_H_

#include <stdint.h>

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/verbs_backend.h"

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

// Collective: hands every peer this rank's ends of the queue pairs to it and returns theirs
// to this rank. mine and *theirs: [peer][lane], nRanks * lanes. gather(name, data, bytes,
// out) is an all-gather of `bytes` from every rank, at most maxBytes at a time; it runs in
// rounds over the peers (an all-gather of every rank's whole table would outgrow a
// contribution's bound past 1024 ranks, and hold nRanks^2 endpoints at once).
using AllGatherFn = std::function<Status(const std::string& name, const void* data, size_t bytes, void* out)>;
Status ExchangeEndpoints(int nRanks, int me, int lanes, const std::vector<VerbsEndpoint>& mine, size_t maxBytes,
                         const AllGatherFn& gather, std::vector<VerbsEndpoint>* theirs);

// Collective, at every window registration: with the verbs backend, registers this rank's
// memory of window `id` with the NIC and hands every peer its key; nothing otherwise.
Status ExchangeWindowKeys(ccoComm& c, uint32_t id, uint64_t address, uint64_t size);

}  // namespace cco

#endif  // CCO_HOST_NET_SELECT_H_
