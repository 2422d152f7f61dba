// SPDX-License-Identifier: MIT
// Do programs that poll a word slow the copies another stream runs meanwhile, and does it
// matter whether the word is host memory (a bus trip a poll) or device memory? SDMA's waiters
// (quiet, and a poster out of credit) poll the ring's `consumed`, host memory, from every
// thread of every waiting program, while the proxy's stream runs the copies they wait for
// (one GPU: cuMemcpyAsync between device allocations runs as the driver's kernel) and writes
// `consumed` behind them.
//
// For each poller count (0, 1, 8, 32 programs of 128 threads) and target (a host-mapped word,
// a device word, a device word with a pause of 256 ns or 1 us after each poll), a kernel polls
// with acquire loads (system scope for the host word, GPU scope for the device word, as the
// device library's waits do) until released or 3 s of GPU time have passed; meanwhile a stream
// of its own runs `copies` copies of `size` bytes between two VMM mappings, each followed by a
// 64-bit stream write to host memory (as the proxy's passes are), and the probe reports the
// microseconds a copy, from the first queued to the last done.
//
//   nvcc -std=c++17 -O2 -arch=sm_90 -I. tools/perf/copy_beside_pollers_probe.cu -lcuda -o copy_beside_pollers_probe
//   copy_beside_pollers_probe [SIZE_KiB [COPIES]]      (default 1024 KiB, 100 copies)
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "tools/perf/driver_check.h"
#include "tools/perf/runtime_check.h"

// Polls *word until *release is set (looked at every 256 polls, as the library's waits look at
// their limits) or 3 s of GPU time have passed, pausing pauseNs after each poll (0: none).
// OnHost: *word is host memory.
template <bool OnHost>
__global__ void __launch_bounds__(128)
    Poll(const uint64_t* word, volatile int* release, int* arrived, uint32_t pauseNs) {
  if (threadIdx.x == 0) atomicAdd(arrived, 1);
  uint64_t start, now, sink = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (uint32_t polls = 1;; ++polls) {
    uint64_t v;
    if (OnHost) asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
    else asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
    sink += v;
    if (pauseNs != 0) __nanosleep(pauseNs);
    if (polls % 256 == 0) {
      if (*release) break;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
      if (now - start > 3000000000ull) break;
    }
  }
  if (sink == 42) *arrived = 0;  // keeps the loads
}

static double NowUs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
  const size_t bytes = (argc > 1 ? strtoull(argv[1], nullptr, 10) : 1024) << 10;
  const int copies = argc > 2 ? atoi(argv[2]) : 100;
  RT_CHECK(cudaSetDevice(0));
  RT_CHECK(cudaFree(nullptr));
  const CUdeviceptr dst = VmmAllocOnGpu0(bytes), src = VmmAllocOnGpu0(bytes);
  uint64_t *hostWord, *hostWordDevice, *consumed, *consumedDevice, *deviceWord;
  int *release, *arrived;
  RT_CHECK(cudaHostAlloc(&hostWord, sizeof(uint64_t), cudaHostAllocMapped));
  RT_CHECK(cudaHostGetDevicePointer(&hostWordDevice, hostWord, 0));
  RT_CHECK(cudaHostAlloc(&consumed, sizeof(uint64_t), cudaHostAllocMapped));
  RT_CHECK(cudaHostGetDevicePointer(&consumedDevice, consumed, 0));
  RT_CHECK(cudaMalloc(&deviceWord, sizeof(uint64_t)));
  RT_CHECK(cudaHostAlloc(&release, sizeof(int), cudaHostAllocMapped));
  RT_CHECK(cudaHostAlloc(&arrived, sizeof(int), cudaHostAllocMapped));
  cudaStream_t spin, stream;
  RT_CHECK(cudaStreamCreateWithFlags(&spin, cudaStreamNonBlocking));
  RT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const CUstream copyStream = reinterpret_cast<CUstream>(stream);

  printf("%zu KiB x %d copies on one stream (VMM to VMM), each followed by a stream write to host memory\n",
         bytes >> 10, copies);
  printf("%-22s %8s %12s\n", "polled word", "programs", "us a copy");
  const int programCounts[] = {0, 1, 8, 32};
  struct Target {
    const char* name;
    bool onHost;
    uint32_t pauseNs;
  };
  const Target targets[] = {{"host", true, 0},
                            {"device", false, 0},
                            {"device, 256 ns pauses", false, 256},
                            {"device, 1 us pauses", false, 1000}};
  for (const Target& target : targets) {
    for (int programs : programCounts) {
      if (programs == 0 && &target != &targets[0]) continue;  // no pollers: one row
      *release = 0;
      *arrived = 0;
      if (programs > 0) {
        if (target.onHost) Poll<true><<<programs, 128, 0, spin>>>(hostWordDevice, release, arrived, target.pauseNs);
        else Poll<false><<<programs, 128, 0, spin>>>(deviceWord, release, arrived, target.pauseNs);
        RT_CHECK(cudaGetLastError());
        const double t0 = NowUs();
        while (__atomic_load_n(arrived, __ATOMIC_ACQUIRE) < programs && NowUs() - t0 < 1e6) {
        }
      }
      const double begin = NowUs();
      for (int i = 0; i < copies; ++i) {
        CHECK(cuMemcpyAsync(dst, src, bytes, copyStream));
        CHECK(cuStreamWriteValue64(copyStream, reinterpret_cast<CUdeviceptr>(consumedDevice), i + 1, 0));
      }
      while (__atomic_load_n(consumed, __ATOMIC_ACQUIRE) != static_cast<uint64_t>(copies) && NowUs() - begin < 2e6) {
      }
      const double us = NowUs() - begin;
      const bool done = __atomic_load_n(consumed, __ATOMIC_ACQUIRE) == static_cast<uint64_t>(copies);
      __atomic_store_n(release, 1, __ATOMIC_RELEASE);
      RT_CHECK(cudaStreamSynchronize(spin));
      RT_CHECK(cudaStreamSynchronize(stream));
      *consumed = 0;
      printf("%-22s %8d %12.2f%s\n", programs == 0 ? "-" : target.name, programs, us / copies,
             done ? "" : "  (not done in 2 s)");
    }
  }
  return 0;
}
