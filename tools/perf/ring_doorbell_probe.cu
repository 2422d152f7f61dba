// SPDX-License-Identifier: MIT
// The proxy ring's doorbell on a GPU (device/ring.hpp Doorbell): many warps ring one ring at
// once, and the chain of marks the proxy follows must reach the device maximum; and what one
// ring costs the thread that rings, against the ways it could be done.
//
//   ring_doorbell_probe [runs]     (default 400)
//
// Prints how many runs ended with the chain short of the device maximum (must be 0), the
// device's hostNativeAtomicSupported attribute, and ns per call (one thread, rising values) of:
// Doorbell as shipped (a link into its own mark); one shared host word handed on by a release
// no-op compare-and-swap; a system-scope atomic max on a host word; a store and plain re-check
// (which could lose a doorbell); a plain host store.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/ring.h"
#include "device/ring.hpp"
#include "tools/perf/runtime_check.h"

using namespace cco;

// Marks for every ring of a run with no consumer: no ticket is ever released twice in a slot.
constexpr uint32_t kProbeDepth = 1u << 18;

// Lane 0 of every warp rings `rings` times, each time up to the next value of a shared count.
__global__ void RingFromEveryWarp(uint64_t* marks, ccoGdaRingDevice* dev, unsigned long long* count, int rings) {
  if (threadIdx.x % 32 != 0) return;
  const ring::View r{nullptr, marks, nullptr, dev, kProbeDepth};
  for (int i = 0; i < rings; ++i) ring::Doorbell(r, atomicAdd(count, 1ull) + 1);
}

enum Way { kShipped, kHandOn, kAtomicMax, kStoreAndRecheck, kPlainStore, kWays };
const char* const kWayNames[] = {"Doorbell as shipped (a link in its own mark)", "one host word, release hand-on",
                                 "device max, then system atomic max", "device max, store, re-check (lossy)",
                                 "plain store into host memory"};

// Whether this call's compare-and-swap raised the device word to v.
__device__ bool Raised(ccoGdaRingDevice* dev, uint64_t v) {
  uint64_t seen = arch::load<order::Relaxed, scope::Device>(&dev->released);
  while (cco_gda_before(seen, v)) {
    const uint64_t was = arch::compare_exchange<order::AcqRel, scope::Device>(&dev->released, seen, v);
    if (was == seen) return true;
    seen = was;
  }
  return false;
}

// One thread: `n` calls of one way with rising values; ns per call.
__global__ void TimeOne(uint64_t* marks, uint64_t* word, ccoGdaRingDevice* dev, int n, int way, double* ns) {
  const ring::View r{nullptr, marks, nullptr, dev, kProbeDepth};
  const uint64_t start = arch::timer_ns();
  for (uint64_t v = 1; v <= static_cast<uint64_t>(n); ++v) {
    switch (way) {
      case kShipped: ring::Doorbell(r, v); break;
      case kHandOn:
        if (Raised(dev, v)) {
          uint64_t value = v;
          for (;;) {
            arch::store<order::Relaxed, scope::System>(word, value);
            const uint64_t now = arch::compare_exchange<order::Release, scope::Device>(&dev->released, value, value);
            if (now == value) break;
            value = now;
          }
        }
        break;
      case kAtomicMax:
        if (Raised(dev, v)) arch::fetch_max<order::Relaxed, scope::System>(word, v);
        break;
      case kStoreAndRecheck:
        if (Raised(dev, v)) {
          uint64_t value = v;
          for (;;) {
            arch::store<order::Relaxed, scope::System>(word, value);
            const uint64_t now = arch::load<order::Relaxed, scope::Device>(&dev->released);
            if (now == value) break;
            value = now;
          }
        }
        break;
      default: arch::store<order::Relaxed, scope::System>(word, v);
    }
  }
  arch::fence<scope::System>();  // every way waits for its last write to land
  *ns = static_cast<double>(arch::timer_ns() - start) / n;
}

// Where the chain of links from ticket 0 ends (the proxy's walk, RingConsumer::FollowMarks).
uint64_t ChainEnd(const uint64_t* marks) {
  uint64_t at = 0;
  while (cco_gda_mark_links(at, marks[cco_gda_slot_of(at, kProbeDepth)], kProbeDepth))
    at = marks[cco_gda_slot_of(at, kProbeDepth)];
  return at;
}

int main(int argc, char** argv) {
  const int runs = argc > 1 ? atoi(argv[1]) : 400;
  int native = -1;
  RT_CHECK(cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, 0));
  uint64_t* marks;
  uint64_t* word;
  RT_CHECK(cudaHostAlloc(&marks, sizeof(uint64_t) * kProbeDepth, cudaHostAllocMapped));
  RT_CHECK(cudaHostAlloc(&word, 64, cudaHostAllocMapped));
  ccoGdaRingDevice* dev;
  unsigned long long* count;
  double* ns;
  RT_CHECK(cudaMalloc(&dev, sizeof(*dev)));
  RT_CHECK(cudaMalloc(&count, sizeof(*count)));
  RT_CHECK(cudaMallocManaged(&ns, sizeof(double)));
  const int rings = 200;
  const uint64_t expected = 264ull * 4 * rings;
  if (expected >= kProbeDepth) return 1;
  int lost = 0;
  for (int run = 0; run < runs; ++run) {
    memset(marks, 0, sizeof(uint64_t) * kProbeDepth);
    RT_CHECK(cudaMemset(dev, 0, sizeof(*dev)));
    RT_CHECK(cudaMemset(count, 0, sizeof(*count)));
    RingFromEveryWarp<<<264, 128>>>(marks, dev, count, rings);
    RT_CHECK(cudaDeviceSynchronize());
    ccoGdaRingDevice seen;
    RT_CHECK(cudaMemcpy(&seen, dev, sizeof(seen), cudaMemcpyDeviceToHost));
    const uint64_t end = ChainEnd(marks);
    if (end != seen.released || seen.released != expected) {
      if (++lost <= 5)
        printf("run %d: chain ends at %llu, device %llu, rings %llu\n", run, (unsigned long long)end,
               (unsigned long long)seen.released, (unsigned long long)expected);
    }
  }
  printf("doorbell: %d of %d runs (264 blocks x 4 warps x %d rings) ended with the chain short of the device maximum\n",
         lost, runs, rings);
  printf("hostNativeAtomicSupported: %d\n", native);
  for (int pass = 0; pass < 3; ++pass) {
    for (int way = 0; way < kWays; ++way) {
      memset(marks, 0, sizeof(uint64_t) * kProbeDepth);
      *word = 0;
      RT_CHECK(cudaMemset(dev, 0, sizeof(*dev)));
      TimeOne<<<1, 1>>>(marks, word, dev, 10000, way, ns);
      RT_CHECK(cudaDeviceSynchronize());
      const uint64_t reached = way == kShipped ? ChainEnd(marks) : *word;
      printf("%-44s %8.1f ns per call (host side reached %llu)\n", kWayNames[way], *ns, (unsigned long long)reached);
    }
  }
  return lost == 0 ? 0 : 2;
}
