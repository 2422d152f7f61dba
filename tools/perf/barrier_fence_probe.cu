// SPDX-License-Identifier: MIT
// What a block-wide LSA barrier round costs with each way of releasing it: two ranks, one
// kernel each (a block of 4 warps), rounds of "arrive: store the round into the peer's inbox;
// wait: poll this rank's own inbox for the peer's round", every variant on the same memory:
//   release       thread 0: st.release.sys (what ccoLsaBarrierSession::arrive(RELEASE) does;
//                 it waits until every earlier store of the CTA is acknowledged, the previous
//                 round's inbox store included)
//   relaxed       thread 0: st.relaxed.sys (ACQUIRE / RELAXED orders: no release at all)
//   rotate-2/4    the release store by lane 0 of warp (round % 2) / (round % 4): whether a
//                 release waits only for its own warp's stores (then the previous round's,
//                 made by another warp, is not waited for) or for the whole CTA's
//   fence-rotate  fence.acq_rel.sys + st.relaxed.sys by the rotating warp
// and the same rounds through ccoLsaBarrierSession<ccoCoopBlock>::sync(order):
//   session-<order>        one session per round, built from a ccoDevComm in global memory
//                          (what each call of the bitcode's cco_lsa_barrier_sync does)
//   kept-session-<order>   one session for every round, the ccoDevComm by value (C++ callers)
// Diagnostic, not a benchmark of record (`cco perf --suites barrier` is):
//   nvcc -std=c++17 -arch=sm_90 -O2 -I. -Ihost/include tools/perf/barrier_fence_probe.cu -Lbazel-bin/host -lcco -o p
//   python -m cco.launch -n 2 ./p
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "cco/cco.hpp"
#include "device/lsa_barrier.hpp"
#include "examples/cpp/launch_env.h"

enum Variant { kRelease, kRelaxed, kRotate2, kRotate4, kFenceRotate };

__device__ void StoreRelease(unsigned* p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ void StoreRelaxed(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ unsigned LoadAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

template <Variant kVariant>
__global__ void rounds(unsigned* theirs, const unsigned* mine, unsigned base, int count, int* stuck) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = 1; i <= count; ++i) {
    const unsigned round = base + static_cast<unsigned>(i);
    __syncthreads();  // the block's earlier work comes before the arrival
    const int arriver = kVariant == kRotate2 ? i % 2 : (kVariant == kRotate4 || kVariant == kFenceRotate) ? i % 4 : 0;
    if (warp == arriver && lane == 0) {
      if (kVariant == kRelaxed) {
        StoreRelaxed(theirs, round);
      } else if (kVariant == kFenceRotate) {
        asm volatile("fence.acq_rel.sys;" ::: "memory");
        StoreRelaxed(theirs, round);
      } else {
        StoreRelease(theirs, round);
      }
    }
    if (threadIdx.x == 0) {
      long long polls = 0;
      while (LoadAcquire(mine) < round)
        if (++polls > (1ll << 28)) {
          *stuck = 1;
          return;
        }
    }
    __syncthreads();
  }
}

template <ccoMemoryOrder kOrder> __global__ void sessions(const ccoDevComm* dc, int count, int* stuck) {
  for (int i = 0; i < count; ++i) {
    ccoLsaBarrierSession<ccoCoopBlock> s(ccoCoopBlock(), *dc, 0);
    if (s.sync(kOrder) != CCO_DEVICE_STATUS_OK) *stuck = 1;
  }
}
template <ccoMemoryOrder kOrder> __global__ void kept_session(ccoDevComm dc, int count, int* stuck) {
  ccoLsaBarrierSession<ccoCoopBlock> s(ccoCoopBlock(), dc, 0);
  for (int i = 0; i < count; ++i)
    if (s.sync(kOrder) != CCO_DEVICE_STATUS_OK) *stuck = 1;
}

