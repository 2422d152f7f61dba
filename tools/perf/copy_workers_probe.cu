// SPDX-License-Identifier: MIT
// Whether a proxy's copies queue faster from several host threads than from one: the driver's
// host time per cuMemcpyAsync (5 us on the H100 machine) bounds the puts of one proxy thread
// to a third of the copy engine's rate at 1 MiB.
//   copy_workers_probe [size_KiB=1024] [count=384]
// One process, VMM memory mapped as a communicator maps it. For T = 1, 2, 4 and 8 threads,
// each with a stream of its own, the `count` copies of `size` into distinct destinations are
// split between the threads, which start together; per copy: the host time until the last
// thread has queued its share, and until every stream drained. The ways:
//   memcpy, shared ctx    cuMemcpyAsync, every thread in the primary context
//   memcpy, own ctx       cuMemcpyAsync, each thread in a context of its own (cuCtxCreate),
//                         as the proxy's own context is made: no lock of one context shared
//   3d typed, own ctx     cuMemcpy3DAsync with both memory types given (nothing looked up)
//   graph set x16         per 16 copies, each node of a prepared graph set and one launch
//                         (CCO_COPY_GRAPHS' way), each thread in a context of its own
// and, once, the copies captured into one graph and replayed on one stream (cco perf's
// memcpy anchor): what the copy engine does with no host cost at all.
// Built by tools/stage_device.sh (nvcc) into stage/bin.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "driver_check.h"

static double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

enum class Way { kMemcpyShared, kMemcpyOwn, kTyped3d, kGraphSet16 };
constexpr int kGraphNodes = 16;

struct Copies {
  std::vector<CUdeviceptr> srcs, dsts;
  size_t size;
};

// One thread's share of the copies, its context and stream, and (for kGraphSet16) its graph.
class Worker {
 public:
  Worker(CUcontext primary, CUdevice dev, Way way, const Copies& copies) : way_(way), copies_(copies) {
    if (way == Way::kMemcpyShared || way == Way::kGraphSet16) {
      context_ = primary;
    } else {
      CUctxCreateParams params = {};
      CHECK(cuCtxCreate(&context_, &params, 0, dev));
      ownContext_ = true;
    }
    CHECK(cuCtxSetCurrent(context_));
    CHECK(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
    if (way == Way::kGraphSet16) PrepareGraph();
  }
  ~Worker() {
    CHECK(cuCtxSetCurrent(context_));
    if (exec_ != nullptr) CHECK(cuGraphExecDestroy(exec_));
    if (graph_ != nullptr) CHECK(cuGraphDestroy(graph_));
    CHECK(cuStreamDestroy(stream_));
    if (ownContext_) CHECK(cuCtxDestroy(context_));
  }
  // Queues copies [first, last); called on the thread that runs this worker.
  void Queue(int first, int last) {
    CHECK(cuCtxSetCurrent(context_));
    const size_t size = copies_.size;
    switch (way_) {
      case Way::kMemcpyShared:
      case Way::kMemcpyOwn:
        for (int i = first; i < last; ++i) CHECK(cuMemcpyAsync(copies_.dsts[i], copies_.srcs[i], size, stream_));
        break;
      case Way::kTyped3d:
        for (int i = first; i < last; ++i) {
          CUDA_MEMCPY3D c = {};
          c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
          c.srcDevice = copies_.srcs[i];
          c.dstDevice = copies_.dsts[i];
          c.WidthInBytes = size;
          c.Height = c.Depth = 1;
          CHECK(cuMemcpy3DAsync(&c, stream_));
        }
        break;
      case Way::kGraphSet16:
        for (int at = first; at < last; at += kGraphNodes) {
          for (int k = 0; k < kGraphNodes && at + k < last; ++k) {
            CUDA_MEMCPY3D c = params_[k];
            c.srcDevice = copies_.srcs[at + k];
            c.dstDevice = copies_.dsts[at + k];
            CHECK(cuGraphExecMemcpyNodeSetParams(exec_, nodes_[k], &c, context_));
          }
          CHECK(cuGraphLaunch(exec_, stream_));
        }
        break;
    }
  }
  void Drain() {
    CHECK(cuCtxSetCurrent(context_));
    CHECK(cuStreamSynchronize(stream_));
  }

 private:
  void PrepareGraph() {
    CUgraph captured;
    CHECK(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int k = 0; k < kGraphNodes; ++k) CHECK(cuMemcpyAsync(copies_.dsts[k], copies_.srcs[k], copies_.size, stream_));
    CHECK(cuStreamEndCapture(stream_, &captured));
    size_t found = kGraphNodes;
    nodes_.resize(found);
    CHECK(cuGraphGetNodes(captured, nodes_.data(), &found));
    params_.resize(found);
    for (size_t k = 0; k < found; ++k) CHECK(cuGraphMemcpyNodeGetParams(nodes_[k], &params_[k]));
    CHECK(cuGraphInstantiate(&exec_, captured, 0));
    graph_ = captured;  // the nodes set before each launch are this graph's: kept while the exec is
  }

  Way way_;
  const Copies& copies_;
  CUcontext context_ = nullptr;
  bool ownContext_ = false;
  CUstream stream_ = nullptr;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<CUgraphNode> nodes_;
  std::vector<CUDA_MEMCPY3D> params_;
};

struct Timing {
  double queueUs, totalUs;  // per copy
};

// The threads start together (a spin on `go`), queue their shares, and drain.
static Timing Run(std::vector<Worker*>& workers, int count) {
  const int threads = static_cast<int>(workers.size());
  std::atomic<int> ready{0}, queued{0};
  std::atomic<bool> go{false};
  std::vector<double> queuedAt(threads);
  std::vector<std::thread> pool;
  const int share = count / threads / kGraphNodes * kGraphNodes;  // whole graphs for every way
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      workers[t]->Queue(t * share, (t + 1) * share);
      queuedAt[t] = NowUs();
      queued.fetch_add(1);
    });
  }
  while (ready.load() != threads) {
  }
  const double t0 = NowUs();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  double lastQueued = t0;
  for (double at : queuedAt) lastQueued = at > lastQueued ? at : lastQueued;
  for (Worker* w : workers) w->Drain();
  const double t2 = NowUs();
  const int done = share * threads;
  return Timing{(lastQueued - t0) / done, (t2 - t0) / done};
}

