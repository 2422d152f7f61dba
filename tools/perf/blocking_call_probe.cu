// SPDX-License-Identifier: MIT
// Which driver calls a proxy thread may make while a kernel of the same context waits for it.
//   blocking_call_probe              every call below, in turn
//   blocking_call_probe first-copy   only the process's first copies (odd-sized, through
//                                    cuMemcpyAsync, between device and mapped pinned memory)
//   blocking_call_probe first-alloc  only the process's first pinned allocations
//   blocking_call_probe copy-shapes  the process's first device -> device copies of each
//                                    alignment (16, 8, 4, 2, 1 bytes), each size class in turn
//   blocking_call_probe copy-shapes-host-waits  the same while another thread waits for the kernel
//   blocking_call_probe context-latency  how long a word written by a stream of another context
//                                    (the kernel's, or one of the proxy's own) takes to release a
//                                    spinning kernel: alone, and behind a 64 KiB copy
//   blocking_call_probe own-context  what a context of the proxy's own costs, and whether its
//                                    streams reach cuMemAlloc'd and VMM memory of the kernel's
//   blocking_call_probe beside-waits the proxy's calls while another thread loads a module (what
//                                    CUDA's lazy loading does at a kernel's first launch) or
//                                    allocates, in the kernel's context and in one of its own
//   blocking_call_probe own-context-ladder  a copy, a stream write and a sync in the proxy's own
//                                    context beside a module load, from this probe's setting
//                                    (beside-waits) to gpu_platform_test's one change at a time
//   blocking_call_probe host-waits   the proxy's calls while another thread of the process
//                                    waits inside the driver for the kernel
// A kernel on a non-blocking stream spins on a host-mapped word (a flush waiting for its
// proxy, in miniature). While it spins, a second thread (the proxy) makes one driver call and
// times it; a watchdog sets the word after kReleaseMs. A call that took about kReleaseMs or
// more waited for the kernel to end: made by a proxy while a kernel waits for that proxy, it
// would deadlock. The kernel also gives up after a few seconds, so the probe always ends.
// Built by tools/stage_device.sh (nvcc) into stage/bin.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "driver_check.h"

