// SPDX-License-Identifier: MIT
// Who is where: nodes, the LSA team, and the teams of ccoDevComm, from what every rank
// reported at creation. Pure functions of their inputs, so every rank computes the same.
#ifndef CCO_HOST_TOPOLOGY_TOPOLOGY_H_
#define CCO_HOST_TOPOLOGY_TOPOLOGY_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "abi/devcomm.h"
#include "common/status.h"

namespace cco {

// What each rank tells the others at ccoCommCreate (plain data: it travels as bytes, and
// every rank checks every rank's copy with ValidateRankInfo before using it).
struct RankInfo {
  uint64_t hostHash;
  uint64_t processToken;    // random per process: equal tokens, pids and hosts = one process
  uint64_t pidNamespace;    // /proc/self/ns/pid's inode: pids compare only within one
  uint64_t perRankVmmSize;  // as the caller asked (0 = default)
  uint64_t granularity;
  uint64_t totalMemory;
  int32_t pid;
  int32_t platform;  // ccoPlatform_t
  int32_t device;
  int32_t reserved;
  char busId[32];     // NUL-terminated
  char meshName[64];  // this rank's Unix listener for descriptor passing, NUL-terminated
};

// Whether `info`, as rank `rank` sent it, is well formed: terminated strings of the expected
// characters, a known platform, sizes a real device has. ccoRemoteError naming the rank.
Status ValidateRankInfo(const RankInfo& info, int rank);

// A random value fixed for this process's life (with the pid, it tells a process apart
// from its forked children too).
uint64_t ProcessToken();

struct Topology {
  int rank = 0;
  int nRanks = 1;
  int node = 0;
  int nNodes = 1;
  int lsaRank = 0;
  int lsaSize = 1;
  int lsaWorldBase = 0;  // world rank of LSA rank 0 (teams are contiguous)
  // The ranks of this host (all virtual nodes of it), in rank order: the flat range and the
  // descriptor mesh span them, so the proxy reaches same-host peers of other nodes too.
  std::vector<int> hostMembers;
  int hostRank = 0;     // this rank's index in hostMembers
  int lsaHostBase = 0;  // the host index of LSA rank 0 (a node is a run of its host)
  std::vector<int> nodeOfRank;
  ccoTeam world{};
  ccoTeam lsa{};
  ccoTeam rail{};
};

// Ranks with the same host hash share a host; `nodesPerHost` > 1 (a test knob,
// CCO_TEST_NODES_PER_HOST) splits each host's ranks into that many contiguous "nodes", so
// cross-node paths run on one machine. A node's ranks must be contiguous world ranks.
Status ComputeTopology(const std::vector<RankInfo>& infos, int rank, int nodesPerHost, Topology* out);
// The same from every rank's host hash alone, once the caller has checked that the ranks
// agree on the platform.
Status ComputeTopologyOfHosts(const std::vector<uint64_t>& hostOfRank, int rank, int nodesPerHost, Topology* out);

// This machine's identity: hostname and boot id (CCO_HOSTID overrides, for tests).
uint64_t HostHash();

}  // namespace cco

#endif  // CCO_HOST_TOPOLOGY_TOPOLOGY_H_
