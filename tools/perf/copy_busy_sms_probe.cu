// SPDX-License-Identifier: MIT
// Does a device-to-device copy on one GPU make progress while every SM is held by a spinning
// kernel? The SDMA transport's copies run on streams of the proxy while the operators'
// persistent programs spin on the SMs waiting for them; where the driver carries a copy out by
// a kernel of its own instead of a copy engine, that copy waits for an SM that never frees.
//
// A kernel of 2 x SMs blocks of 1024 threads with 100 KiB of shared memory each (every SM's
// threads and shared memory taken) spins on a host-mapped word, bounded at 3 s by the GPU
// clock. While it spins, each way of copying (cuMemcpyAsync; cuMemcpyBatchAsync with the hint
// CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE) and a stream word write (cuStreamWriteValue64)
// are queued on a stream of their own, between two allocations (cudaMalloc, and VMM mappings as
// CCO's windows are), at several sizes; each either completes within 300 ms or is reported as
// waiting for the SMs. Then the word releases the kernel.
//
//   nvcc -std=c++17 -O2 -arch=sm_90 -I. tools/perf/copy_busy_sms_probe.cu -lcuda -o copy_busy_sms_probe
#include <stdint.h>
#include <time.h>

#include "tools/perf/driver_check.h"
#include "tools/perf/runtime_check.h"

constexpr int kSmemBytes = 100 * 1024;

// Holds its SM until *release is set or 3 s of GPU time have passed.
__global__ void __launch_bounds__(1024) Occupy(volatile int* release, int* arrived) {
  extern __shared__ char smem[];
  if (threadIdx.x == 0) atomicAdd(arrived, 1);
  uint64_t start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    if (*release) break;
    uint64_t now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > 3000000000ull) break;
    smem[threadIdx.x] = 1;
  }
}

double NowMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Milliseconds until the event completes, or -1 after 300 ms.
double WaitMs(cudaEvent_t done) {
  const double start = NowMs();
  while (NowMs() - start < 300) {
    if (cudaEventQuery(done) == cudaSuccess) return NowMs() - start;
  }
  return -1;
}

int main() {
  const int device = 0;  // GPU 0, as driver_check.h's helpers
  RT_CHECK(cudaSetDevice(device));
  RT_CHECK(cudaFree(nullptr));
  int sms = 0;
  RT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  RT_CHECK(cudaFuncSetAttribute(Occupy, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  int per_sm = 0;
  RT_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Occupy, 1024, kSmemBytes));
  printf("%d SMs, %d spinning blocks of 1024 threads a SM\n", sms, per_sm);

  const size_t kMax = 32 << 20;
  struct Pair {
    const char* name;
    CUdeviceptr dst, src;
  } pairs[2];
  void *d0, *d1;
  RT_CHECK(cudaMalloc(&d0, kMax));
  RT_CHECK(cudaMalloc(&d1, kMax));
  pairs[0] = {"cudaMalloc", reinterpret_cast<CUdeviceptr>(d0), reinterpret_cast<CUdeviceptr>(d1)};
  pairs[1] = {"VMM", VmmAllocOnGpu0(kMax), VmmAllocOnGpu0(kMax)};

  int *release, *arrived;
  RT_CHECK(cudaHostAlloc(&release, sizeof(int), cudaHostAllocMapped));
  RT_CHECK(cudaHostAlloc(&arrived, sizeof(int), cudaHostAllocMapped));
  cudaStream_t spin, copies;
  RT_CHECK(cudaStreamCreateWithFlags(&spin, cudaStreamNonBlocking));
  RT_CHECK(cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking));
  cudaEvent_t done;
  RT_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));

  const size_t sizes[] = {9600, 76800, 1 << 20, 32 << 20};
  const char* ways[] = {"cuMemcpyAsync", "cuMemcpyBatchAsync PREFER_OVERLAP_WITH_COMPUTE", "cuStreamWriteValue64"};
  for (const Pair& p : pairs) {
    for (int way = 0; way < 3; ++way) {
      for (size_t bytes : sizes) {
        if (way == 2 && bytes != sizes[0]) continue;
        *release = 0;
        *arrived = 0;
        Occupy<<<sms * per_sm, 1024, kSmemBytes, spin>>>(release, arrived);
        RT_CHECK(cudaGetLastError());
        const double t0 = NowMs();
        while (__atomic_load_n(arrived, __ATOMIC_ACQUIRE) < sms * per_sm && NowMs() - t0 < 1000) {
        }
        const bool full = __atomic_load_n(arrived, __ATOMIC_ACQUIRE) == sms * per_sm;
        if (way == 0) {
          CHECK(cuMemcpyAsync(p.dst, p.src, bytes, reinterpret_cast<CUstream>(copies)));
        } else if (way == 1) {
          CUdeviceptr dst = p.dst, src = p.src;
          size_t size = bytes, first = 0;
          CUmemcpyAttributes attrs = {};
          attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
          attrs.flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;
          CHECK(cuMemcpyBatchAsync(&dst, &src, &size, 1, &attrs, &first, 1, reinterpret_cast<CUstream>(copies)));
        } else {
          CHECK(cuStreamWriteValue64(reinterpret_cast<CUstream>(copies), p.dst, 7, 0));
        }
        RT_CHECK(cudaEventRecord(done, copies));
        const double ms = WaitMs(done);
        __atomic_store_n(release, 1, __ATOMIC_RELEASE);
        RT_CHECK(cudaStreamSynchronize(spin));
        RT_CHECK(cudaStreamSynchronize(copies));
        if (ms < 0)
          printf("%-10s %-48s %9zu B: WAITED for the SMs (not done in 300 ms)%s\n", p.name, ways[way], bytes,
                 full ? "" : " [not every block resident]");
        else
          printf("%-10s %-48s %9zu B: done in %.3f ms beside the spinning kernel%s\n", p.name, ways[way], bytes, ms,
                 full ? "" : " [not every block resident]");
      }
    }
  }
  return 0;
}