namespace {

constexpr int kReleaseMs = 1000;

__global__ void SpinUntilSet(volatile unsigned* word, unsigned long long giveUpCycles) {
  const long long start = clock64();
  while (*word == 0 && clock64() - start < static_cast<long long>(giveUpCycles)) {
  }
}

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs `call` on another thread while SpinUntilSet runs; prints how long it took.
// The word the kernel spins on: registered, not allocated, so that a probe of the process's
// first cuMemHostAlloc is that.
alignas(4096) unsigned spinWord[1024];

// hostWaits: meanwhile a third thread copies device memory into pageable memory on the
// kernel's stream, so it waits for the kernel inside the driver (what `tensor.cpu()` or
// `loss.item()` does while a communication kernel runs).
// alongside: instead, that call on a third thread of `ctx` (a module's load, say).
void Probe(CUcontext ctx, const char* name, const std::function<void()>& call, bool hostWaits = false,
           const std::function<void()>& alongside = nullptr) {
  static bool registered = false;
  if (!registered) CHECK(cuMemHostRegister(spinWord, sizeof spinWord, CU_MEMHOSTREGISTER_DEVICEMAP));
  registered = true;
  unsigned* word = spinWord;
  *word = 0;
  CUstream kernelStream;
  CHECK(cuStreamCreate(&kernelStream, CU_STREAM_NON_BLOCKING));
  SpinUntilSet<<<1, 1, 0, reinterpret_cast<cudaStream_t>(kernelStream)>>>(word, 8ull * 2'000'000'000ull);
  CHECK(static_cast<CUresult>(cudaGetLastError()));
  std::thread waiter;
  static char pageable[4096];
  static CUdeviceptr source = 0;
  if (alongside) {
    waiter = std::thread([&] {
      CHECK(cuCtxSetCurrent(ctx));
      alongside();
    });
  } else if (hostWaits) {
    if (source == 0) CHECK(cuMemAlloc(&source, sizeof pageable));
    waiter = std::thread([&] {
      CHECK(cuCtxSetCurrent(ctx));
      CHECK(cuMemcpyDtoHAsync(pageable, source, sizeof pageable, kernelStream));
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the kernel is running
  std::atomic<bool> done{false};
  double took = 0;
  std::thread proxy([&] {
    CHECK(cuCtxSetCurrent(ctx));
    const double start = NowMs();
    call();
    took = NowMs() - start;
    done = true;
  });
  const double start = NowMs();
  while (!done && NowMs() - start < kReleaseMs) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  __atomic_store_n(word, 1u, __ATOMIC_RELEASE);  // the watchdog: the kernel may end now
  proxy.join();
  if (waiter.joinable()) waiter.join();
  CHECK(cuStreamSynchronize(kernelStream));
  CHECK(cuStreamDestroy(kernelStream));
  printf("%-60s%s %9.3f ms  %s\n", name,
         alongside   ? " (+ a module loading)"
         : hostWaits ? " (+ host copy behind the kernel)"
                     : "",
         took, took >= 0.9 * kReleaseMs ? "WAITS FOR THE KERNEL" : "ok");
}

// What the modes copy between: a stream, 4 KiB of device memory, 4 KiB of mapped pinned memory.
struct Scratch {
  CUstream stream;
  CUdeviceptr device;
  void* host = nullptr;
  CUdeviceptr hostDevice;
  Scratch() {
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&device, 4096));
    CHECK(cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    CHECK(cuMemHostGetDevicePointer(&hostDevice, host, 0));
  }
  // A copy of `bytes`, waited for.
  void Copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) const {
    CHECK(cuMemcpyAsync(dst, src, bytes, stream));
    CHECK(cuStreamSynchronize(stream));
  }
};

// The process's first copies of each kind (a fresh process: no copy was made before these).
void FirstCopies(CUcontext ctx) {
  const Scratch k;
  Probe(ctx, "first cuMemcpyAsync 13 B device -> pinned", [&] { k.Copy(k.hostDevice, k.device + 3, 13); });
  Probe(ctx, "first cuMemcpyAsync 13 B pinned -> device", [&] { k.Copy(k.device + 5, k.hostDevice, 13); });
  Probe(ctx, "first cuMemcpyAsync 13 B device -> device", [&] { k.Copy(k.device + 7, k.device + 100, 13); });
  const CUmemAllocationProp prop = PinnedOnGpu0();
  size_t granularity = 0;
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUdeviceptr vmm;
  CHECK(cuMemAddressReserve(&vmm, granularity, 0, 0, 0));
  MapFreshAt(vmm, granularity);
  Probe(ctx, "first cuMemcpyAsync 13 B VMM -> pinned", [&] { k.Copy(k.hostDevice + 1, vmm + 3, 13); });
  Probe(ctx, "first cuMemcpyAsync 13 B pinned -> VMM", [&] { k.Copy(vmm + 9, k.hostDevice + 2, 13); });
}

// The process's first device -> device copies of each alignment and size: a copy on one GPU
// runs as a kernel of the driver's (planning.COPY_SMS), which it may load on first use.
void CopyShapes(CUcontext ctx, bool hostWaits) {
  const Scratch k;
  CUdeviceptr big;
  CHECK(cuMemAlloc(&big, 4 << 20));
  char name[96];
  for (const size_t bytes : {size_t{20400}, size_t{1} << 20}) {
    for (const unsigned align : {16u, 8u, 4u, 2u, 1u}) {
      const size_t n = bytes - 16 + align;  // a multiple of `align`, and of nothing wider
      snprintf(name, sizeof name, "first D2D copy, %zu B, %u-byte aligned", n, align);
      Probe(ctx, name, [&] { k.Copy(big + (2 << 20) + align, big + align, n); }, hostWaits);
    }
  }
  CHECK(cuMemFree(big));
}

// A context of the proxy's own on the current context's device, left current (as cuCtxCreate
// leaves it).
CUcontext MakeOwnContext() {
  CUdevice dev;
  CHECK(cuCtxGetDevice(&dev));
  CUcontext own;
  CHECK(cuCtxCreate(&own, nullptr, 0, dev));
  return own;
}

// A module with one empty kernel, as PTX: each load of it is a module load of its own.
const char kEmptyModule[] = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry empty() { ret; }\n";

// The proxy's calls while another thread of the kernel's process makes a call that waits for
// the kernel: a module's load (CUDA's lazy loading loads one at a kernel's first launch: a
// torch operator first used while a CCO kernel waits for its proxy, say), or an allocation
// (torch's allocator growing its pool). Made in the kernel's context, and in a context of the
// proxy's own.
void WhileAnotherThreadWaits(CUcontext ctx) {
  const Scratch k;
  const std::pair<const char*, std::function<void()>> alongside[] = {
      {"module load",
       [] {
         CUmodule module;
         CHECK(cuModuleLoadData(&module, kEmptyModule));
       }},
      {"cuMemAlloc",
       [] {
         CUdeviceptr p;
         CHECK(cuMemAlloc(&p, 64 << 20));
       }},
  };
  CUdeviceptr vmm = VmmAllocOnGpu0(2 << 20);
  const CUcontext own = MakeOwnContext();
  CUstream ownStream;
  CHECK(cuStreamCreate(&ownStream, CU_STREAM_NON_BLOCKING));
  CHECK(cuCtxSetCurrent(ctx));
  const auto inOwn = [&](const std::function<void()>& call) {
    CHECK(cuCtxSetCurrent(own));
    call();
  };
  const std::pair<const char*, std::function<void()>> calls[] = {
      {"D2D cuMemcpyAsync + sync", [&] { k.Copy(k.device + 1024, k.device, 512); }},
      {"cuStreamWriteValue64 + sync",
       [&] {
         CHECK(cuStreamWriteValue64(k.stream, k.device + 64, 7, 0));
         CHECK(cuStreamSynchronize(k.stream));
       }},
      {"cuStreamQuery", [&] { (void)cuStreamQuery(k.stream); }},
      {"own context: VMM copy + sync",
       [&] {
         inOwn([&] {
           CHECK(cuMemcpyAsync(vmm + 4096, vmm, 512, ownStream));
           CHECK(cuStreamSynchronize(ownStream));
         });
       }},
      {"own context: cuStreamWriteValue64 + sync",
       [&] {
         inOwn([&] {
           CHECK(cuStreamWriteValue64(ownStream, vmm + 64, 7, 0));
           CHECK(cuStreamSynchronize(ownStream));
         });
       }},
  };
  char name[128];
  for (const auto& other : alongside) {
    snprintf(name, sizeof name, "%s itself", other.first);
    Probe(ctx, name, other.second);
    for (const auto& call : calls) {
      snprintf(name, sizeof name, "%s, beside a %s", call.first, other.first);
      Probe(ctx, name, call.second, false, other.second);
    }
  }
}

__global__ void SpinUntilAtLeast(const volatile unsigned long long* word, unsigned long long value,
                                 unsigned long long giveUpNs) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*word < value && now - start < giveUpNs);
}

// A kernel of the primary context spins until a device word reaches a value; a stream of
// `writer` (the primary context, or another of this process's) writes it, alone or behind a
// copy. The time from the write's call to the kernel's end: how soon a proxy working in that
// context releases a kernel (other contexts' work may have to wait for a time slice).
void ContextLatency(CUcontext ctx) {
  CUdeviceptr vmm = VmmAllocOnGpu0(2 << 20);
  CHECK(cuMemsetD8(vmm, 0, 2 << 20));
  CUstream kernelStream;
  CHECK(cuStreamCreate(&kernelStream, CU_STREAM_NON_BLOCKING));
  const CUcontext own = MakeOwnContext();
  CHECK(cuCtxSetCurrent(ctx));
  unsigned long long value = 0;
  for (const bool ownContext : {false, true}) {
    for (const bool copyFirst : {false, true}) {
      const CUcontext writer = ownContext ? own : ctx;
      CHECK(cuCtxSetCurrent(writer));
      CUstream stream;
      CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
      CHECK(cuCtxSetCurrent(ctx));
      constexpr int kTrials = 21;
      double us[kTrials];
      for (int t = 0; t < kTrials; ++t) {
        ++value;
        SpinUntilAtLeast<<<1, 1, 0, reinterpret_cast<cudaStream_t>(kernelStream)>>>(
            reinterpret_cast<const unsigned long long*>(vmm), value, 5'000'000'000ull);
        CHECK(static_cast<CUresult>(cudaGetLastError()));
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the kernel spins
        const double start = NowMs();
        std::thread proxy([&] {
          CHECK(cuCtxSetCurrent(writer));
          if (copyFirst) CHECK(cuMemcpyAsync(vmm + (1 << 20), vmm + 4096, 64 << 10, stream));
          CHECK(cuStreamWriteValue64(stream, vmm, value, 0));
        });
        CHECK(cuStreamSynchronize(kernelStream));
        us[t] = (NowMs() - start) * 1e3;
        proxy.join();
        CHECK(cuCtxSetCurrent(writer));
        CHECK(cuStreamSynchronize(stream));
        CHECK(cuCtxSetCurrent(ctx));
      }
      std::sort(us, us + kTrials);
      printf("%-16s %-22s released in %9.1f us (median of %d; min %.1f, max %.1f)\n",
             ownContext ? "own context" : "kernel's context", copyFirst ? "behind a 64 KiB copy" : "a word alone",
             us[kTrials / 2], kTrials, us[0], us[kTrials - 1]);
    }
  }
}

// The spinning kernel as a PTX module of its own (as gpu_platform_test loads it).
const char kSpinPtx[] =
    ".version 8.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry spin(.param .u64 word) {\n"
    "  .reg .pred p; .reg .u64 a, v, t0, t, d;\n"
    "  ld.param.u64 a, [word];\n  mov.u64 t0, %globaltimer;\n"
    "again:\n  ld.volatile.global.u64 v, [a];\n  setp.ne.u64 p, v, 0;\n  @p bra done;\n"
    "  mov.u64 t, %globaltimer;\n  sub.u64 d, t, t0;\n  setp.lt.u64 p, d, 5000000000;\n  @p bra again;\n"
    "done:\n  ret;\n}\n";
const char kOtherSm70[] = ".version 8.0\n.target sm_70\n.address_size 64\n.visible .entry other() { ret; }\n";

// One rung: which of gpu_platform_test's settings differ from beside-waits'.
struct Rung {
  bool cuMemAllocMemory;  // the copy within cuMemAlloc'd memory of the primary context (else VMM)
  bool legacyStream;      // the kernel on the legacy default stream (else a non-blocking one)
  bool ptxKernel;         // the kernel loaded from PTX and launched by cuLaunchKernel (else <<<>>>)
  bool sm70Module;        // the module loaded beside it is sm_70 PTX (else sm_90)
  bool warmed;            // the own context made one copy before the kernel started
};

void OwnContextLadder(CUcontext ctx) {
  CUmodule spinModule;
  CUfunction spin;
  CHECK(cuModuleLoadData(&spinModule, kSpinPtx));
  CHECK(cuModuleGetFunction(&spin, spinModule, "spin"));
  unsigned long long* word = nullptr;
  CHECK(cuMemHostAlloc(reinterpret_cast<void**>(&word), 8, CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr wordDevice;
  CHECK(cuMemHostGetDevicePointer(&wordDevice, word, 0));
  CUdeviceptr plain, vmm = VmmAllocOnGpu0(2 << 20);
  CHECK(cuMemAlloc(&plain, 4096));
  CUstream kernelStream;
  CHECK(cuStreamCreate(&kernelStream, CU_STREAM_NON_BLOCKING));
  const Rung rungs[] = {
      {false, false, false, false, false},  // beside-waits' setting
      {true, false, false, false, false},  {false, true, false, false, false}, {false, false, true, false, false},
      {false, false, false, true, false},  {true, true, true, true, false},  // gpu_platform_test's setting
      {false, true, true, true, false},    {true, false, true, true, false},   {true, true, false, true, false},
      {true, true, true, false, false},    {true, true, true, true, true},
  };
  for (const Rung& r : rungs) {
    const CUcontext own = MakeOwnContext();
    CUstream ownStream;
    CHECK(cuStreamCreate(&ownStream, CU_STREAM_NON_BLOCKING));
    const CUdeviceptr base = r.cuMemAllocMemory ? plain : vmm;
    if (r.warmed) {
      CHECK(cuMemcpyAsync(base + 2048, base + 1024, 8, ownStream));
      CHECK(cuStreamSynchronize(ownStream));
    }
    CHECK(cuCtxSetCurrent(ctx));
    *word = 0;
    const CUstream launchOn = r.legacyStream ? nullptr : kernelStream;
    if (r.ptxKernel) {
      void* params[] = {&wordDevice};
      CHECK(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, launchOn, params, nullptr));
    } else {
      SpinUntilSet<<<1, 1, 0, reinterpret_cast<cudaStream_t>(launchOn)>>>(reinterpret_cast<unsigned*>(word),
                                                                          8ull * 2'000'000'000ull);
      CHECK(static_cast<CUresult>(cudaGetLastError()));
    }
    double loadedAt = 0;
    std::thread loader([&] {
      CHECK(cuCtxSetCurrent(ctx));
      CUmodule other;
      CHECK(cuModuleLoadData(&other, r.sm70Module ? kOtherSm70 : kEmptyModule));
      loadedAt = NowMs();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the load is waiting by now
    double copyMs = 0, writeMs = 0, syncMs = 0;
    std::atomic<bool> done{false};
    std::thread proxy([&] {
      CHECK(cuCtxSetCurrent(own));
      const double t0 = NowMs();
      CHECK(cuMemcpyAsync(base + 64, base, 8, ownStream));
      const double t1 = NowMs();
      CHECK(cuStreamWriteValue64(ownStream, base + 128, 77, 0));
      const double t2 = NowMs();
      CHECK(cuStreamSynchronize(ownStream));
      const double t3 = NowMs();
      copyMs = t1 - t0, writeMs = t2 - t1, syncMs = t3 - t2;
      done = true;
    });
    const double start = NowMs();
    while (!done && NowMs() - start < kReleaseMs) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const double releasedAt = NowMs();
    __atomic_store_n(word, 1ull, __ATOMIC_RELEASE);
    proxy.join();
    loader.join();
    CHECK(cuCtxSynchronize());
    printf("%-9s %-12s %-8s load %s%s: copy %8.3f, write %8.3f, sync %8.3f ms; load %s  %s\n",
           r.cuMemAllocMemory ? "cuMemAlloc" : "VMM", r.legacyStream ? "legacy" : "non-blocking",
           r.ptxKernel ? "ptx" : "<<<>>>", r.sm70Module ? "sm_70" : "sm_90", r.warmed ? ", warmed" : "", copyMs,
           writeMs, syncMs, loadedAt >= releasedAt ? "waited" : "DID NOT WAIT",
           copyMs + writeMs + syncMs >= 0.9 * kReleaseMs ? "WAITS FOR THE KERNEL" : "ok");
    CHECK(cuCtxSetCurrent(own));
    CHECK(cuStreamDestroy(ownStream));
    CHECK(cuCtxDestroy(own));
    CHECK(cuCtxSetCurrent(ctx));
  }
}

// What a context of the proxy's own costs, and which memory of the kernel's context it reaches:
// a stream write and a copy into cuMemAlloc'd memory and into VMM memory.
void OwnContextReach(CUcontext ctx) {
  size_t freeBefore, total, freeAfter;
  CHECK(cuMemGetInfo(&freeBefore, &total));
  CUdeviceptr plain;
  CHECK(cuMemAlloc(&plain, 4096));
  CHECK(cuMemsetD8(plain, 0, 4096));
  CUdeviceptr vmm = VmmAllocOnGpu0(2 << 20);
  CHECK(cuMemsetD8(vmm, 0, 2 << 20));
  const double start = NowMs();
  const CUcontext own = MakeOwnContext();
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  const double made = NowMs() - start;
  CHECK(cuMemGetInfo(&freeAfter, &total));
  printf("own context: made in %.1f ms, %.0f MiB of device memory\n", made, (freeBefore - freeAfter) / 1048576.0 - 2);
  for (const auto& [name, at] : {std::pair<const char*, CUdeviceptr>{"cuMemAlloc'd", plain}, {"VMM", vmm}}) {
    CUresult w = cuStreamWriteValue64(stream, at, 42, 0);
    if (w == CUDA_SUCCESS) w = cuStreamSynchronize(stream);
    CUresult c = w == CUDA_SUCCESS ? cuMemcpyAsync(at + 64, at, 8, stream) : w;
    if (c == CUDA_SUCCESS) c = cuStreamSynchronize(stream);
    uint64_t back[9] = {};
    CHECK(cuCtxSetCurrent(ctx));
    if (c == CUDA_SUCCESS) CHECK(cuMemcpyDtoH(back, at, sizeof back));
    CHECK(cuCtxSetCurrent(own));
    printf("own context into the kernel context's %s memory: write %s, copy %s, read back %llu %llu\n", name,
           ResultText(w), ResultText(c), static_cast<unsigned long long>(back[0]),
           static_cast<unsigned long long>(back[8]));
    if (c != CUDA_SUCCESS) break;  // the context is unusable after a fault
  }
}

// The process's first pinned allocations.
void FirstAllocations(CUcontext ctx) {
  void* first = nullptr;
  void* second = nullptr;
  Probe(ctx, "first cuMemHostAlloc 4 MiB portable|devicemap",
        [&] { CHECK(cuMemHostAlloc(&first, 4 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP)); });
  Probe(ctx, "next cuMemHostAlloc 4 MiB portable|devicemap",
        [&] { CHECK(cuMemHostAlloc(&second, 4 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP)); });
}

// The calls a proxy may make, while another thread waits inside the driver for the kernel.
void WhileTheHostWaits(CUcontext ctx) {
  const Scratch k;
  void* more = nullptr;
  CUdeviceptr moreDevice = 0;
  Probe(ctx, "nothing", [] {}, true);
  Probe(ctx, "cuMemcpyAsync 13 B device -> pinned + sync", [&] { k.Copy(k.hostDevice + 1, k.device + 3, 13); }, true);
  const auto writeWord = [&](CUdeviceptr at) {
    CHECK(cuStreamWriteValue64(k.stream, at, 7, 0));
    CHECK(cuStreamSynchronize(k.stream));
  };
  Probe(ctx, "cuStreamWriteValue64 to pinned + sync", [&] { writeWord(k.hostDevice + 64); }, true);
  Probe(ctx, "cuStreamWriteValue64 to device + sync", [&] { writeWord(k.device + 64); }, true);
  static uint64_t word = 1;
  Probe(
      ctx, "cuMemcpyAsync 8 B pageable -> device + sync",
      [&] { k.Copy(k.device + 128, reinterpret_cast<CUdeviceptr>(&word), sizeof word); }, true);
  Probe(
      ctx, "cuMemHostAlloc 4 MiB portable|devicemap",
      [&] { CHECK(cuMemHostAlloc(&more, 4 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP)); }, true);
  Probe(ctx, "cuMemAlloc 4 MiB", [&] { CHECK(cuMemAlloc(&moreDevice, 4 << 20)); }, true);
  // A graph of one copy (the proxy's prepared copies, cuda_copy_graphs.h): its making, and a
  // later launch with the node's operands set, as the proxy's pass does.
  CUgraph graph = nullptr;
  CUgraphNode node = nullptr;
  CUgraphExec exec = nullptr;
  CUDA_MEMCPY3D copy = {};
  copy.srcMemoryType = copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.srcDevice = k.device, copy.dstDevice = k.device + 2048, copy.WidthInBytes = 64, copy.Height = copy.Depth = 1;
  CUcontext current;
  CHECK(cuCtxGetCurrent(&current));
  Probe(
      ctx, "cuGraphCreate + cuGraphAddMemcpyNode",
      [&] {
        CHECK(cuGraphCreate(&graph, 0));
        CHECK(cuGraphAddMemcpyNode(&node, graph, nullptr, 0, &copy, current));
      },
      true);
  Probe(ctx, "cuGraphInstantiate (one copy)", [&] { CHECK(cuGraphInstantiate(&exec, graph, 0)); }, true);
  Probe(
      ctx, "cuGraphUpload + sync",
      [&] {
        CHECK(cuGraphUpload(exec, k.stream));
        CHECK(cuStreamSynchronize(k.stream));
      },
      true);
  Probe(
      ctx, "cuGraphExecMemcpyNodeSetParams + launch + sync",
      [&] {
        copy.srcDevice = k.device + 512;
        CHECK(cuGraphExecMemcpyNodeSetParams(exec, node, &copy, current));
        CHECK(cuGraphLaunch(exec, k.stream));
        CHECK(cuStreamSynchronize(k.stream));
      },
      true);
  CHECK(cuGraphExecDestroy(exec));
  CHECK(cuGraphDestroy(graph));
  Probe(
      ctx, "cuStreamCreate",
      [&] {
        CUstream t;
        CHECK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
      },
      true);
}

// Each call in turn, with nothing else waiting.
void EachCall(CUcontext ctx) {
  CUstream other;
  CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  CUdeviceptr device;
  CHECK(cuMemAlloc(&device, 4 << 20));
  void* pinned = nullptr;
  CHECK(cuMemHostAlloc(&pinned, 4 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
  static char pageable[4 << 20];
  void* freed = nullptr;
  CUdeviceptr freedDevice = 0;

  Probe(ctx, "nothing (the baseline)", [] {});
  Probe(ctx, "cuMemHostAlloc 4 MiB portable|devicemap",
        [&] { CHECK(cuMemHostAlloc(&freed, 4 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP)); });
  Probe(ctx, "cuMemFreeHost 4 MiB", [&] { CHECK(cuMemFreeHost(freed)); });
  Probe(ctx, "cuMemHostAlloc 8 bytes devicemap", [&] { CHECK(cuMemHostAlloc(&freed, 8, CU_MEMHOSTALLOC_DEVICEMAP)); });
  Probe(ctx, "cuMemFreeHost 8 bytes", [&] { CHECK(cuMemFreeHost(freed)); });
  Probe(ctx, "cuMemHostRegister 4 MiB", [&] { CHECK(cuMemHostRegister(pageable, sizeof pageable, 0)); });
  Probe(ctx, "cuMemHostUnregister 4 MiB", [&] { CHECK(cuMemHostUnregister(pageable)); });
  Probe(ctx, "cuMemAlloc 4 MiB", [&] { CHECK(cuMemAlloc(&freedDevice, 4 << 20)); });
  Probe(ctx, "cuMemFree 4 MiB", [&] { CHECK(cuMemFree(freedDevice)); });
  Probe(ctx, "cuStreamCreate non-blocking", [&] {
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamDestroy(s));
  });
  Probe(ctx, "cuMemcpyDtoHAsync 4 MiB + that stream's sync", [&] {
    CHECK(cuMemcpyDtoHAsync(pinned, device, 4 << 20, other));
    CHECK(cuStreamSynchronize(other));
  });
  Probe(ctx, "cuStreamWriteValue64 + that stream's sync", [&] {
    CUdeviceptr at;
    CHECK(cuMemHostGetDevicePointer(&at, pinned, 0));
    CHECK(cuStreamWriteValue64(other, at, 7, 0));
    CHECK(cuStreamSynchronize(other));
  });
  CHECK(cuMemFreeHost(pinned));
  CHECK(cuMemFree(device));
  CHECK(cuStreamDestroy(other));
}

}  // namespace

int main(int argc, char** argv) {
  const CUcontext ctx = UseGpu0();
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "first-copy") == 0) FirstCopies(ctx);
  else if (strcmp(mode, "first-alloc") == 0) FirstAllocations(ctx);
  else if (strcmp(mode, "copy-shapes") == 0) CopyShapes(ctx, false);
  else if (strcmp(mode, "context-latency") == 0) ContextLatency(ctx);
  else if (strcmp(mode, "own-context") == 0) OwnContextReach(ctx);
  else if (strcmp(mode, "beside-waits") == 0) WhileAnotherThreadWaits(ctx);
  else if (strcmp(mode, "own-context-ladder") == 0) OwnContextLadder(ctx);
  else if (strcmp(mode, "copy-shapes-host-waits") == 0) CopyShapes(ctx, true);
  else if (strcmp(mode, "host-waits") == 0) WhileTheHostWaits(ctx);
  else EachCall(ctx);
  return 0;
}
