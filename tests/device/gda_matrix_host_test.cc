// The GDA matrix on the CPU (gda_matrix_cells.h) on every connection type: FULL, CROSSNODE and
// RAIL on 2 to 8 ranks split into 2 to 4 virtual nodes, through the local backend, and through
// tcp between nodes (CCO_NET=tcp).
#include <gtest/gtest.h>

#include <string>

#include "cco/cco.h"
#include "tests/device/gda_matrix_cells.h"
#include "tests/device/gda_ranks.h"

namespace {

using namespace cco::gda_test;

struct Shape {
  int type, ranks, nodes;
  bool tcp = false;  // CCO_NET=tcp: every pair of ranks in different nodes goes through the tcp backend
};

class GdaMatrix : public ::testing::TestWithParam<Shape> {};

TEST_P(GdaMatrix, EveryCellExact) {
  const Shape s = GetParam();
  if (s.tcp) setenv("CCO_NET", "tcp", 1);
  EXPECT_EQ(RunGdaRanks(s.ranks, s.type, [](Rank& k) { return EveryCell(k); }, s.nodes), 0);
  unsetenv("CCO_NET");
}

INSTANTIATE_TEST_SUITE_P(Shapes, GdaMatrix,
                         ::testing::Values(Shape{CCO_GDA_CONNECTION_FULL, 2, 1}, Shape{CCO_GDA_CONNECTION_FULL, 4, 2},
                                           Shape{CCO_GDA_CONNECTION_CROSSNODE, 4, 2},
                                           Shape{CCO_GDA_CONNECTION_CROSSNODE, 6, 3},
                                           Shape{CCO_GDA_CONNECTION_RAIL, 4, 2}, Shape{CCO_GDA_CONNECTION_RAIL, 8, 4},
                                           Shape{CCO_GDA_CONNECTION_FULL, 2, 2, true},
                                           Shape{CCO_GDA_CONNECTION_FULL, 4, 2, true},
                                           Shape{CCO_GDA_CONNECTION_CROSSNODE, 6, 3, true},
                                           Shape{CCO_GDA_CONNECTION_RAIL, 8, 4, true}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           const char* type = info.param.type == CCO_GDA_CONNECTION_FULL        ? "full"
                                              : info.param.type == CCO_GDA_CONNECTION_CROSSNODE ? "crossnode"
                                                                                                : "rail";
                           return std::string(type) + "_" + std::to_string(info.param.ranks) + "ranks_" +
                                  std::to_string(info.param.nodes) + "nodes" + (info.param.tcp ? "_tcp" : "");
                         });

}  // namespace