int main(int argc, char** argv) {
  const size_t size = static_cast<size_t>(argc > 1 ? atol(argv[1]) : 1024) << 10;
  const int count = argc > 2 ? atoi(argv[2]) : 384;
  if (count < 8 * kGraphNodes) {
    fprintf(stderr, "count must be at least %d (8 threads of one graph each)\n", 8 * kGraphNodes);
    return 2;
  }
  const CUcontext primary = UseGpu0();
  CUdevice dev;
  CHECK(cuCtxGetDevice(&dev));
  size_t granularity = 0;
  const CUmemAllocationProp prop = PinnedOnGpu0();
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  const size_t span = (size * count + granularity - 1) / granularity * granularity;
  CUdeviceptr base;
  CHECK(cuMemAddressReserve(&base, 2 * span, 0, 0, 0));
  MapFreshAt(base, span);
  MapFreshAt(base + span, span);
  Copies copies{std::vector<CUdeviceptr>(count), std::vector<CUdeviceptr>(count), size};
  for (int i = 0; i < count; ++i) copies.srcs[i] = base + i * size, copies.dsts[i] = base + span + i * size;

  // The anchor: every copy captured once, replayed on one stream.
  CHECK(cuCtxSetCurrent(primary));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUgraph graph;
  CUgraphExec exec;
  CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (int i = 0; i < count; ++i) CHECK(cuMemcpyAsync(copies.dsts[i], copies.srcs[i], size, stream));
  CHECK(cuStreamEndCapture(stream, &graph));
  CHECK(cuGraphInstantiate(&exec, graph, 0));
  double anchorUs = 1e30;
  for (int i = 0; i < 4; ++i) {  // the first replay uploads the graph
    CHECK(cuStreamSynchronize(stream));
    const double t0 = NowUs();
    CHECK(cuGraphLaunch(exec, stream));
    CHECK(cuStreamSynchronize(stream));
    const double us = (NowUs() - t0) / count;
    if (i > 0 && us < anchorUs) anchorUs = us;
  }
  printf("%zu KiB x %d copies, VMM memory; one graph of them all replayed: %.2f us/copy, %.1f GB/s\n", size >> 10,
         count, anchorUs, size / anchorUs / 1e3);
  printf("%-18s %7s %14s %14s %10s %12s\n", "way", "threads", "queue us/copy", "total us/copy", "GB/s", "anchor/this");

  const struct {
    const char* name;
    Way way;
  } ways[] = {{"memcpy, shared ctx", Way::kMemcpyShared},
              {"memcpy, own ctx", Way::kMemcpyOwn},
              {"3d typed, own ctx", Way::kTyped3d},
              {"graph x16, shared", Way::kGraphSet16}};
  for (const auto& w : ways) {
    for (int threads : {1, 2, 4, 8}) {
      std::vector<Worker*> workers;
      for (int t = 0; t < threads; ++t) workers.push_back(new Worker(primary, dev, w.way, copies));
      Run(workers, count);  // warm-up
      Timing best = {1e30, 1e30};
      for (int trial = 0; trial < 3; ++trial) {
        const Timing t = Run(workers, count);
        if (t.totalUs < best.totalUs) best = t;
      }
      printf("%-18s %7d %14.2f %14.2f %10.1f %11.0f%%\n", w.name, threads, best.queueUs, best.totalUs,
             size / best.totalUs / 1e3, 100 * anchorUs / best.totalUs);
      for (Worker* worker : workers) delete worker;
    }
  }
  return 0;
}
