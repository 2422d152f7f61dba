// The GDA doorbell on a GPU (device/gda_ring.hpp Ring): many warps ring one ring at once, and
// the host copy the proxy reads must end at the device maximum; and what one ring costs the
// thread that rings, against the ways it could be done.
//
//   ring_doorbell_probe [runs]     (default 400)
//
// Prints how many runs ended with the host copy below the device's (must be 0), the device's
// hostNativeAtomicSupported attribute, and ns per call (one thread, rising values) of: Ring as
// shipped (store, then a release no-op hand-on); a system-scope atomic max on the host copy; the
// store and plain re-check Ring did before (which could lose a doorbell); a plain host store.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/gda.h"
#include "device/gda_ring.hpp"

#define RT_CHECK(call)                                                                  \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

using namespace cco;

// Lane 0 of every warp rings `rings` times, each time up to the next value of a shared count.
__global__ void RingFromEveryWarp(ccoGdaRingHost* host, ccoGdaRingDevice* dev, unsigned long long* count, int rings) {
  if (threadIdx.x % 32 != 0) return;
  const gda::RingView r{nullptr, host, dev, 256};
  for (int i = 0; i < rings; ++i) gda::Ring(r, atomicAdd(count, 1ull) + 1);
}

enum Way { kShipped, kAtomicMax, kStoreAndRecheck, kPlainStore, kWays };
const char* const kWayNames[] = {"Ring as shipped (store, release hand-on)", "device max, then system atomic max",
                                 "device max, store, re-check (before)", "plain store into host memory"};

// One thread: `n` calls of one way with rising values; ns per call.
__global__ void TimeOne(ccoGdaRingHost* host, ccoGdaRingDevice* dev, int n, int way, double* ns) {
  const gda::RingView r{nullptr, host, dev, 256};
  const uint64_t start = arch::timer_ns();
  for (uint64_t v = 1; v <= static_cast<uint64_t>(n); ++v) {
    switch (way) {
      case kShipped: gda::Ring(r, v); break;
      case kAtomicMax:
        if (gda::RollingMax(&dev->released, v) == v) arch::fetch_max<order::Relaxed, scope::System>(&host->released, v);
        break;
      case kStoreAndRecheck: {
        uint64_t value = gda::RollingMax(&dev->released, v);
        for (;;) {
          arch::store<order::Relaxed, scope::System>(&host->released, value);
          const uint64_t now = arch::load<order::Relaxed, scope::Device>(&dev->released);
          if (now == value) break;
          value = now;
        }
        break;
      }
      default: arch::store<order::Relaxed, scope::System>(&host->released, v);
    }
  }
  arch::fence<scope::System>();  // every way waits for its last write to land
  *ns = static_cast<double>(arch::timer_ns() - start) / n;
}

int main(int argc, char** argv) {
  const int runs = argc > 1 ? atoi(argv[1]) : 400;
  int native = -1;
  RT_CHECK(cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, 0));
  ccoGdaRingHost* host;
  RT_CHECK(cudaHostAlloc(&host, sizeof(*host), cudaHostAllocMapped));
  ccoGdaRingDevice* dev;
  unsigned long long* count;
  double* ns;
  RT_CHECK(cudaMalloc(&dev, sizeof(*dev)));
  RT_CHECK(cudaMalloc(&count, sizeof(*count)));
  RT_CHECK(cudaMallocManaged(&ns, sizeof(double)));
  int lost = 0;
  for (int run = 0; run < runs; ++run) {
    memset(host, 0, sizeof(*host));
    RT_CHECK(cudaMemset(dev, 0, sizeof(*dev)));
    RT_CHECK(cudaMemset(count, 0, sizeof(*count)));
    RingFromEveryWarp<<<264, 128>>>(host, dev, count, 200);
    RT_CHECK(cudaDeviceSynchronize());
    ccoGdaRingDevice seen;
    RT_CHECK(cudaMemcpy(&seen, dev, sizeof(seen), cudaMemcpyDeviceToHost));
    const uint64_t expected = 264ull * 4 * 200;
    if (host->released != seen.released || seen.released != expected) {
      if (++lost <= 5)
        printf("run %d: host copy %llu, device %llu, rings %llu\n", run, (unsigned long long)host->released,
               (unsigned long long)seen.released, (unsigned long long)expected);
    }
  }
  printf("doorbell: %d of %d runs (264 blocks x 4 warps x 200 rings) ended with the host copy below the device's\n",
         lost, runs);
  printf("hostNativeAtomicSupported: %d\n", native);
  for (int pass = 0; pass < 3; ++pass) {
    for (int way = 0; way < kWays; ++way) {
      memset(host, 0, sizeof(*host));
      RT_CHECK(cudaMemset(dev, 0, sizeof(*dev)));
      TimeOne<<<1, 1>>>(host, dev, 10000, way, ns);
      RT_CHECK(cudaDeviceSynchronize());
      printf("%-44s %8.1f ns per call (host copy %llu)\n", kWayNames[way], *ns, (unsigned long long)host->released);
    }
  }
  return lost == 0 ? 0 : 2;
}
