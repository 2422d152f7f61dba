// SPDX-License-Identifier: MIT
// What the GDA proxy's copies cost per operation: the host time to queue one copy on a
// stream and the time per copy once queued, for the ways a proxy can queue a run of puts.
//   copy_enqueue_probe [size_KiB=1024] [count=200] [plain]
// One process, VMM memory mapped as a communicator maps it (one reservation, two
// allocations). Each way queues `count` copies of `size` into distinct destinations:
//   memcpy          cuMemcpyAsync per copy (what the proxy does)
//   memcpy+write    the same, each followed by cuStreamWriteValue64 (a signal behind each put)
//   dtod            cuMemcpyDtoDAsync per copy (the types given, not looked up)
//   batch           one cuMemcpyBatchAsync for all of them
//   graph           the copies captured once and replayed (the anchor cco perf uses)
//   graph x1        a graph of one copy replayed per copy: what a launch costs alone
//   graph set xN    a graph of N copies instantiated once; per N copies, each node's
//                   addresses set (cuGraphExecMemcpyNodeSetParams) and one launch: what a proxy
//                   that keeps such a graph per queue would pay (N = 1 and 16)
//   set x1, write   graph set x1, each launch followed by cuStreamWriteValue64 (the ring's
//                   `consumed` behind a proxy's pass of one copy, as the proxy writes it now)
//   set x1+write    one graph of the copy and the write behind it (a memory-operation node),
//                   both nodes set before each launch: the pass as one submission
// and whether the driver lets a prepared node's operands move to another allocation (a proxy's
// copies go between many windows, each its own allocation).
// Built by tools/stage_device.sh (nvcc) into stage/bin.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include <chrono>
#include <vector>

#include "driver_check.h"

static double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Timing {
  double queueUs, totalUs;  // per copy: host time queueing, and until the stream drained
};

template <class Queue> static Timing Time(CUstream stream, int count, Queue queue) {
  CHECK(cuStreamSynchronize(stream));
  const double t0 = NowUs();
  queue();
  const double t1 = NowUs();
  CHECK(cuStreamSynchronize(stream));
  const double t2 = NowUs();
  return Timing{(t1 - t0) / count, (t2 - t0) / count};
}

