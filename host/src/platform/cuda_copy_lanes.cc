// SPDX-License-Identifier: MIT
#include "platform/cuda_copy_lanes.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <system_error>

#include "common/env.h"

namespace cco {
namespace gpu {
namespace {

constexpr unsigned kEventDisableTiming = 2;   // CU_EVENT_DISABLE_TIMING
constexpr DriverResult kThreadRefused = 304;  // CUDA_ERROR_OPERATING_SYSTEM: the OS gave no thread
constexpr unsigned kDefaultMostLanes = 4;     // copy_workers_probe: 4 threads already at the copy engine's rate

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// A helper's state word, changed only by compare-and-swap: the caller claims an awake helper,
// the helper puts itself to sleep only if nobody claimed it first, and a caller or a stop wakes it.
// (A futex, not std::condition_variable: that needs GLIBCXX_3.4.30, newer than the wheel allows.)
constexpr uint32_t kAwake = 0, kClaimed = 1, kAsleep = 2;

void FutexWait(std::atomic<uint32_t>* word, uint32_t value) {
  (void)syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, value, nullptr, nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word) {
  (void)syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

}  // namespace

// One helper thread. The caller claims it (kAwake -> kClaimed), hands it a share (the share's
// fields, then `posted` with release order) and waits for `finished` to catch up.
struct CopyLanes::Helper {
  void* stream = nullptr;  // its own, in the pool's context
  void* done = nullptr;    // recorded behind each share
  std::thread thread;

  std::atomic<uint32_t> state{kAwake};
  std::atomic<bool> stop{false};

