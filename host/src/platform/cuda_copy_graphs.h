// SPDX-License-Identifier: MIT
// A run of copies, and the words written behind them, queued as one launch of a prepared CUDA graph.
//
// cuMemcpyAsync costs 5-6 us of host time per copy on the device machines, and
// cuMemcpyBatchAsync as much per copy, while a graph of sixteen copies whose nodes are given new
// operands before each launch costs 1.4 us a copy (tools/perf/copy_enqueue_probe.cu, H100): one
// copy a call bounds the proxy's puts far below memcpy's bandwidth. So a run of copies goes as
// one launch of a graph with that many copy nodes, given the run's addresses and sizes before
// its launch (cuGraphExecMemcpyNodeSetParams: "only future launches see the change", so a launch
// still running keeps its own).
//
// The graphs are made when the stream is (PrepareStream: every count of copies up to kMaxNodes,
// each with 0 to kPreparedWrites writes behind), never while the proxy serves kernels: made on the
// proxy's thread while a kernel waited for it and another thread waited inside the driver for
// that kernel, they most likely held the proxy until the kernel gave up (CCO_COPY_GRAPHS=1 with
// 8 programs posting to one queue, an H100: every run took the 20 s bound; the driver's
// allocations wait for the kernel then, docs/gda.md "Streams and threads"). A run of a shape not
// made goes one cuMemcpyAsync a copy. Each is built node by node, never captured: a stream in
// capture while another thread synchronised the context crashed the process inside the driver
// (SIGSEGV in the main thread's synchronize, two runs of eight on an H100).
//
// The copy nodes have no edges: the copies of a run run in no order among themselves, as the
// caller's contract says (Platform::CopiesOnStream). Words written behind the copies (a signal,
// a ring's `consumed`: Platform::CopiesThenWrites) are one memory-operation node that depends on
// every copy node, given its values before each launch, so a proxy's pass over a ring costs one
// launch instead of a launch and a cuStreamBatchMemOp. Where the driver refuses a node or its
// new operands (it does where "the operands' mappings changed"), the run goes one
// cuMemcpyAsync at a time instead, its writes in one cuStreamBatchMemOp: the graphs are a cost,
// never a condition.
#ifndef CCO_HOST_PLATFORM_CUDA_COPY_GRAPHS_H_
#define CCO_HOST_PLATFORM_CUDA_COPY_GRAPHS_H_

#include <stddef.h>
#include <stdint.h>

#include <map>
#include <mutex>
#include <tuple>
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

// cuda.h's CUstreamBatchMemOpParams as a CU_STREAM_MEM_OP_WRITE_VALUE_64: a 48-byte union
// whose writeValue member is (operation, address, value64, flags, alias).
struct BatchWrite64 {
  uint32_t operation;  // kStreamMemOpWriteValue64
  uint32_t pad0;
  uint64_t address;
  uint64_t value;
  uint32_t flags;  // 0: ordered after the stream's earlier work, with a memory barrier
  uint32_t pad1;
  uint64_t alias;  // the driver's own
  uint64_t pad2;
};
constexpr uint32_t kStreamMemOpWriteValue64 = 5;  // CU_STREAM_MEM_OP_WRITE_VALUE_64

// cuStreamBatchMemOp's shape, with the operations as BatchWrite64.
using StreamBatchMemOp = DriverResult (*)(void* stream, unsigned count, BatchWrite64* ops, unsigned flags);

// values[i] written at addresses[i], i < count, in order, behind `stream`'s work, through
// `batchMemOp` (cuStreamBatchMemOp): as few calls as its batches take. What
// Platform::StreamWriteValues64 does on CUDA, and CopyGraphs' writes where no graph carries them.
DriverResult WriteValuesInBatches(StreamBatchMemOp batchMemOp, void* stream, const DeviceAddress* addresses,
                                  const uint64_t* values, unsigned count);

// cuda.h's CUDA_BATCH_MEM_OP_NODE_PARAMS (the v1 that cuGraphAddBatchMemOpNode takes).
struct BatchMemOpNodeParams {
  void* context;
  unsigned count;
  BatchWrite64* ops;
  unsigned flags;
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
  DriverResult (*addBatchMemOpNode)(void** node, void* graph, void* const* dependencies, size_t count,
                                    const BatchMemOpNodeParams* params) = nullptr;
  DriverResult (*execBatchMemOpNodeSetParams)(void* exec, void* node, const BatchMemOpNodeParams* params) = nullptr;
  StreamBatchMemOp streamBatchMemOp = nullptr;
  DriverResult (*upload)(void* exec, void* stream) = nullptr;
  DriverResult (*launch)(void* exec, void* stream) = nullptr;
  DriverResult (*execDestroy)(void* exec) = nullptr;
  DriverResult (*graphDestroy)(void* graph) = nullptr;
};

// Whether the driver has every call (false: copies go one a call).
bool ResolveCopyGraphCalls(const DriverLibrary& library, CopyGraphCalls* calls);

