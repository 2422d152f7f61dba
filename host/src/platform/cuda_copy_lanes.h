// SPDX-License-Identifier: MIT
// A run of copies queued by several host threads at once, each on a stream of its own, joined
// back to the run's stream before the words written behind them.
//
// The driver's host time per cuMemcpyAsync (4.3-5.1 us on the H100 machine, whatever the size)
// is what bounds the proxy's puts: one thread queues a 1 MiB copy in the time the copy engine
// moves 2.3 MiB. The driver queues from several threads of one context at once:
// tools/perf/copy_workers_probe.cu on an H100, 384 copies of 1 MiB split between threads,
// each with a stream of its own in the one context, per copy 4.70 / 2.85 / 2.07 / 1.93 us
// with 1 / 2 / 4 / 8 threads, against 2.02 us for all of them replayed from one CUDA graph
// (results/h100/copy-workers-probe.txt). So the proxy's copies get lanes: the calling thread
// and lanes - 1 helper threads per context (the proxy's), each helper with a stream of its own.
//
// A run (Copy) of two copies or more is cut into shares, one a lane:
//   - fork: an event recorded on the run's stream; each helper's stream waits for it before
//     its share, so no share starts before the work queued ahead of the run (a copy reading
//     what an earlier one wrote, a write the run must not pass);
//   - each lane queues its share, the calling thread its own on the run's stream, and each
//     helper records an event of its own behind its share;
//   - join: once every helper has queued its share, the run's stream waits for each helper's
//     event, then gets the writes (a signal, a ring's `consumed`): behind every copy of the run.
// The copies of a run run in no order among themselves, as Platform::CopiesOnStream allows.
// A lone copy goes as one cuMemcpyAsync on the run's stream, with no fork and no join: a put
// and its signal wait for nothing more than before.
//
// Helpers poll for work while the proxy is busy, for kSpinUs after their last share, then
// sleep on a futex; a run finds a sleeping helper no share (it wakes it for the next run)
// rather than waiting for its wake-up. A helper's failure fails the run, which then writes nothing.
// Streams, events and threads are made when the run's stream is (PrepareStream), never while
// kernels wait for the proxy (cuStreamCreate waits for running kernels: docs/performance.md,
// "SDMA waits on device memory").
#ifndef CCO_HOST_PLATFORM_CUDA_COPY_LANES_H_
#define CCO_HOST_PLATFORM_CUDA_COPY_LANES_H_

#include <stdint.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "platform/cuda_copy_graphs.h"
#include "platform/driver_library.h"
#include "platform/gpu_driver_api.h"

namespace cco {
namespace gpu {

// The driver calls the lanes need (resolved by ResolveCopyLaneCalls; a test gives fakes).
struct CopyLaneCalls {
  DriverResult (*ctxGetCurrent)(void** context) = nullptr;
  DriverResult (*ctxSetCurrent)(void* context) = nullptr;
  DriverResult (*streamCreate)(void** stream, unsigned flags) = nullptr;
  DriverResult (*streamDestroy)(void* stream) = nullptr;
  DriverResult (*eventCreate)(void** event, unsigned flags) = nullptr;
  DriverResult (*eventDestroy)(void* event) = nullptr;
  DriverResult (*eventRecord)(void* event, void* stream) = nullptr;
  DriverResult (*streamWaitEvent)(void* stream, void* event, unsigned flags) = nullptr;
  DriverResult (*copyAsync)(DeviceAddress dst, DeviceAddress src, size_t size, void* stream) = nullptr;
  StreamBatchMemOp streamBatchMemOp = nullptr;
};

// Whether the driver has every call.
bool ResolveCopyLaneCalls(const DriverLibrary& library, CopyLaneCalls* calls);

// The lanes a context gets: CCO_COPY_LANES where set (1: none; at most kMaxLanes), else the CPUs
// this thread may run on over twice the ranks of the host (torchrun's LOCAL_WORLD_SIZE, or
// CCO_WORLD_SIZE under cco.launch), 1 to 4: every rank's proxy thread and helpers together
// take at most half the CPUs.
unsigned DefaultCopyLanes();

class CopyLanes {
 public:
  // A helper polls this long after its last share before it sleeps.
  static constexpr int64_t kSpinUs = 2000;
  static constexpr unsigned kMaxLanes = 16;

  // lanes: threads that queue a run's copies, the caller's own included (2 to kMaxLanes).
  CopyLanes(const CopyLaneCalls& calls, unsigned lanes);
  ~CopyLanes();  // every helper stopped, its stream and event freed
  CopyLanes(const CopyLanes&) = delete;
  CopyLanes& operator=(const CopyLanes&) = delete;

  // Gives `stream` the lanes of the context current on the calling thread (the stream's),
  // made on the context's first stream: the helpers, their streams and events. A failure
  // leaves the stream without lanes: its runs go one copy a call on it, as without lanes.
  DriverResult PrepareStream(void* stream);
  // sizes[i] bytes from srcs[i] to dsts[i], i < count, behind `stream`'s work, in no order among
  // themselves; then values[j] at addresses[j], j < writes, in order, behind every copy.
  DriverResult Copy(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                    unsigned count, const DeviceAddress* addresses = nullptr, const uint64_t* values = nullptr,
                    unsigned writes = 0);
  // `stream` forgotten (before it is destroyed); its context's helpers stay for its next streams.
  void Forget(void* stream);

  // Runs cut into shares (helpers took part).
  uint64_t forks() const { return forks_.load(std::memory_order_relaxed); }

 private:
  struct Helper;
  struct Pool;  // one context's helpers and fork event
  // One helper's life: poll, then sleep, for a share; queue it; say so.
  void Serve(Pool* pool, Helper* helper);
  DriverResult QueueShare(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                          unsigned count);
  DriverResult MakePool(void* context, Pool* pool);
  void StopPool(Pool* pool);

  const CopyLaneCalls calls_;
  const unsigned lanes_;
  std::mutex mu_;  // pools_, poolOf_
  std::vector<std::unique_ptr<Pool>> pools_;
  std::map<void*, Pool*> poolOf_;  // by stream
  std::atomic<uint64_t> forks_{0};
};

}  // namespace gpu
}  // namespace cco

#endif  // CCO_HOST_PLATFORM_CUDA_COPY_LANES_H_
