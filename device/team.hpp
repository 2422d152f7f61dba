// SPDX-License-Identifier: MIT
//===-- device/team.hpp - teams: logical subsets of ranks -------*- C++ -*-===//
//
// Device code addresses peers through teams instead of hard-coding the topology
// (ccoTeamKind, abi/enums.h):
//   WORLD      every rank; member i is world rank i
//   LSA        the ranks of this node; member i is world rank lsa.worldBase + i
//   RAIL       the same LSA rank on every node; member i is rail.worldBase + i * rail.stride
//   CROSSNODE  every rank of the other nodes, in world order (this rank is not a member)
//   GDA        the ranks of this rank's GDA connections (the device communicator's connection
//              type), in ring order: member i is the peer of ring i (empty without GDA)
// Team functions return -1 (and size 0) for a kind that does not exist.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_TEAM_HPP_
#define CCO_DEVICE_TEAM_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "abi/gda.h"
#include "device/arch/arch.h"
#include "device/handles.hpp"

namespace cco {

/// The topology the GDA connection arithmetic (abi/gda.h) takes, from the device communicator.
template <class Read = ReadAsIs> CCO_DEVICE_API ccoGdaTopo gda_topo(const ccoDevComm& dc, Read read = Read()) {
  return ccoGdaTopo{read(dc.rank),    read(dc.worldSize),         read(dc.lsaRank),
                    read(dc.lsaSize), read(dc.teamLsa.worldBase), read(dc.node),
                    read(dc.nNodes),  read(dc.gdaUniformNodes)};
}

CCO_DEVICE_API int32_t team_size(const ccoDevComm& dc, int32_t kind) {
  switch (kind) {
    case CCO_TEAM_WORLD: return dc.worldSize;
    case CCO_TEAM_LSA: return dc.lsaSize;
    case CCO_TEAM_RAIL: return dc.teamRail.nRanks;
    case CCO_TEAM_CROSSNODE: return dc.worldSize - dc.lsaSize;
    case CCO_TEAM_GDA: return dc.gdaPeerCount;
    default: return 0;
  }
}

/// This rank's index in the team, or -1 where it is not a member.
CCO_DEVICE_API int32_t team_rank(const ccoDevComm& dc, int32_t kind) {
  switch (kind) {
    case CCO_TEAM_WORLD: return dc.rank;
    case CCO_TEAM_LSA: return dc.lsaRank;
    case CCO_TEAM_RAIL: return dc.teamRail.rank;
    case CCO_TEAM_GDA: {
      if (dc.gdaPeerCount == 0) return -1;
      const ccoGdaTopo t = gda_topo(dc);
      return cco_gda_conn_peer_index(static_cast<int32_t>(dc.gdaConnectionType), &t, dc.rank);
    }
    default: return -1;  // CROSSNODE never holds its own rank
  }
}

/// The world rank of team member `index`, or -1 where there is no such member.
CCO_DEVICE_API int32_t team_world_rank(const ccoDevComm& dc, int32_t kind, int32_t index) {
  if (index < 0 || index >= team_size(dc, kind)) return -1;
  switch (kind) {
    case CCO_TEAM_WORLD: return index;
    case CCO_TEAM_LSA: return dc.teamLsa.worldBase + index;
    case CCO_TEAM_RAIL: return dc.teamRail.worldBase + index * dc.teamRail.stride;
    case CCO_TEAM_CROSSNODE: {  // the world without this node's contiguous block
      const int32_t base = dc.teamLsa.worldBase;
      return index < base ? index : index + dc.lsaSize;
    }
    case CCO_TEAM_GDA: {
      const ccoGdaTopo t = gda_topo(dc);
      return cco_gda_conn_team_peer(static_cast<int32_t>(dc.gdaConnectionType), &t, index);
    }
    default: return -1;
  }
}

}  // namespace cco

#endif  // CCO_DEVICE_TEAM_HPP_