class CopyGraphs {
 public:
  // Runs longer than this go as several launches, the writes with the last.
  static constexpr unsigned kMaxNodes = 16;
  // Writes in a prepared node at most (a proxy's pass writes a signal, `consumed` and a marker);
  // more go in cuStreamBatchMemOp calls behind the launch.
  static constexpr unsigned kPreparedWrites = 3;
  // Bytes of device memory PrepareStream's graphs copy within and write into until their
  // first run: of the kind the runs' operands are (a node moves between VMM allocations, not
  // from VMM to cuMemAlloc memory: tools/perf/copy_enqueue_probe.cu).
  static constexpr size_t kScratchBytes = (2 * kMaxNodes + kPreparedWrites) * 8;

  explicit CopyGraphs(const CopyGraphCalls& calls) : calls_(calls) {}

  // Makes `stream`'s graphs (for the stream's context, current on the calling thread), their
  // nodes copying within `scratch` (kScratchBytes of device memory) until a run sets them.
  // Call where no kernel can wait for this stream's work (where the stream is made). A graph
  // the driver refuses is remembered: runs of its shape go one by one. Returns the first refusal.
  DriverResult PrepareStream(void* stream, DeviceAddress scratch);

  // sizes[i] bytes from srcs[i] to dsts[i], i < count, behind `stream`'s work, in no order
  // among themselves; then values[j] written at addresses[j], j < writes, in that order, behind
  // every copy. The calling thread's context is the stream's.
  DriverResult Copy(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                    unsigned count, const DeviceAddress* addresses = nullptr, const uint64_t* values = nullptr,
                    unsigned writes = 0);
  // The graphs made for `stream`, freed (before the stream is destroyed).
  void Forget(void* stream);

  // Runs launched as graphs, and runs that went one by one (no graph of their shape, or the
  // driver refused their operands).
  uint64_t launches() const { return launches_; }
  uint64_t refusals() const { return refusals_; }

 private:
  struct Prepared {
    void* graph = nullptr;
    void* exec = nullptr;
    void* context = nullptr;  // the stream's, which the nodes' parameters name
    std::vector<void*> nodes;
    std::vector<Memcpy3D> params;  // what each node holds (the driver's view of the memory types)
    void* writes = nullptr;        // the node of writes behind every copy node (null: none)
  };
  // One launch of at most kMaxNodes copies and the writes behind them (their graph's node, or
  // a cuStreamBatchMemOp after the launch where no graph of this shape has one).
  DriverResult Run(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                   unsigned count, const DeviceAddress* addresses, const uint64_t* values, unsigned writes);
  // The prepared graph of this shape, or null where there is none (or the driver refused it).
  Prepared* Find(void* stream, unsigned count, unsigned writes);
  // A graph of `count` copy nodes without edges and, where `writes` is not 0, a node of that
  // many writes after all of them, copying and writing within `scratch`; instantiated and uploaded.
  DriverResult Make(void* stream, DeviceAddress scratch, unsigned count, unsigned writes, Prepared* prepared);
  // Gives the exec's nodes this run's copies, setting only the nodes that do not hold one of
  // them already (a set costs the driver ~1.3 us a node; calls that repeat their copies, as
  // an operator's do, then cost a launch alone). Every node then holds one of the copies.
  DriverResult SetOperands(Prepared* prepared, const DeviceAddress* dsts, const DeviceAddress* srcs,
                           const uint64_t* sizes, unsigned count);
  // Gives the exec's node of writes these values (every launch: `consumed` moves on).
  DriverResult SetWrites(Prepared* prepared, const DeviceAddress* addresses, const uint64_t* values, unsigned writes);
  DriverResult OneByOne(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                        unsigned count, const DeviceAddress* addresses, const uint64_t* values, unsigned writes);
  void Free(Prepared* prepared);

  CopyGraphCalls calls_;
  std::mutex mu_;  // the graphs, their launches and the counts
  // By (stream, copies, writes).
  std::map<std::tuple<void*, unsigned, unsigned>, Prepared> prepared_;
  uint64_t launches_ = 0, refusals_ = 0;
};

static_assert(sizeof(BatchWrite64) == 48, "CUstreamBatchMemOpParams is 48 bytes");
static_assert(sizeof(BatchMemOpNodeParams) == 32, "CUDA_BATCH_MEM_OP_NODE_PARAMS is 32 bytes");
static_assert(offsetof(BatchMemOpNodeParams, ops) == 16, "CUDA_BATCH_MEM_OP_NODE_PARAMS layout");
static_assert(sizeof(Memcpy3D) == 200, "CUDA_MEMCPY3D is 200 bytes");
static_assert(offsetof(Memcpy3D, srcMemoryType) == 32, "CUDA_MEMCPY3D layout");
static_assert(offsetof(Memcpy3D, srcDevice) == 48, "CUDA_MEMCPY3D layout");
static_assert(offsetof(Memcpy3D, dstMemoryType) == 120, "CUDA_MEMCPY3D layout");
static_assert(offsetof(Memcpy3D, dstDevice) == 136, "CUDA_MEMCPY3D layout");
static_assert(offsetof(Memcpy3D, WidthInBytes) == 176, "CUDA_MEMCPY3D layout");

}  // namespace gpu
}  // namespace cco

#endif  // CCO_HOST_PLATFORM_CUDA_COPY_GRAPHS_H_
