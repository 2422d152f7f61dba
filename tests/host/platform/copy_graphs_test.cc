// SPDX-License-Identifier: MIT
// CopyGraphs (platform/cuda_copy_graphs.h) over a fake driver whose "device addresses" are host
// pointers: a stream's graphs are made once, for every shape, by PrepareStream (and nothing is
// made afterwards); a run sets the nodes that do not hold its copies and the node of writes, and
// launches; the writes land after every copy; a run of a shape the driver refused, or on a
// stream never prepared, goes one copy at a time (every byte still lands, every write after
// them), and Forget frees a stream's graphs.
#include "platform/cuda_copy_graphs.h"

#include <gtest/gtest.h>
#include <string.h>

#include <map>
#include <vector>

namespace cco {
namespace gpu {
namespace {

struct FakeNode {
  Memcpy3D params;
};
struct FakeWrites {
  std::vector<BatchWrite64> ops;
};
struct FakeGraph {
  std::vector<FakeNode*> nodes;
  FakeWrites* writes = nullptr;
};
struct FakeExec {
  FakeGraph* graph;
  std::vector<Memcpy3D> params;  // per node, as the exec holds them
  std::vector<BatchWrite64> writes;
};

// The fake driver's state: one test at a time.
struct Fake {
  int graphs = 0, execs = 0;  // live objects
  int copies = 0, launches = 0, builds = 0, sets = 0, uploads = 0;
  int writeSets = 0, batches = 0;  // node-of-writes sets, cuStreamBatchMemOp calls
  int memoryType = 4;              // what the driver says a node's operands are (CU_MEMORYTYPE_UNIFIED)
  bool refuseSet = false;          // cuGraphExecMemcpyNodeSetParams fails
  bool refuseAdd = false;          // cuGraphAddMemcpyNode fails
  bool refuseWriteNode = false;    // cuGraphAddBatchMemOpNode fails
  bool refuseWriteSet = false;     // cuGraphExecBatchMemOpNodeSetParams fails
  std::vector<void*> launchedOn;
} fake;

void Move(const Memcpy3D& p) {
  memcpy(reinterpret_cast<void*>(p.dstDevice), reinterpret_cast<const void*>(p.srcDevice), p.WidthInBytes);
}

void Write(const BatchWrite64& op) {
  EXPECT_EQ(op.operation, kStreamMemOpWriteValue64);
  EXPECT_EQ(op.flags, 0u);  // behind the stream's earlier work
  *reinterpret_cast<uint64_t*>(op.address) = op.value;
}

CopyGraphCalls FakeCalls() {
  CopyGraphCalls c;
  c.ctxGetCurrent = [](void** context) {
    *context = &fake;
    return 0;
  };
  c.copyAsync = [](DeviceAddress dst, DeviceAddress src, size_t size, void*) {
    ++fake.copies;
    Memcpy3D p = {};
    p.dstDevice = dst, p.srcDevice = src, p.WidthInBytes = size;
    Move(p);
    return 0;
  };
  c.graphCreate = [](void** graph, unsigned flags) {
    EXPECT_EQ(flags, 0u);
    ++fake.graphs, ++fake.builds;
    *graph = new FakeGraph;
    return 0;
  };
  c.addMemcpyNode = [](void** node, void* graph, void* const*, size_t dependencies, const Memcpy3D* params,
                       void* context) {
    EXPECT_EQ(dependencies, 0u);  // no edges: the copies of a run in no order
    EXPECT_EQ(context, &fake);
    if (fake.refuseAdd) return 1;
    FakeNode* n = new FakeNode{*params};
    n->params.srcMemoryType = n->params.dstMemoryType = fake.memoryType;
    static_cast<FakeGraph*>(graph)->nodes.push_back(n);
    *node = n;
    return 0;
  };
  c.memcpyNodeGetParams = [](void* node, Memcpy3D* params) {
    *params = static_cast<FakeNode*>(node)->params;
    return 0;
  };
  c.instantiate = [](void** exec, void* graph, unsigned long long) {
    FakeGraph* g = static_cast<FakeGraph*>(graph);
    FakeExec* e = new FakeExec{g, {}, {}};
    for (FakeNode* n : g->nodes) e->params.push_back(n->params);
    if (g->writes) e->writes = g->writes->ops;
    ++fake.execs;
    *exec = e;
    return 0;
  };
  c.execMemcpyNodeSetParams = [](void* exec, void* node, const Memcpy3D* params, void* context) {
    EXPECT_EQ(context, &fake);
    if (fake.refuseSet) return 1;
    FakeExec* e = static_cast<FakeExec*>(exec);
    for (size_t i = 0; i < e->graph->nodes.size(); ++i)
      if (e->graph->nodes[i] == node) e->params[i] = *params, ++fake.sets;
    return 0;
  };
  c.addBatchMemOpNode = [](void** node, void* graph, void* const* dependencies, size_t count,
                           const BatchMemOpNodeParams* params) {
    FakeGraph* g = static_cast<FakeGraph*>(graph);
    EXPECT_EQ(count, g->nodes.size());  // behind every copy node
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(dependencies[i], g->nodes[i]);
    EXPECT_EQ(params->context, &fake);
    if (fake.refuseWriteNode) return 1;
    g->writes = new FakeWrites{std::vector<BatchWrite64>(params->ops, params->ops + params->count)};
    *node = g->writes;
    return 0;
  };
  c.execBatchMemOpNodeSetParams = [](void* exec, void* node, const BatchMemOpNodeParams* params) {
    FakeExec* e = static_cast<FakeExec*>(exec);
    EXPECT_EQ(node, e->graph->writes);
    EXPECT_EQ(params->context, &fake);
    EXPECT_EQ(params->count, e->writes.size());  // a node's count cannot change
    if (fake.refuseWriteSet) return 1;
    e->writes.assign(params->ops, params->ops + params->count);
    ++fake.writeSets;
    return 0;
  };
  c.streamBatchMemOp = [](void*, unsigned count, BatchWrite64* ops, unsigned flags) {
    EXPECT_EQ(flags, 0u);
    ++fake.batches;
    for (unsigned i = 0; i < count; ++i) Write(ops[i]);
    return 0;
  };
  c.upload = [](void* exec, void*) {
    EXPECT_NE(exec, nullptr);
    ++fake.uploads;
    return 0;
  };
  c.launch = [](void* exec, void* stream) {
    ++fake.launches;
    fake.launchedOn.push_back(stream);
    FakeExec* e = static_cast<FakeExec*>(exec);
    for (const Memcpy3D& p : e->params) Move(p);
    for (const BatchWrite64& op : e->writes) Write(op);  // after every copy
    return 0;
  };
  c.execDestroy = [](void* exec) {
    --fake.execs;
    delete static_cast<FakeExec*>(exec);
    return 0;
  };
  c.graphDestroy = [](void* graph) {
    --fake.graphs;
    for (FakeNode* n : static_cast<FakeGraph*>(graph)->nodes) delete n;
    delete static_cast<FakeGraph*>(graph)->writes;
    delete static_cast<FakeGraph*>(graph);
    return 0;
  };
  return c;
}

// Graphs made by PrepareStream: every count up to kMaxNodes, each with 0 to kPreparedWrites writes.
constexpr int kShapes = CopyGraphs::kMaxNodes * (CopyGraphs::kPreparedWrites + 1);

class CopyGraphsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake = Fake();
    for (size_t i = 0; i < sizeof(from); ++i) from[i] = static_cast<unsigned char>(i * 13 + 5);
    memset(to, 0, sizeof(to));
  }
  void TearDown() override {
    graphs.Forget(streamA);
    graphs.Forget(streamB);
    EXPECT_EQ(fake.graphs, 0);  // nothing leaked
    EXPECT_EQ(fake.execs, 0);
  }
  // streamA's graphs (and streamB's), made before any run, as the platform makes them.
  void Prepare(bool both = false) {
    ASSERT_EQ(graphs.PrepareStream(streamA, reinterpret_cast<DeviceAddress>(scratch)), 0);
    if (both) {
      ASSERT_EQ(graphs.PrepareStream(streamB, reinterpret_cast<DeviceAddress>(scratch)), 0);
    }
    made = fake.builds;
  }
  // `count` copies of `size` bytes: piece k of `from` (offset `shift` + 64 k) to piece
  // (count - 1 - k) of `to`.
  DriverResult Run(void* stream, unsigned count, size_t size, size_t shift, bool reversed = false, unsigned writes = 0,
                   uint64_t value = 0) {
    std::vector<DeviceAddress> dsts, srcs;
    std::vector<uint64_t> sizes;
    for (unsigned j = 0; j < count; ++j) {
      const unsigned k = reversed ? count - 1 - j : j;
      srcs.push_back(reinterpret_cast<DeviceAddress>(from + shift + 64 * k));
      dsts.push_back(reinterpret_cast<DeviceAddress>(to + 64 * (count - 1 - k)));
      sizes.push_back(size);
    }
    // Write j: value + j into words[j]; the first also into to's first word, which a copy
    // writes too (the write must land after it).
    std::vector<DeviceAddress> addresses;
    std::vector<uint64_t> values;
    for (unsigned j = 0; j < writes; ++j) {
      addresses.push_back(reinterpret_cast<DeviceAddress>(j == 0 ? reinterpret_cast<uint64_t*>(to) : words + j));
      values.push_back(value + j);
    }
    return graphs.Copy(stream, dsts.data(), srcs.data(), sizes.data(), count, addresses.data(), values.data(), writes);
  }
  void ExpectLanded(unsigned count, size_t size, size_t shift) {
    for (unsigned k = 0; k < count; ++k)
      ASSERT_EQ(memcmp(to + 64 * (count - 1 - k), from + shift + 64 * k, size), 0) << "piece " << k;
  }
  void ExpectWritten(unsigned writes, uint64_t value) {
    uint64_t first;
    memcpy(&first, to, 8);
    EXPECT_EQ(first, value);
    for (unsigned j = 1; j < writes; ++j) EXPECT_EQ(words[j], value + j) << j;
  }
  // What the driver was asked for: graph launches, copies one by one, batches of writes.
  void ExpectCalls(int launches, int copies, int batches) {
    EXPECT_EQ(fake.launches, launches);
    EXPECT_EQ(fake.copies, copies);
    EXPECT_EQ(fake.batches, batches);
  }
  // Every piece but the first word of `to`, which the run's first write takes after the copies.
  void ExpectPiecesBelowTheWrite(unsigned count, size_t shift) {
    for (unsigned k = 0; k + 1 < count; ++k)
      ASSERT_EQ(memcmp(to + 64 * (count - 1 - k), from + shift + 64 * k, 64), 0) << "piece " << k;
    ASSERT_EQ(memcmp(to + 8, from + shift + 64 * (count - 1) + 8, 56), 0);
  }

