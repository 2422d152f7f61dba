// SPDX-License-Identifier: MIT
// Which backend carries GDA between two ranks: `local` within a node; across nodes, `local`
// again when both are on this host (the flat range maps every rank of the host), else the
// network: `verbs` when every rank has a usable RDMA device (net/verbs_device.h), else `tcp`.
// CCO_NET overrides: "tcp" makes every pair of ranks in different nodes use
// tcp, on one host too (how a single machine tests the network path); "verbs" makes them use
// verbs, and fails, naming the ranks and why, where a rank has no usable device. Nothing
// downgrades what the user asked for.
//
// The backend is made collectively, once per communicator, and handed to its proxy; with
// verbs, every window is registered with the NIC and its keys handed to the peers.
#ifndef CCO_HOST_COMM_NET_SETUP_H_
#define CCO_HOST_COMM_NET_SETUP_H_

#include <stdint.h>

#include "comm/communicator.h"
#include "net/select.h"

namespace cco {

// Collective: makes the communicator's network backend unless it has one (every rank of a
// communicator that spans hosts, or nodes under CCO_NET=tcp, takes part alike).
Status EnsureNetBackend(ccoComm& c, NetChoice choice);

// Collective, at every window registration: with the verbs backend, registers this rank's
// memory of window `id` with the NIC and hands every peer its key; nothing otherwise.
// internal: the communicator's own window of resources, which takes signals' atomics only.
Status ExchangeWindowKeys(ccoComm& c, uint32_t id, uint64_t address, uint64_t size, bool internal);

}  // namespace cco

#endif  // CCO_HOST_COMM_NET_SETUP_H_