int main() {
  int rank = 0, world = 0;
  ccoUniqueId id;
  if (!JoinFromLaunchEnv("./barrier_fence_probe", &rank, &world, &id) || world != 2) return 2;
  UseDevice(rank);
  ccoComm* comm = nullptr;
  CHECK_CCO(ccoCommCreate(id, 2, rank, size_t{256} << 20, &comm));
  void* mem = nullptr;
  ccoWindow_t win = 0;
  CHECK_CCO(ccoWindowAllocRegister(comm, 1 << 16, &mem, &win));
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_NONE;
  reqs.lsaBarrierCount = 1;
  ccoDevComm dc;
  CHECK_CCO(ccoDevCommCreate(comm, &reqs, &dc));
  const auto* dcGlobal = reinterpret_cast<const ccoDevComm*>(dc.ptr);  // ccoDevCommCreate's device copy
  void* peerInbox = nullptr;
  CHECK_CCO(ccoGetPeerPtr(comm, win, 1 - rank, 0, &peerInbox));
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  int* stuck = NewErrorWord(stream);
  cudaMemsetAsync(mem, 0, 64, stream);  // this rank's inbox starts below every round
  cudaStreamSynchronize(stream);
  cudaEvent_t start, end;
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  const int count = 100000;
  const char* names[] = {"release",
                         "relaxed",
                         "rotate-2",
                         "rotate-4",
                         "fence-rotate",
                         "session-acq_rel",
                         "session-acquire",
                         "kept-session-acq_rel",
                         "kept-session-acquire"};
  unsigned base = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (int v = 0; v < 9; ++v) {
      CHECK_CCO(ccoBarrierAll(comm));  // both ranks start each variant together
      auto* theirs = static_cast<unsigned*>(peerInbox);
      auto* mine = static_cast<const unsigned*>(mem);
      cudaEventRecord(start, stream);
      switch (v) {
        case 0: rounds<kRelease><<<1, 128, 0, stream>>>(theirs, mine, base, count, stuck); break;
        case 1: rounds<kRelaxed><<<1, 128, 0, stream>>>(theirs, mine, base, count, stuck); break;
        case 2: rounds<kRotate2><<<1, 128, 0, stream>>>(theirs, mine, base, count, stuck); break;
        case 3: rounds<kRotate4><<<1, 128, 0, stream>>>(theirs, mine, base, count, stuck); break;
        case 4: rounds<kFenceRotate><<<1, 128, 0, stream>>>(theirs, mine, base, count, stuck); break;
        case 5: sessions<CCO_MEMORY_ORDER_ACQ_REL><<<1, 128, 0, stream>>>(dcGlobal, count, stuck); break;
        case 6: sessions<CCO_MEMORY_ORDER_ACQUIRE><<<1, 128, 0, stream>>>(dcGlobal, count, stuck); break;
        case 7: kept_session<CCO_MEMORY_ORDER_ACQ_REL><<<1, 128, 0, stream>>>(dc, count, stuck); break;
        default: kept_session<CCO_MEMORY_ORDER_ACQUIRE><<<1, 128, 0, stream>>>(dc, count, stuck); break;
      }
      cudaEventRecord(end, stream);
      if (v < 5) base += count;
      if (cudaStreamSynchronize(stream) != cudaSuccess) return 1;
      float ms = 0;
      cudaEventElapsedTime(&ms, start, end);
      printf("rank %d pass %d %-21s %6.3f us a round\n", rank, pass, names[v], ms * 1e3 / count);
    }
  }
  fflush(stdout);
  const int bad = ErrorsAfter(stream, stuck, rank, 2, "no round stuck");
  CHECK_CCO(ccoBarrierAll(comm));
  CHECK_CCO(ccoDevCommDestroy(comm, &dc));
  CHECK_CCO(ccoWindowDeregister(comm, win));
  CHECK_CCO(ccoCommDestroy(comm));
  return bad == 0 ? 0 : 1;
}
