// SPDX-License-Identifier: MIT
// Topology and teams from the ranks' host hashes (topology/topology.h): LSA teams, rails,
// virtual nodes, and the layouts that are refused.
#include <gtest/gtest.h>
#include <string.h>

#include <string>
#include <vector>

#include "topology/topology.h"

namespace cco {
namespace {

std::vector<RankInfo> Hosts(const std::vector<int>& hostOfRank) {
  std::vector<RankInfo> infos(hostOfRank.size());
  for (size_t r = 0; r < infos.size(); ++r) {
    memset(&infos[r], 0, sizeof(RankInfo));
    infos[r].hostHash = 1000 + hostOfRank[r];
  }
  return infos;
}

TEST(Topology, OneHostIsOneLsaTeam) {
  Topology t;
  ASSERT_TRUE(ComputeTopology(Hosts({0, 0, 0, 0}), 2, 1, &t).ok());
  EXPECT_EQ(t.nNodes, 1);
  EXPECT_EQ(t.lsaSize, 4);
  EXPECT_EQ(t.lsaRank, 2);
  EXPECT_EQ(t.rail.nRanks, 1);
  EXPECT_EQ(t.world.nRanks, 4);
}

TEST(Topology, TwoHostsGiveRailTeams) {
  Topology t;
  ASSERT_TRUE(ComputeTopology(Hosts({0, 0, 0, 1, 1, 1}), 4, 1, &t).ok());
  EXPECT_EQ(t.nNodes, 2);
  EXPECT_EQ(t.node, 1);
  EXPECT_EQ(t.lsaRank, 1);
  EXPECT_EQ(t.lsaWorldBase, 3);
  EXPECT_EQ(t.lsa.worldBase, 3);
  EXPECT_EQ(t.rail.nRanks, 2);
  EXPECT_EQ(t.rail.rank, 1);
  EXPECT_EQ(t.rail.stride, 3);
  EXPECT_EQ(t.rail.worldBase, 1);  // member i of the rail is world rank 1 + 3i
}

TEST(Topology, VirtualNodesSplitAHost) {
  Topology t;
  ASSERT_TRUE(ComputeTopology(Hosts({0, 0, 0, 0, 0, 0, 0, 0}), 5, 4, &t).ok());
  EXPECT_EQ(t.nNodes, 4);
  EXPECT_EQ(t.node, 2);
  EXPECT_EQ(t.lsaSize, 2);
  EXPECT_EQ(t.lsaRank, 1);
  EXPECT_EQ(t.nodeOfRank, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(ComputeTopology(Hosts({0, 0}), 0, 3, &t).code(), ccoInvalidArgument);
}

TEST(Topology, NonContiguousNodesAreRefused) {
  Topology t;
  Status s = ComputeTopology(Hosts({0, 1, 0, 1}), 0, 1, &t);
  EXPECT_EQ(s.code(), ccoInvalidUsage);
  EXPECT_NE(s.message().find("contiguous"), std::string::npos) << s.message();
}

TEST(Topology, UnevenNodesHaveNoRail) {
  Topology t;
  ASSERT_TRUE(ComputeTopology(Hosts({0, 0, 0, 1}), 3, 1, &t).ok());
  EXPECT_EQ(t.lsaSize, 1);
  EXPECT_EQ(t.rail.nRanks, 1);
  EXPECT_EQ(t.rail.worldBase, 3);
}

TEST(Topology, MixedPlatformsAreRefused) {
  auto infos = Hosts({0, 0});
  infos[1].platform = 1;
  Topology t;
  EXPECT_EQ(ComputeTopology(infos, 0, 1, &t).code(), ccoInvalidUsage);
}

}  // namespace
}  // namespace cco