  alignas(8) unsigned char from[64 * 40], to[64 * 40];
  uint64_t words[20] = {};
  uint64_t scratch[CopyGraphs::kScratchBytes / 8] = {};
  int made = 0;  // graphs built by Prepare: none may be built after
  void* streamA = reinterpret_cast<void*>(0x100);
  void* streamB = reinterpret_cast<void*>(0x200);
  CopyGraphs graphs{FakeCalls()};
};

TEST_F(CopyGraphsTest, EveryShapeIsMadeAheadAndARunOnlySetsAndLaunches) {
  Prepare(/*both=*/true);
  EXPECT_EQ(made, 2 * kShapes);
  EXPECT_EQ(fake.uploads, 2 * kShapes);  // each uploaded when made: a first launch allocates nothing
  ASSERT_EQ(Run(streamA, 8, 64, 0), 0);
  ExpectLanded(8, 64, 0);
  EXPECT_EQ(fake.launches, 1);
  EXPECT_EQ(fake.sets, 8);               // the nodes held the scratch copies
  EXPECT_EQ(fake.copies, 0);             // none went one by one
  ASSERT_EQ(Run(streamA, 8, 40, 3), 0);  // other sources and sizes: the same graph
  ExpectLanded(8, 40, 3);
  for (unsigned k = 0; k < 8; ++k)  // and no byte more: the rest of each piece is the first run's
    ASSERT_EQ(memcmp(to + 64 * (7 - k) + 40, from + 64 * k + 40, 24), 0) << "piece " << k;
  EXPECT_EQ(fake.sets, 16);
  EXPECT_EQ(fake.launches, 2);
  ASSERT_EQ(Run(streamA, 5, 64, 1), 0);  // another count: another graph
  ASSERT_EQ(Run(streamB, 8, 64, 2), 0);  // another stream: another graph
  ExpectLanded(8, 64, 2);
  EXPECT_EQ(fake.launchedOn.back(), streamB);
  EXPECT_EQ(graphs.launches(), 4u);
  EXPECT_EQ(graphs.refusals(), 0u);
  graphs.Forget(streamA);  // streamA's graphs freed, streamB's kept
  EXPECT_EQ(fake.graphs, kShapes);
  ASSERT_EQ(Run(streamB, 8, 10, 7), 0);
  ExpectLanded(8, 10, 7);
  EXPECT_EQ(fake.builds, made);
  for (uint64_t w : scratch) EXPECT_EQ(w, 0u);  // never launched with the scratch copies
}

TEST_F(CopyGraphsTest, AStreamPreparedTwiceKeepsOneSetOfGraphs) {
  Prepare();
  Prepare();
  EXPECT_EQ(fake.graphs, kShapes);
  EXPECT_EQ(fake.execs, kShapes);
}

TEST_F(CopyGraphsTest, ARunOnAStreamNeverPreparedGoesOneByOne) {
  Prepare();
  ASSERT_EQ(Run(streamB, 4, 64, 0, false, 2, 9), 0);
  ExpectWritten(2, 9);
  ExpectPiecesBelowTheWrite(4, 0);
  ExpectCalls(0, 4, 1);          // one copy a call, the writes in a batch after
  EXPECT_EQ(fake.builds, made);  // nothing made while serving: kernels may be waiting
  EXPECT_EQ(graphs.refusals(), 1u);
}

TEST_F(CopyGraphsTest, LongRunsGoAsSeveralLaunches) {
  Prepare();
  ASSERT_EQ(Run(streamA, 33, 64, 0), 0);  // 16 + 16 + 1
  ExpectLanded(33, 64, 0);
  EXPECT_EQ(fake.launches, 3);
  EXPECT_EQ(fake.copies, 0);
}

TEST_F(CopyGraphsTest, RepeatedCopiesCostALaunchAlone) {
  Prepare();
  ASSERT_EQ(Run(streamA, 8, 64, 0), 0);
  for (unsigned char& b : from) b = static_cast<unsigned char>(b * 3 + 1);  // new bytes, same copies
  ASSERT_EQ(Run(streamA, 8, 64, 0, /*reversed=*/true), 0);                  // in another order
  ExpectLanded(8, 64, 0);                                                   // copied again, by the graph as it stood
  EXPECT_EQ(fake.sets, 8);                                                  // the first run's alone
  EXPECT_EQ(fake.launches, 2);
}

TEST_F(CopyGraphsTest, APartlyRepeatedRunSetsOnlyItsNewCopies) {
  Prepare();
  const auto at = [](unsigned char* base, size_t offset) { return reinterpret_cast<DeviceAddress>(base + offset); };
  DeviceAddress dsts[4] = {at(to, 0), at(to, 64), at(to, 128), at(to, 192)};
  DeviceAddress srcs[4] = {at(from, 0), at(from, 64), at(from, 128), at(from, 192)};
  uint64_t sizes[4] = {64, 64, 64, 64};
  ASSERT_EQ(graphs.Copy(streamA, dsts, srcs, sizes, 4), 0);
  EXPECT_EQ(fake.sets, 4);
  // One copy as before (given in another place of the run), one with the same ends but fewer
  // bytes, two new ones: three sets.
  DeviceAddress dsts2[4] = {at(to, 256), at(to, 192), at(to, 320), at(to, 0)};
  DeviceAddress srcs2[4] = {at(from, 7), at(from, 192), at(from, 9), at(from, 0)};
  uint64_t sizes2[4] = {50, 40, 30, 64};
  for (unsigned char& b : from) b = static_cast<unsigned char>(b ^ 0x5a);
  ASSERT_EQ(graphs.Copy(streamA, dsts2, srcs2, sizes2, 4), 0);
  EXPECT_EQ(fake.sets, 7);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(memcmp(reinterpret_cast<void*>(dsts2[i]), reinterpret_cast<void*>(srcs2[i]), sizes2[i]), 0) << i;
  EXPECT_EQ(to[256 + 50], 0);  // no byte more
  EXPECT_EQ(to[320 + 30], 0);
  EXPECT_EQ(to[192 + 40], from[192 + 40] ^ 0x5a);  // the shortened copy's tail: the first run's bytes
}

TEST_F(CopyGraphsTest, RefusedOperandsGoOneByOneAndTheGraphStays) {
  Prepare();
  ASSERT_EQ(Run(streamA, 4, 64, 0), 0);
  fake.refuseSet = true;
  ASSERT_EQ(Run(streamA, 4, 50, 9), 0);
  ExpectLanded(4, 50, 9);
  EXPECT_EQ(fake.copies, 4);
  EXPECT_EQ(graphs.refusals(), 1u);
  fake.refuseSet = false;  // a later run may use the graph again
  ASSERT_EQ(Run(streamA, 4, 30, 4), 0);
  ExpectLanded(4, 30, 4);
  EXPECT_EQ(fake.launches, 2);
}

TEST_F(CopyGraphsTest, NodesWithHostOperandsAreNeverMoved) {
  fake.memoryType = 1;  // CU_MEMORYTYPE_HOST: srcHost would stay what the node holds
  EXPECT_NE(graphs.PrepareStream(streamA, reinterpret_cast<DeviceAddress>(scratch)), 0);
  EXPECT_EQ(fake.graphs, 0);  // the refused ones freed
  ASSERT_EQ(Run(streamA, 4, 64, 0), 0);
  ExpectLanded(4, 64, 0);
  ASSERT_EQ(Run(streamA, 4, 64, 5), 0);
  ExpectLanded(4, 64, 5);
  EXPECT_EQ(fake.launches, 0);
  EXPECT_EQ(fake.copies, 8);
  EXPECT_EQ(fake.builds, kShapes);  // the refusals are remembered: not built again
  EXPECT_EQ(graphs.refusals(), 2u);
}

TEST_F(CopyGraphsTest, GraphsTheDriverRefusesAreRemembered) {
  fake.refuseAdd = true;
  EXPECT_NE(graphs.PrepareStream(streamA, reinterpret_cast<DeviceAddress>(scratch)), 0);
  fake.refuseAdd = false;
  ASSERT_EQ(Run(streamA, 3, 64, 0), 0);
  ExpectLanded(3, 64, 0);
  EXPECT_EQ(fake.launches, 0);
  EXPECT_EQ(fake.copies, 3);
  EXPECT_EQ(fake.builds, kShapes);
}

TEST_F(CopyGraphsTest, CopiesAndTheWritesBehindThemAreOneLaunch) {
  Prepare();
  ASSERT_EQ(Run(streamA, 3, 64, 0, false, 3, 100), 0);
  ExpectWritten(3, 100);  // the first after the copy that writes the same word
  ExpectPiecesBelowTheWrite(3, 0);
  EXPECT_EQ(fake.launches, 1);
  EXPECT_EQ(fake.writeSets, 1);
  EXPECT_EQ(fake.copies + fake.batches, 0);
  ASSERT_EQ(Run(streamA, 3, 64, 0, false, 3, 200), 0);  // the same copies, new values: the node of writes set
  ExpectWritten(3, 200);
  EXPECT_EQ(fake.sets, 3);
  EXPECT_EQ(fake.writeSets, 2);
  EXPECT_EQ(fake.launches, 2);
  ASSERT_EQ(Run(streamA, 3, 64, 0), 0);  // the same copies without writes: a graph of their own
  ExpectLanded(3, 64, 0);
  EXPECT_EQ(fake.sets, 6);
  EXPECT_EQ(fake.batches, 0);
  EXPECT_EQ(graphs.refusals(), 0u);
}

TEST_F(CopyGraphsTest, TheWritesGoWithTheLastLaunchOfALongRun) {
  Prepare();
  ASSERT_EQ(Run(streamA, 20, 64, 0, false, 2, 50), 0);  // 16 + 4, the writes after the 4
  ExpectWritten(2, 50);
  ExpectPiecesBelowTheWrite(20, 0);
  EXPECT_EQ(fake.launches, 2);
  EXPECT_EQ(fake.batches, 0);
}

TEST_F(CopyGraphsTest, MoreWritesThanANodeHoldsGoBehindTheLaunch) {
  Prepare();
  ASSERT_EQ(Run(streamA, 2, 64, 0, false, CopyGraphs::kPreparedWrites + 2, 70), 0);
  ExpectWritten(CopyGraphs::kPreparedWrites + 2, 70);
  ExpectPiecesBelowTheWrite(2, 0);
  ExpectCalls(1, 0, 1);  // the copies' graph, then one batch of writes
}

TEST_F(CopyGraphsTest, ANodeOfWritesTheDriverRefusesSendsWritesApart) {
  fake.refuseWriteNode = true;
  EXPECT_NE(graphs.PrepareStream(streamA, reinterpret_cast<DeviceAddress>(scratch)), 0);
  fake.refuseWriteNode = false;
  ASSERT_EQ(Run(streamA, 2, 64, 0, false, 2, 10), 0);
  ExpectWritten(2, 10);
  ExpectPiecesBelowTheWrite(2, 0);
  ExpectCalls(1, 0, 1);  // the copies in their graph, the writes in a batch after
}

TEST_F(CopyGraphsTest, RefusedValuesSendTheRunOneByOne) {
  Prepare();
  ASSERT_EQ(Run(streamA, 2, 64, 0, false, 1, 7), 0);
  fake.refuseWriteSet = true;
  ASSERT_EQ(Run(streamA, 2, 64, 3, false, 1, 8), 0);
  ExpectWritten(1, 8);
  ExpectPiecesBelowTheWrite(2, 3);
  ExpectCalls(1, 2, 1);  // the first run launched; the refused one a copy a call, then its writes
  EXPECT_EQ(graphs.refusals(), 1u);
}

}  // namespace
}  // namespace gpu
}  // namespace cco
