// SPDX-License-Identifier: MIT
// A run of copies queued as one launch of a prepared CUDA graph.
//
// cuMemcpyAsync costs 5-6 us of host time per copy on the device machines, and
// cuMemcpyBatchAsync as much per copy, while a graph of sixteen copies whose nodes are given new
// operands before each launch costs 1.4 us a copy (tools/perf/copy_enqueue_probe.cu, H100): one
// copy a call bounds the proxy's puts far below memcpy's bandwidth. So a run of copies goes as
// one launch of a graph with that many copy nodes, made once per (stream, count) from such a
// run, and given each run's addresses and sizes before its launch (cuGraphExecMemcpyNodeSetParams: "only future
// launches see the change", so a launch still running keeps its own). The graph is built node by node, never captured:
// a stream in capture while another thread synchronised the context crashed the process inside the driver (SIGSEGV in
// the main thread's synchronize, two runs of eight on an H100).
//
// The nodes have no edges: the copies of a run run in no order among themselves, as the
// caller's contract says (Platform::CopiesOnStream). Where the driver refuses a node or its
// new operands (it does where "the operands' mappings changed"), the run goes one
// cuMemcpyAsync at a time instead: the graphs are a cost, never a condition.
#ifndef CCO_HOST_PLATFORM_CUDA_COPY_GRAPHS_H_
#define CCO_HOST_PLATFORM_CUDA_COPY_GRAPHS_H_

#include <stddef.h>
#include <stdint.h>

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "platform/driver_library.h"
#include "platform/gpu_driver_api.h"

namespace cco {
namespace gpu {

// cuda.h's CUDA_MEMCPY3D: only the operands and the width are changed here; the rest is the
// node's, as the driver holds it.
struct Memcpy3D {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  int srcMemoryType;
  const void* srcHost;
  DeviceAddress srcDevice;
  void* srcArray;
  void* reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  int dstMemoryType;
  void* dstHost;
  DeviceAddress dstDevice;
  void* dstArray;
  void* reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
};

// The driver calls a graph run needs (resolved by ResolveCopyGraphCalls).
struct CopyGraphCalls {
  DriverResult (*ctxGetCurrent)(void** context) = nullptr;
  DriverResult (*copyAsync)(DeviceAddress dst, DeviceAddress src, size_t size, void* stream) = nullptr;
  DriverResult (*graphCreate)(void** graph, unsigned flags) = nullptr;
  DriverResult (*addMemcpyNode)(void** node, void* graph, void* const* dependencies, size_t count,
                                const Memcpy3D* params, void* context) = nullptr;
  DriverResult (*memcpyNodeGetParams)(void* node, Memcpy3D* params) = nullptr;
  DriverResult (*instantiate)(void** exec, void* graph, unsigned long long flags) = nullptr;
  DriverResult (*execMemcpyNodeSetParams)(void* exec, void* node, const Memcpy3D* params, void* context) = nullptr;
  DriverResult (*launch)(void* exec, void* stream) = nullptr;
  DriverResult (*execDestroy)(void* exec) = nullptr;
  DriverResult (*graphDestroy)(void* graph) = nullptr;
};

// Whether the driver has every call (false: copies go one a call).
bool ResolveCopyGraphCalls(const DriverLibrary& library, CopyGraphCalls* calls);

class CopyGraphs {
 public:
  // Runs longer than this go as several launches.
  static constexpr unsigned kMaxNodes = 16;

  explicit CopyGraphs(const CopyGraphCalls& calls) : calls_(calls) {}

  // sizes[i] bytes from srcs[i] to dsts[i], i < count, behind `stream`'s work, in no order
  // among themselves; the calling thread's context is the stream's.
  DriverResult Copy(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                    unsigned count);
  // The graphs made for `stream`, freed (before the stream is destroyed).
  void Forget(void* stream);

  // Runs launched as graphs, and runs the driver refused a graph (copied one by one).
  uint64_t launches() const { return launches_; }
  uint64_t refusals() const { return refusals_; }

 private:
  struct Prepared {
    void* graph = nullptr;
    void* exec = nullptr;
    std::vector<void*> nodes;
    std::vector<Memcpy3D> params;  // what each node holds (the driver's view of the memory types)
  };
  // One launch of at most kMaxNodes copies.
  DriverResult Run(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                   unsigned count);
  // A graph of `count` copy nodes without edges, holding these copies.
  DriverResult Prepare(const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes, unsigned count,
                       Prepared* prepared);
  // Gives the exec's nodes this run's copies, setting only the nodes that do not hold one of
  // them already (a set costs the driver ~1.3 us a node; calls that repeat their copies, as
  // an operator's do, then cost a launch alone). Every node then holds one of the copies.
  DriverResult SetOperands(Prepared* prepared, const DeviceAddress* dsts, const DeviceAddress* srcs,
                           const uint64_t* sizes, unsigned count);
  DriverResult OneByOne(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                        unsigned count);
  void Free(Prepared* prepared);

  CopyGraphCalls calls_;
  std::mutex mu_;  // the graphs, their launches and the counts
  std::map<std::pair<void*, unsigned>, Prepared> prepared_;
  uint64_t launches_ = 0, refusals_ = 0;
};

static_assert(sizeof(Memcpy3D) == 200, "CUDA_MEMCPY3D is 200 bytes");
static_assert(offsetof(Memcpy3D, srcMemoryType) == 32, "CUDA_MEMCPY3D layout");
static_assert(offsetof(Memcpy3D, srcDevice) == 48, "CUDA_MEMCPY3D layout");
static_assert(offsetof(Memcpy3D, dstMemoryType) == 120, "CUDA_MEMCPY3D layout");
static_assert(offsetof(Memcpy3D, dstDevice) == 136, "CUDA_MEMCPY3D layout");
static_assert(offsetof(Memcpy3D, WidthInBytes) == 176, "CUDA_MEMCPY3D layout");

}  // namespace gpu
}  // namespace cco

#endif  // CCO_HOST_PLATFORM_CUDA_COPY_GRAPHS_H_
