// SPDX-License-Identifier: MIT
// What the release in a proxy ring's post costs a round trip (device/ring.hpp Write): one
// kernel thread posts a descriptor into a ring of pinned host memory and waits for a host
// thread's answer (a CPU store it polls); the host thread spins on the slot until it is
// complete, then answers. Per way of posting, the round trip and the poster's own time:
//   release.sys    seven volatile words, then `seq` stored with release at system scope
//                  (what the ring does now: the fence waits for the words' bus writes)
//   fence.gpu      the same words, a GPU-scope fence, then `seq` relaxed (too weak for the
//                  ring's rules: what a cheaper fence would gain)
//   flag words     LL-style: sixteen 8-byte words of 4 bytes of data and the ticket's low
//                  32 bits, stored as 16-byte vectors with no fence; the host takes the slot
//                  once every word carries the ticket (no order needed among the stores)
//   flag+fence.gpu the flag words after a GPU-scope fence (orders the caller's device-memory
//                  writes, e.g. a put's source, for a copy the proxy then issues)
//   store only     one relaxed system-scope store of the ticket (the floor: one bus trip each way)
//   reserve+rel    the ring's reservation (device/ring.hpp Reserve: the head and credit words
//                  loaded, the head taken by compare-and-swap, in device memory), then the
//                  release.sys way's slot: what the reservation's memory trips add
//   ring::Post     the ring's own post (device/ring.hpp, IMMEDIATE): reservation, the
//                  doorbell's swap, the descriptor, the link; the host thread takes the slot
//                  as the proxy does (the link, then `seq`) and raises `consumed`
// Each way also stores a doorbell mark (a relaxed host store) after the slot, as a post does.
//
//   ring_post_probe [round_trips=20000]
// Built by tools/stage_device.sh (nvcc) into stage/bin.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "device/ring.hpp"
#include "tools/perf/runtime_check.h"

enum Way { kReleaseSys, kFenceGpu, kFlagWords, kFlagFenceGpu, kStoreOnly, kReserveRelease, kRingPost, kWays };
const char* const kWayNames[] = {"release.sys", "fence.gpu",   "flag words", "flag+fence.gpu",
                                 "store only",  "reserve+rel", "ring::Post"};

constexpr uint32_t kDepth = 64;
constexpr uint32_t kSlotWords = 16;  // 128 bytes: room for the flag words' layout

struct Shared {  // pinned host memory, mapped for the device
  unsigned long long slots[kDepth][kSlotWords];
  unsigned long long marks[kDepth];
  unsigned long long answer;
  unsigned long long pad[7];
  ccoGdaDesc descs[kDepth];  // the ring::Post way's slots (64 bytes each, as a ring's)
  ccoGdaRingHost ringHost;
};

__device__ uint64_t NowNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ void StoreRelaxedSys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ void StoreReleaseSys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Two flag words (data, ticket, data, ticket) in one 16-byte store.
__device__ void StoreFlagPair(unsigned long long* p, uint32_t a, uint32_t b, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(flag), "r"(b), "r"(flag)
               : "memory");
}

// What ring::Post writes for post t (ticket t - 1), which the host thread checks.
__host__ __device__ ccoGdaDesc Described(unsigned long long t) {
  ccoGdaDesc d = {};
  d.dstOffset = t * 8 + 3;
  d.srcOffset = t * 8 + 4;
  d.bytes = t * 8 + 5;
  return d;
}

__global__ void Post(Shared* s, ccoGdaRingDevice* dev, int way, int rounds, unsigned long long* postNs) {
  unsigned long long spent = 0;
  const cco::ring::View ring{s->descs, reinterpret_cast<uint64_t*>(s->marks), &s->ringHost, dev, kDepth};
  const cco::WaitLimits limits{nullptr, 0};
  for (unsigned long long t = 1; t <= static_cast<unsigned long long>(rounds); ++t) {
    unsigned long long* slot = s->slots[t % kDepth];
    const uint64_t t0 = NowNs();
    uint64_t ticket = 0;
    switch (way) {
      case kRingPost:
        if (cco::ring::Post<CCO_GDA_DOORBELL_IMMEDIATE>(ring, Described(t), limits, &ticket) != 0) return;
        break;
      case kReserveRelease:
        if (cco::ring::Reserve(ring, limits, &ticket) != 0) return;
        [[fallthrough]];
      case kReleaseSys:
      case kFenceGpu: {
        volatile unsigned long long* words = slot;
        for (uint32_t i = 1; i < 8; ++i) words[i] = t * 8 + i;
        if (way != kFenceGpu) {  // release.sys, alone or after the reservation
          StoreReleaseSys(slot, t);
        } else {
          asm volatile("fence.acq_rel.gpu;" ::: "memory");
          StoreRelaxedSys(slot, t);
        }
        break;
      }
      case kFlagWords:
      case kFlagFenceGpu:
        if (way == kFlagFenceGpu) asm volatile("fence.acq_rel.gpu;" ::: "memory");
        for (uint32_t i = 0; i < kSlotWords; i += 2)
          StoreFlagPair(slot + i, static_cast<uint32_t>(t * 16 + i), static_cast<uint32_t>(t * 16 + i + 1),
                        static_cast<uint32_t>(t));
        break;
      default: StoreRelaxedSys(slot, t);
    }
    if (way != kRingPost) StoreRelaxedSys(&s->marks[t % kDepth], t);
    spent += NowNs() - t0;
    while (*reinterpret_cast<volatile unsigned long long*>(&s->answer) < t) {
    }
  }
  *postNs = spent;
}

