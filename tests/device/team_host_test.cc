// SPDX-License-Identifier: MIT
// Teams (device/team.hpp) on the host: every member of every team of every rank maps to
// the right world rank, for devcomms that ccoDevCommCreate filled with the host split
// into "nodes" (CCO_TEST_NODES_PER_HOST), ranks as threads of this process.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "device/team.hpp"

namespace {

// The devcomms of n ranks (threads) on one host split into `nodes` nodes, made by
// ccoDevCommCreate with GDA connections of `gdaType`; empty on failure.
std::vector<ccoDevComm> MakeDevComms(int n, int nodes, int gdaType) {
  setenv("CCO_PLATFORM", "cpu", 1);
  setenv("CCO_TEST_NODES_PER_HOST", std::to_string(nodes).c_str(), 1);
  ccoUniqueId id;
  if (ccoGetUniqueId(&id) != ccoSuccess) return {};
  std::vector<ccoDevComm> dcs(n);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ccoComm* comm = nullptr;
      ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
      reqs.gdaConnectionType = gdaType;
      if (ccoCommCreate(id, n, r, 8 << 20, &comm) != ccoSuccess ||
          ccoDevCommCreate(comm, &reqs, &dcs[r]) != ccoSuccess) {
        fprintf(stderr, "rank %d: %s\n", r, ccoGetLastError());
        ++failures;
        return;
      }
      ccoDevCommDestroy(comm, &dcs[r]);  // the struct's topology fields stay readable
      ccoCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  unsetenv("CCO_TEST_NODES_PER_HOST");
  if (failures != 0) return {};
  return dcs;
}

// 6 ranks on one host split into 3 nodes of 2: rank r is on node r / 2.
TEST(TeamsOnHost, EveryTeamOfEveryRank) {
  constexpr int n = 6;
  const std::vector<ccoDevComm> dcs = MakeDevComms(n, 3, CCO_GDA_CONNECTION_NONE);
  ASSERT_EQ(dcs.size(), size_t{n});

  for (int r = 0; r < n; ++r) {
    const ccoDevComm& dc = dcs[r];
    const int node = r / 2;
    EXPECT_EQ(dc.nNodes, 3);
    EXPECT_EQ(dc.node, node);
    // World.
    EXPECT_EQ(cco::team_size(dc, CCO_TEAM_WORLD), n);
    EXPECT_EQ(cco::team_rank(dc, CCO_TEAM_WORLD), r);
    EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_WORLD, 4), 4);
    // LSA: the two ranks of this node.
    EXPECT_EQ(cco::team_size(dc, CCO_TEAM_LSA), 2);
    EXPECT_EQ(cco::team_rank(dc, CCO_TEAM_LSA), r % 2);
    EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_LSA, 0), 2 * node);
    EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_LSA, 1), 2 * node + 1);
    EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_LSA, 2), -1);
    // Rail: the same LSA rank on each node.
    EXPECT_EQ(cco::team_size(dc, CCO_TEAM_RAIL), 3);
    EXPECT_EQ(cco::team_rank(dc, CCO_TEAM_RAIL), node);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_RAIL, i), 2 * i + r % 2);
    EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_RAIL, 3), -1);
    // Cross-node: everyone not on this node, in world order, and not this rank.
    EXPECT_EQ(cco::team_size(dc, CCO_TEAM_CROSSNODE), 4);
    EXPECT_EQ(cco::team_rank(dc, CCO_TEAM_CROSSNODE), -1);
    std::vector<int> others;
    for (int i = 0; i < 4; ++i) others.push_back(cco::team_world_rank(dc, CCO_TEAM_CROSSNODE, i));
    std::vector<int> want;
    for (int w = 0; w < n; ++w)
      if (w / 2 != node) want.push_back(w);
    EXPECT_EQ(others, want) << "rank " << r;
    EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_CROSSNODE, -1), -1);
    // A kind that does not exist.
    EXPECT_EQ(cco::team_size(dc, 9), 0);
    EXPECT_EQ(cco::team_rank(dc, 9), -1);
    EXPECT_EQ(cco::team_world_rank(dc, 9, 0), -1);
    // No GDA connections: an empty GDA team.
    EXPECT_EQ(cco::team_size(dc, CCO_TEAM_GDA), 0);
    EXPECT_EQ(cco::team_rank(dc, CCO_TEAM_GDA), -1);
    EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_GDA, 0), -1);
  }
}

// The GDA team follows the connection type: FULL is the world; CROSSNODE is the other
// nodes' ranks with this rank in its own node's place; RAIL is the rail.
TEST(TeamsOnHost, GdaTeamFollowsTheConnectionType) {
  constexpr int n = 6;
  for (int type : {CCO_GDA_CONNECTION_FULL, CCO_GDA_CONNECTION_CROSSNODE, CCO_GDA_CONNECTION_RAIL}) {
    const std::vector<ccoDevComm> dcs = MakeDevComms(n, 3, type);
    ASSERT_EQ(dcs.size(), size_t{n}) << "type " << type;
    for (int r = 0; r < n; ++r) {
      const ccoDevComm& dc = dcs[r];
      const int node = r / 2;
      std::vector<int> want;
      for (int w = 0; w < n; ++w) {
        if (type == CCO_GDA_CONNECTION_FULL) want.push_back(w);
        if (type == CCO_GDA_CONNECTION_CROSSNODE && (w / 2 != node || w == r)) want.push_back(w);
        if (type == CCO_GDA_CONNECTION_RAIL && w % 2 == r % 2) want.push_back(w);
      }
      const int size = cco::team_size(dc, CCO_TEAM_GDA);
      std::vector<int> got;
      for (int i = 0; i < size; ++i) got.push_back(cco::team_world_rank(dc, CCO_TEAM_GDA, i));
      EXPECT_EQ(got, want) << "type " << type << " rank " << r;
      const int me = cco::team_rank(dc, CCO_TEAM_GDA);
      ASSERT_GE(me, 0) << "type " << type << " rank " << r;
      EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_GDA, me), r);
      EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_GDA, size), -1);
      EXPECT_EQ(cco::team_world_rank(dc, CCO_TEAM_GDA, -1), -1);
    }
  }
}

}  // namespace