int main(int argc, char** argv) {
  const size_t size = static_cast<size_t>(argc > 1 ? atol(argv[1]) : 1024) << 10;
  const int count = argc > 2 ? atoi(argv[2]) : 200;
  UseGpu0();
  size_t granularity = 0;
  const CUmemAllocationProp prop = PinnedOnGpu0();
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  const size_t span = (size * count + granularity - 1) / granularity * granularity;
  CUdeviceptr base;
  // "plain": cuMemAlloc'd memory instead, to tell a VMM mapping's cost from the copy call's.
  const bool plain = argc > 3 && argv[3][0] == 'p';
  if (plain) {
    CHECK(cuMemAlloc(&base, 2 * span));
  } else {
    CHECK(cuMemAddressReserve(&base, 2 * span, 0, 0, 0));
    MapFreshAt(base, span);         // sources
    MapFreshAt(base + span, span);  // destinations
  }
  CUdeviceptr word;
  CHECK(cuMemAlloc(&word, 8));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

  std::vector<CUdeviceptr> dsts(count), srcs(count);
  std::vector<size_t> sizes(count, size);
  for (int i = 0; i < count; ++i) srcs[i] = base + i * size, dsts[i] = base + span + i * size;
  auto memcpys = [&](bool write) {
    return [&, write] {
      for (int i = 0; i < count; ++i) {
        CHECK(cuMemcpyAsync(dsts[i], srcs[i], size, stream));
        if (write) CHECK(cuStreamWriteValue64(stream, word, i + 1, 0));
      }
    };
  };
  auto dtods = [&] {
    for (int i = 0; i < count; ++i) CHECK(cuMemcpyDtoDAsync(dsts[i], srcs[i], size, stream));
  };
  CUmemcpyAttributes attrs = {};
  attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  size_t attrsIndex = 0;
  auto batch = [&] {
    CHECK(cuMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), count, &attrs, &attrsIndex, 1, stream));
  };

  CUgraph graph;
  CUgraphExec exec;
  CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  memcpys(false)();
  CHECK(cuStreamEndCapture(stream, &graph));
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  auto replay = [&] { CHECK(cuGraphLaunch(exec, stream)); };

  // Graphs of n copies whose addresses are set before each launch.
  struct SetGraph {
    CUgraphExec exec;
    std::vector<CUgraphNode> nodes;
    std::vector<CUDA_MEMCPY3D> params;  // as captured: the memory types the driver chose are kept
  };
  auto setGraph = [&](int n) {
    SetGraph g;
    CUgraph captured;
    CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < n; ++i) CHECK(cuMemcpyAsync(dsts[i], srcs[i], size, stream));
    CHECK(cuStreamEndCapture(stream, &captured));
    size_t found = 0;
    CHECK(cuGraphGetNodes(captured, nullptr, &found));
    g.nodes.resize(found);
    CHECK(cuGraphGetNodes(captured, g.nodes.data(), &found));
    g.params.resize(found);
    for (size_t k = 0; k < found; ++k) CHECK(cuGraphMemcpyNodeGetParams(g.nodes[k], &g.params[k]));
    CHECK(cuGraphInstantiate(&g.exec, captured, 0));
    return g;
  };
  CUcontext context;
  CHECK(cuCtxGetCurrent(&context));
  auto setAndLaunch = [&](SetGraph& prepared) {
    return [&, g = &prepared] {  // the graph by pointer: the caller's, which outlives the call
      const int n = static_cast<int>(g->nodes.size());
      for (int first = 0; first + n <= count; first += n) {
        for (int k = 0; k < n; ++k) {
          CUDA_MEMCPY3D copy = g->params[k];
          copy.srcDevice = srcs[first + k];
          copy.dstDevice = dsts[first + k];
          CHECK(cuGraphExecMemcpyNodeSetParams(g->exec, g->nodes[k], &copy, context));
        }
        CHECK(cuGraphLaunch(g->exec, stream));
      }
    };
  };
  SetGraph set1 = setGraph(1), set16 = setGraph(count >= 16 ? 16 : 1), one = setGraph(1);
  // Whether the driver lets a node's addresses move at all: if not, say why and time the rest.
  CUDA_MEMCPY3D moved = set1.params[0];
  moved.srcDevice = srcs[count - 1], moved.dstDevice = dsts[count - 1];
  const CUresult settable = cuGraphExecMemcpyNodeSetParams(set1.exec, set1.nodes[0], &moved, context);
  if (settable != CUDA_SUCCESS) {
    printf("graph set: refused (%s; captured node: src type %d, dst type %d, width %zu, height %zu, depth %zu)\n",
           ResultText(settable), set1.params[0].srcMemoryType, set1.params[0].dstMemoryType,
           set1.params[0].WidthInBytes, set1.params[0].Height, set1.params[0].Depth);
  }
  const bool canSet = settable == CUDA_SUCCESS;
  // The operands moved across allocations: the source into the destinations' mapping and back.
  if (canSet) {
    CUDA_MEMCPY3D crossed = set1.params[0];
    crossed.srcDevice = dsts[count - 1], crossed.dstDevice = srcs[count - 1];
    printf("graph set across allocations: %s\n",
           ResultText(cuGraphExecMemcpyNodeSetParams(set1.exec, set1.nodes[0], &crossed, context)));
    crossed.srcDevice = word, crossed.dstDevice = srcs[0], crossed.WidthInBytes = 8;  // from a cuMemAlloc'd word
    printf("graph set from cuMemAlloc memory, 8 bytes: %s\n",
           ResultText(cuGraphExecMemcpyNodeSetParams(set1.exec, set1.nodes[0], &crossed, context)));
  }
  // The copy and a write behind it as one graph: both nodes set before each launch.
  struct CopyWriteGraph {
    CUgraphExec exec;
    CUgraphNode copy, write;
    CUDA_MEMCPY3D copyParams;
    CUDA_BATCH_MEM_OP_NODE_PARAMS writeParams;
    CUstreamBatchMemOpParams op;
  } cw = {};
  CUresult copyWrite = CUDA_SUCCESS;
  {
    CUgraph captured;
    CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK(cuMemcpyAsync(dsts[0], srcs[0], size, stream));
    copyWrite = cuStreamWriteValue64(stream, word, 1, 0);
    const CUresult ended = cuStreamEndCapture(stream, &captured);  // a refused write ends the capture failed
    if (copyWrite == CUDA_SUCCESS) copyWrite = ended;
    size_t found = 0;
    if (copyWrite == CUDA_SUCCESS) CHECK(cuGraphGetNodes(captured, nullptr, &found));
    std::vector<CUgraphNode> nodes(found);
    if (found != 0) CHECK(cuGraphGetNodes(captured, nodes.data(), &found));
    for (CUgraphNode node : nodes) {
      CUgraphNodeType type;
      CHECK(cuGraphNodeGetType(node, &type));
      if (type == CU_GRAPH_NODE_TYPE_MEMCPY) cw.copy = node;
      if (type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) cw.write = node;
    }
    if (copyWrite == CUDA_SUCCESS && (cw.copy == nullptr || cw.write == nullptr)) copyWrite = CUDA_ERROR_NOT_FOUND;
    if (copyWrite == CUDA_SUCCESS) {
      CHECK(cuGraphMemcpyNodeGetParams(cw.copy, &cw.copyParams));
      CHECK(cuGraphBatchMemOpNodeGetParams(cw.write, &cw.writeParams));
      cw.op = cw.writeParams.paramArray[0];  // the driver's array lives with the graph: keep a copy
      cw.writeParams.paramArray = &cw.op;
      CHECK(cuGraphInstantiate(&cw.exec, captured, 0));
    }
  }
  printf("graph of a copy and a write: %s\n", ResultText(copyWrite));
  auto setCopyWrite = [&] {
    for (int i = 0; i < count; ++i) {
      CUDA_MEMCPY3D copy = cw.copyParams;
      copy.srcDevice = srcs[i];
      copy.dstDevice = dsts[i];
      CHECK(cuGraphExecMemcpyNodeSetParams(cw.exec, cw.copy, &copy, context));
      cw.op.writeValue.value64 = i + 1;
      CHECK(cuGraphExecBatchMemOpNodeSetParams(cw.exec, cw.write, &cw.writeParams));
      CHECK(cuGraphLaunch(cw.exec, stream));
    }
  };
  auto setThenWrite = [&] {
    for (int i = 0; i < count; ++i) {
      CUDA_MEMCPY3D copy = set1.params[0];
      copy.srcDevice = srcs[i];
      copy.dstDevice = dsts[i];
      CHECK(cuGraphExecMemcpyNodeSetParams(set1.exec, set1.nodes[0], &copy, context));
      CHECK(cuGraphLaunch(set1.exec, stream));
      CHECK(cuStreamWriteValue64(stream, word, i + 1, 0));
    }
  };
  // A graph of one copy, replayed: the launch's own cost, nothing set.
  auto replayOne = [&] {
    for (int i = 0; i < count; ++i) CHECK(cuGraphLaunch(one.exec, stream));
  };
  const auto none = [] {};

  printf("%zu KiB x %d copies, one stream, %s memory\n", size >> 10, count, plain ? "cuMemAlloc" : "VMM");
  printf("%-14s %14s %14s %10s\n", "way", "queue us/copy", "total us/copy", "GB/s");
  for (int round = 0; round < 2; ++round) {  // the first round warms every path up
    const struct {
      const char* name;
      Timing t;
      bool ran;
    } rows[] = {{"memcpy", Time(stream, count, memcpys(false)), true},
                {"memcpy+write", Time(stream, count, memcpys(true)), true},
                {"dtod", Time(stream, count, dtods), true},
                {"batch", Time(stream, count, batch), true},
                {"graph", Time(stream, count, replay), true},
                {"graph x1", Time(stream, count, replayOne), true},
                {"graph set x1", canSet ? Time(stream, count, setAndLaunch(set1)) : Time(stream, count, none), canSet},
                {"graph set x16",
                 canSet ? Time(stream, count / 16 * 16, setAndLaunch(set16)) : Time(stream, count, none), canSet},
                {"set x1, write", canSet ? Time(stream, count, setThenWrite) : Time(stream, count, none), canSet},
                {"set x1+write",
                 canSet && copyWrite == CUDA_SUCCESS ? Time(stream, count, setCopyWrite) : Time(stream, count, none),
                 canSet && copyWrite == CUDA_SUCCESS}};
    if (round == 0) continue;
    for (const auto& r : rows) {
      if (!r.ran) {
        printf("%-14s %14s\n", r.name, "refused");
        continue;
      }
      printf("%-14s %14.2f %14.2f %10.1f\n", r.name, r.t.queueUs, r.t.totalUs, size / r.t.totalUs / 1e3);
    }
  }
  return 0;
}