// The proxy's side: takes each slot once it is complete, checks its data, answers.
static int Consume(volatile Shared* s, int way, int rounds) {
  int wrong = 0;
  for (unsigned long long t = 1; t <= static_cast<unsigned long long>(rounds); ++t) {
    volatile unsigned long long* slot = s->slots[t % kDepth];
    if (way == kRingPost) {  // ticket t - 1: its link (end t), then its seq (t), as the proxy reads them
      const uint32_t at = static_cast<uint32_t>((t - 1) % kDepth);
      while (s->marks[at] != t) {
      }
      volatile unsigned long long* words = reinterpret_cast<volatile unsigned long long*>(&s->descs[at]);
      while (words[0] != t) {
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      const ccoGdaDesc want = Described(t);
      wrong += words[3] != want.dstOffset || words[4] != want.srcOffset || words[5] != want.bytes;
      s->ringHost.consumed = t;
    } else if (way == kFlagWords || way == kFlagFenceGpu) {
      for (uint32_t i = 0; i < kSlotWords; ++i) {
        unsigned long long w;
        while (static_cast<uint32_t>((w = slot[i]) >> 32) != static_cast<uint32_t>(t)) {
        }
        wrong += static_cast<uint32_t>(w) != static_cast<uint32_t>(t * 16 + i);
      }
    } else {
      while (slot[0] != t) {
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      if (way != kStoreOnly)
        for (uint32_t i = 1; i < 8; ++i) wrong += slot[i] != t * 8 + i;
      if (way == kReserveRelease) s->ringHost.consumed = t;  // the reservation's credit
    }
    s->answer = t;
  }
  return wrong;
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int rounds = argc > 1 ? atoi(argv[1]) : 20000;
  RT_CHECK(cudaSetDevice(0));
  Shared* host = nullptr;
  RT_CHECK(cudaHostAlloc(&host, sizeof(Shared), cudaHostAllocMapped | cudaHostAllocPortable));
  Shared* dev = nullptr;
  RT_CHECK(cudaHostGetDevicePointer(&dev, host, 0));
  unsigned long long* postNs = nullptr;
  RT_CHECK(cudaMalloc(&postNs, sizeof(unsigned long long)));
  ccoGdaRingDevice* ringDevice = nullptr;  // the ring's device words: head, released, credit cache
  RT_CHECK(cudaMalloc(&ringDevice, sizeof(ccoGdaRingDevice)));
  printf("%d round trips each, one kernel thread posting, one host thread consuming\n", rounds);
  int failures = 0;
  for (int pass = 0; pass < 2; ++pass) {  // twice, in turns: the second pass is the figure to read
    for (int way = 0; way < kWays; ++way) {
      memset(host, 0, sizeof(Shared));
      RT_CHECK(cudaMemset(ringDevice, 0, sizeof(ccoGdaRingDevice)));
      int wrong = 0;
      const auto t0 = std::chrono::steady_clock::now();
      std::thread consumer([&] { wrong = Consume(host, way, rounds); });
      Post<<<1, 1>>>(dev, ringDevice, way, rounds, postNs);
      consumer.join();
      RT_CHECK(cudaDeviceSynchronize());
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      unsigned long long ns = 0;
      RT_CHECK(cudaMemcpy(&ns, postNs, sizeof(ns), cudaMemcpyDeviceToHost));
      printf("pass %d  %-15s %8.3f us/round trip   %7.3f us posting   %s\n", pass, kWayNames[way], us / rounds,
             ns / 1000.0 / rounds, wrong == 0 ? "data ok" : "DATA WRONG");
      failures += wrong != 0;
    }
  }
  RT_CHECK(cudaFreeHost(host));
  RT_CHECK(cudaFree(ringDevice));
  return failures == 0 ? 0 : 1;
}
