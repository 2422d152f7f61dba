// Which driver calls a proxy thread may make while a kernel of the same context waits for it.
//   blocking_call_probe              every call below, in turn
//   blocking_call_probe first-copy   only the process's first copies (odd-sized, through
//                                    cuMemcpyAsync, between device and mapped pinned memory)
//   blocking_call_probe first-alloc  only the process's first pinned allocations
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
void Probe(CUcontext ctx, const char* name, const std::function<void()>& call, bool hostWaits = false) {
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
  if (hostWaits) {
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
  printf("%-44s%s %9.3f ms  %s\n", name, hostWaits ? " (+ host copy behind the kernel)" : "", took, took >= 0.9 * kReleaseMs ? "WAITS FOR THE KERNEL" : "ok");
}

}  // namespace

int main(int argc, char** argv) {
  CUcontext ctx = UseGpu0();
  if (argc > 1 && strcmp(argv[1], "first-copy") == 0) {
    // A fresh process: no copy was made in it before these.
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, 4096));
    void* h = nullptr;
    CHECK(cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr hd;
    CHECK(cuMemHostGetDevicePointer(&hd, h, 0));
    Probe(ctx, "first cuMemcpyAsync 13 B device -> pinned", [&] {
      CHECK(cuMemcpyAsync(hd, d + 3, 13, s));
      CHECK(cuStreamSynchronize(s));
    });
    Probe(ctx, "first cuMemcpyAsync 13 B pinned -> device", [&] {
      CHECK(cuMemcpyAsync(d + 5, hd, 13, s));
      CHECK(cuStreamSynchronize(s));
    });
    Probe(ctx, "first cuMemcpyAsync 13 B device -> device", [&] {
      CHECK(cuMemcpyAsync(d + 7, d + 100, 13, s));
      CHECK(cuStreamSynchronize(s));
    });
    // Memory mapped as a communicator maps its windows.
    const CUmemAllocationProp prop = PinnedOnGpu0();
    size_t granularity = 0;
    CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr vmm;
    CHECK(cuMemAddressReserve(&vmm, granularity, 0, 0, 0));
    CUmemGenericAllocationHandle handle;
    CHECK(cuMemCreate(&handle, granularity, &prop, 0));
    CHECK(cuMemMap(vmm, granularity, 0, handle, 0));
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK(cuMemSetAccess(vmm, granularity, &access, 1));
    Probe(ctx, "first cuMemcpyAsync 13 B VMM -> pinned", [&] {
      CHECK(cuMemcpyAsync(hd + 1, vmm + 3, 13, s));
      CHECK(cuStreamSynchronize(s));
    });
    Probe(ctx, "first cuMemcpyAsync 13 B pinned -> VMM", [&] {
      CHECK(cuMemcpyAsync(vmm + 9, hd + 2, 13, s));
      CHECK(cuStreamSynchronize(s));
    });
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "first-alloc") == 0) {
    void* first = nullptr;
    void* second = nullptr;
    Probe(ctx, "first cuMemHostAlloc 4 MiB portable|devicemap", [&] {
      CHECK(cuMemHostAlloc(&first, 4 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    });
    Probe(ctx, "next cuMemHostAlloc 4 MiB portable|devicemap", [&] {
      CHECK(cuMemHostAlloc(&second, 4 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    });
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "host-waits") == 0) {
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, 4096));
    void* h = nullptr;
    CHECK(cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr hd;
    CHECK(cuMemHostGetDevicePointer(&hd, h, 0));
    void* more = nullptr;
    CUdeviceptr moreDevice = 0;
    Probe(ctx, "nothing", [] {}, true);
    Probe(ctx, "cuMemcpyAsync 13 B device -> pinned + sync", [&] {
      CHECK(cuMemcpyAsync(hd + 1, d + 3, 13, s));
      CHECK(cuStreamSynchronize(s));
    }, true);
    Probe(ctx, "cuStreamWriteValue64 + sync", [&] {
      CHECK(cuStreamWriteValue64(s, hd + 64, 7, 0));
      CHECK(cuStreamSynchronize(s));
    }, true);
    Probe(ctx, "cuStreamWriteValue64 to device memory + sync", [&] {
      CHECK(cuStreamWriteValue64(s, d + 64, 7, 0));
      CHECK(cuStreamSynchronize(s));
    }, true);
    Probe(ctx, "cuMemcpyAsync 8 B pageable -> device + sync", [&] {
      static uint64_t word = 1;
      CHECK(cuMemcpyAsync(d + 128, reinterpret_cast<CUdeviceptr>(&word), sizeof word, s));
      CHECK(cuStreamSynchronize(s));
    }, true);
    Probe(ctx, "cuMemHostAlloc 4 MiB portable|devicemap", [&] {
      CHECK(cuMemHostAlloc(&more, 4 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    }, true);
    Probe(ctx, "cuMemAlloc 4 MiB", [&] { CHECK(cuMemAlloc(&moreDevice, 4 << 20)); }, true);
    Probe(ctx, "cuStreamCreate", [&] {
      CUstream t;
      CHECK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    }, true);
    return 0;
  }
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
  Probe(ctx, "cuMemHostAlloc 4 MiB portable|devicemap", [&] {
    CHECK(cuMemHostAlloc(&freed, 4 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
  });
  Probe(ctx, "cuMemFreeHost 4 MiB", [&] { CHECK(cuMemFreeHost(freed)); });
  Probe(ctx, "cuMemHostAlloc 8 bytes devicemap", [&] {
    CHECK(cuMemHostAlloc(&freed, 8, CU_MEMHOSTALLOC_DEVICEMAP));
  });
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
  return 0;
}