  std::atomic<uint64_t> posted{0}, finished{0};
  const DeviceAddress* dsts = nullptr;
  const DeviceAddress* srcs = nullptr;
  const uint64_t* sizes = nullptr;
  unsigned count = 0;
  DriverResult result = kDriverSuccess;  // of the last share; read once `finished` says it is done
};

struct CopyLanes::Pool {
  void* context = nullptr;
  void* fork = nullptr;  // recorded on a run's stream before its shares
  std::vector<std::unique_ptr<Helper>> helpers;
  std::mutex runMu;  // one run at a time: the fork event and the helpers' streams are shared
};

bool ResolveCopyLaneCalls(const DriverLibrary& library, CopyLaneCalls* c) {
  return library.ResolveOptional("cuCtxGetCurrent", &c->ctxGetCurrent) &&
         library.ResolveOptional("cuCtxSetCurrent", &c->ctxSetCurrent) &&
         library.ResolveOptional("cuStreamCreate", &c->streamCreate) &&
         library.ResolveOptional("cuStreamDestroy_v2", &c->streamDestroy) &&
         library.ResolveOptional("cuEventCreate", &c->eventCreate) &&
         library.ResolveOptional("cuEventDestroy_v2", &c->eventDestroy) &&
         library.ResolveOptional("cuEventRecord", &c->eventRecord) &&
         library.ResolveOptional("cuStreamWaitEvent", &c->streamWaitEvent) &&
         library.ResolveOptional("cuMemcpyAsync", &c->copyAsync) &&
         library.ResolveOptional("cuStreamBatchMemOp_v2", &c->streamBatchMemOp);
}

unsigned DefaultCopyLanes() {
  const int64_t asked = env::Int("CCO_COPY_LANES", 0);
  if (asked > 0) return asked < CopyLanes::kMaxLanes ? static_cast<unsigned>(asked) : CopyLanes::kMaxLanes;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) return 1;
  // The ranks of this host, as the launchers say (torchrun's LOCAL_WORLD_SIZE; cco.launch starts
  // every rank on this host), each with a proxy thread and its helpers: together at most half
  // the CPUs, so that none spins against the rank processes' own threads.
  int64_t ranks = env::Int("LOCAL_WORLD_SIZE", 0);
  if (ranks <= 0 && env::IsSet("CCO_LOCAL_RANK")) ranks = env::Int("CCO_WORLD_SIZE", 0);
  if (ranks <= 0) ranks = 1;
  const int64_t fit = CPU_COUNT(&cpus) / (2 * ranks);
  return fit < 1 ? 1 : (fit > kDefaultMostLanes ? kDefaultMostLanes : static_cast<unsigned>(fit));
}

CopyLanes::CopyLanes(const CopyLaneCalls& calls, unsigned lanes)
    : calls_(calls), lanes_(lanes < kMaxLanes ? lanes : kMaxLanes) {}

CopyLanes::~CopyLanes() {
  for (auto& pool : pools_) StopPool(pool.get());
}

DriverResult CopyLanes::PrepareStream(void* stream) {
  void* context = nullptr;
  const DriverResult r = calls_.ctxGetCurrent(&context);
  if (r != kDriverSuccess) return r;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& pool : pools_) {
    if (pool->context == context) {
      poolOf_[stream] = pool.get();
      return kDriverSuccess;
    }
  }
  std::unique_ptr<Pool> pool(new Pool);
  const DriverResult made = MakePool(context, pool.get());
  if (made != kDriverSuccess) {
    StopPool(pool.get());
    return made;
  }
  poolOf_[stream] = pool.get();
  pools_.push_back(std::move(pool));
  return kDriverSuccess;
}

DriverResult CopyLanes::MakePool(void* context, Pool* pool) {
  pool->context = context;
  DriverResult r = calls_.eventCreate(&pool->fork, kEventDisableTiming);
  for (unsigned i = 1; i < lanes_ && r == kDriverSuccess; ++i) {
    std::unique_ptr<Helper> h(new Helper);
    r = calls_.streamCreate(&h->stream, kStreamNonBlocking);
    if (r == kDriverSuccess) r = calls_.eventCreate(&h->done, kEventDisableTiming);
    Helper* raw = h.get();
    pool->helpers.push_back(std::move(h));  // freed by StopPool, made in full or not
    if (r != kDriverSuccess) break;
    try {
      raw->thread = std::thread(&CopyLanes::Serve, this, pool, raw);
    } catch (const std::system_error&) {  // no thread to be had: the pool goes without lanes
      r = kThreadRefused;
    }
  }
  return r;
}

void CopyLanes::StopPool(Pool* pool) {
  std::lock_guard<std::mutex> run(pool->runMu);
  for (auto& h : pool->helpers) {
    h->stop.store(true);
    h->state.store(kAwake);
    FutexWake(&h->state);
    if (h->thread.joinable()) h->thread.join();
    if (h->done != nullptr) calls_.eventDestroy(h->done);
    if (h->stream != nullptr) calls_.streamDestroy(h->stream);
  }
  pool->helpers.clear();
  if (pool->fork != nullptr) calls_.eventDestroy(pool->fork);
  pool->fork = nullptr;
}

void CopyLanes::Forget(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  poolOf_.erase(stream);
}

void CopyLanes::Serve(Pool* pool, Helper* h) {
  prctl(PR_SET_NAME, "cco-copy-lane");  // (pthread_setname_np needs a newer glibc than the wheel allows)
  const DriverResult bound = calls_.ctxSetCurrent(pool->context);  // a failure fails every share
  uint64_t seen = 0;
  int64_t lastWork = NowUs();
  for (unsigned polls = 0;; ++polls) {
    const uint64_t posted = h->posted.load(std::memory_order_acquire);
    if (posted != seen) {
      h->state.store(kAwake);  // the claim is spent
      DriverResult r = bound;
      if (r == kDriverSuccess) r = calls_.streamWaitEvent(h->stream, pool->fork, 0);
      if (r == kDriverSuccess) r = QueueShare(h->stream, h->dsts, h->srcs, h->sizes, h->count);
      if (r == kDriverSuccess) r = calls_.eventRecord(h->done, h->stream);
      h->result = r;
      seen = posted;
      h->finished.store(seen, std::memory_order_release);
      lastWork = NowUs();
      continue;
    }
    if (h->stop.load(std::memory_order_relaxed)) return;
    if (polls % 64 != 0 || NowUs() - lastWork < kSpinUs) {
      Pause();
      continue;
    }
    uint32_t awake = kAwake;
    if (!h->state.compare_exchange_strong(awake, kAsleep)) continue;  // claimed: a share is coming
    while (h->state.load() == kAsleep && !h->stop.load()) FutexWait(&h->state, kAsleep);
    lastWork = NowUs();
  }
}

DriverResult CopyLanes::QueueShare(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs,
                                   const uint64_t* sizes, unsigned count) {
  for (unsigned i = 0; i < count; ++i) {
    if (sizes[i] == 0) continue;
    const DriverResult r = calls_.copyAsync(dsts[i], srcs[i], sizes[i], stream);
    if (r != kDriverSuccess) return r;
  }
  return kDriverSuccess;
}

DriverResult CopyLanes::Copy(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                             unsigned count, const DeviceAddress* addresses, const uint64_t* values, unsigned writes) {
  Pool* pool = nullptr;
  if (count >= 2) {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = poolOf_.find(stream);
    if (found != poolOf_.end()) pool = found->second;
  }
  std::unique_lock<std::mutex> run;
  Helper* taking[kMaxLanes];
  unsigned helpers = 0;
  if (pool != nullptr) {
    run = std::unique_lock<std::mutex>(pool->runMu);
    // The awake helpers take a share each (no more shares than copies); a sleeping one is
    // poked for the next run rather than waited for.
    for (auto& h : pool->helpers) {
      if (helpers + 1 >= count) break;
      uint32_t expected = kAwake;
      if (h->state.compare_exchange_strong(expected, kClaimed)) {
        taking[helpers++] = h.get();
      } else if (expected == kAsleep && h->state.compare_exchange_strong(expected, kAwake)) {
        FutexWake(&h->state);
      }
    }
  }
  DriverResult r = kDriverSuccess;
  if (helpers > 0) r = calls_.eventRecord(pool->fork, stream);
  if (r != kDriverSuccess) {
    for (unsigned k = 0; k < helpers; ++k) taking[k]->state.store(kAwake);
    return r;
  }
  // Share k of `shares`: copies [k * count / shares, (k + 1) * count / shares); the caller's is 0.
  const unsigned shares = helpers + 1;
  for (unsigned k = 1; k < shares; ++k) {
    Helper* h = taking[k - 1];
    const unsigned first = k * count / shares, last = (k + 1) * count / shares;
    h->dsts = dsts + first, h->srcs = srcs + first, h->sizes = sizes + first, h->count = last - first;
    h->posted.store(h->posted.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  r = QueueShare(stream, dsts, srcs, sizes, count / shares);
  // Join: every helper's share queued (a few driver calls each), then the run's stream waits
  // for each of them.
  // A failed run still joins the shares that were queued in full, so that nothing of it can
  // run beside what comes later on the run's stream.
  for (unsigned k = 0; k < helpers; ++k) {
    Helper* h = taking[k];
    const uint64_t want = h->posted.load(std::memory_order_relaxed);
    for (unsigned spins = 1; h->finished.load(std::memory_order_acquire) != want; ++spins) {
      if (spins % 1024 == 0) sched_yield();  // a helper the OS took off its CPU
      else Pause();
    }
    if (r == kDriverSuccess) r = h->result;
  }
  for (unsigned k = 0; k < helpers; ++k) {
    if (taking[k]->result != kDriverSuccess) continue;
    const DriverResult joined = calls_.streamWaitEvent(stream, taking[k]->done, 0);
    if (r == kDriverSuccess) r = joined;
  }
  if (r != kDriverSuccess) return r;
  if (helpers > 0) forks_.fetch_add(1, std::memory_order_relaxed);
  return writes == 0 ? kDriverSuccess
                     : WriteValuesInBatches(calls_.streamBatchMemOp, stream, addresses, values, writes);
}

}  // namespace gpu
}  // namespace cco
