// SPDX-License-Identifier: MIT
// The GDA matrix on the CPU (gda_matrix_cells.h) on every connection type: FULL, CROSSNODE and
// RAIL on 2 to 8 ranks split into 2 to 4 virtual nodes, through the local backend, and through
// tcp between nodes (CCO_NET=tcp); peers of one node by the direct path (the default) and, in
// the shapes marked so, through the proxy only (CCO_GDA_DIRECT_MAX_BYTES=0).
#include <gtest/gtest.h>

#include <string>

#include "cco/cco.h"
#include "tests/device/gda_matrix_cells.h"
#include "tests/device/gda_ranks.h"

namespace {

using namespace cco::gda_test;

struct Shape {
  int type, ranks, nodes;
  bool tcp = false;    // CCO_NET=tcp: every pair of ranks in different nodes goes through the tcp backend
  bool direct = true;  // false: CCO_GDA_DIRECT_MAX_BYTES=0
};

// The shape's environment, for the test's duration.
struct ShapeEnv {
  explicit ShapeEnv(const Shape& s) {
    if (s.tcp) setenv("CCO_NET", "tcp", 1);
    if (!s.direct) setenv("CCO_GDA_DIRECT_MAX_BYTES", "0", 1);
  }
  ~ShapeEnv() {
    unsetenv("CCO_NET");
    unsetenv("CCO_GDA_DIRECT_MAX_BYTES");
  }
};

class GdaMatrix : public ::testing::TestWithParam<Shape> {};

TEST_P(GdaMatrix, EveryCellExact) {
  const Shape s = GetParam();
  ShapeEnv env(s);
  EXPECT_EQ(RunGdaRanks(s.ranks, s.type, [](Rank& k) { return EveryCell(k); }, s.nodes), 0);
}

// Two device communicators alive at once share the communicator's resource pool (and, over
// tcp, its window): each names itself on the wire, so a signal lands in its own device
// communicator's words, with its own value, never in the other's.
TEST_P(GdaMatrix, TwoDeviceCommsKeepTheirSignalsApart) {
  const Shape s = GetParam();
  if (s.type != CCO_GDA_CONNECTION_FULL) GTEST_SKIP() << "one connection type suffices";
  ShapeEnv env(s);
  EXPECT_EQ(RunGdaRanks(
                s.ranks, s.type,
                [](Rank& k) {
                  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
                  reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
                  ccoDevComm other;
                  CHECK_OR_FAIL(ccoDevCommCreate(k.comm, &reqs, &other) == ccoSuccess);
                  CHECK_OR_FAIL(other.resourceWindow == k.dc.resourceWindow && other.gdaSignals != k.dc.gdaSignals);
                  {
                    ccoGda<> first(k.dc, 0, 10'000'000'000ull), second(other, 0, 10'000'000'000ull);
                    const int right = (k.rank + 1) % k.n;
                    CHECK_OR_FAIL(first.signal(right, 1, CCO_SIGNAL_ADD, 3) == 0);
                    CHECK_OR_FAIL(second.signal(right, 1, CCO_SIGNAL_ADD, 70) == 0);
                    CHECK_OR_FAIL(first.flush() == 0 && second.flush() == 0);
                    CHECK_OR_FAIL(first.wait_signal(1, 3) == 0 && second.wait_signal(1, 70) == 0);
                    CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);                      // every signal landed
                    CHECK_OR_FAIL(first.read_signal(1) == 0 && second.read_signal(1) == 0);  // consumed, nothing extra
                  }
                  CHECK_OR_FAIL(ccoDevCommDestroy(k.comm, &other) == ccoSuccess);
                  return true;
                },
                s.nodes),
            0);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GdaMatrix,
    ::testing::Values(Shape{CCO_GDA_CONNECTION_FULL, 2, 1}, Shape{CCO_GDA_CONNECTION_FULL, 4, 2},
                      Shape{CCO_GDA_CONNECTION_FULL, 2, 1, false, false},
                      Shape{CCO_GDA_CONNECTION_FULL, 4, 2, false, false}, Shape{CCO_GDA_CONNECTION_CROSSNODE, 4, 2},
                      Shape{CCO_GDA_CONNECTION_CROSSNODE, 6, 3}, Shape{CCO_GDA_CONNECTION_RAIL, 4, 2},
                      Shape{CCO_GDA_CONNECTION_RAIL, 8, 4}, Shape{CCO_GDA_CONNECTION_FULL, 2, 2, true},
                      Shape{CCO_GDA_CONNECTION_FULL, 4, 2, true}, Shape{CCO_GDA_CONNECTION_CROSSNODE, 6, 3, true},
                      Shape{CCO_GDA_CONNECTION_RAIL, 8, 4, true}),
    [](const ::testing::TestParamInfo<Shape>& info) {
      const char* type = info.param.type == CCO_GDA_CONNECTION_FULL        ? "full"
                         : info.param.type == CCO_GDA_CONNECTION_CROSSNODE ? "crossnode"
                                                                           : "rail";
      return std::string(type) + "_" + std::to_string(info.param.ranks) + "ranks_" + std::to_string(info.param.nodes) +
             "nodes" + (info.param.tcp ? "_tcp" : "") + (info.param.direct ? "" : "_proxy");
    });

}  // namespace
