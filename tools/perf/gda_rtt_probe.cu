// SPDX-License-Identifier: MIT
// Where a GDA round trip's microseconds go: two ranks bounce a signal, one kernel each,
// and every rank times its posts and its waits (SM cycles) apart, for
//   thread / block    ccoGda::signal + wait_signal with ccoCoopThread / ccoCoopBlock (128),
//                     the kernel taking ccoDevComm by value (a C++ kernel's way)
//   global            the same with a block, from a ccoDevComm in global memory (what the
//                     bitcode wrappers get as `dc`)
//   raw               the floor on the same memory: one thread, a system-scope release add
//                     into the peer's word and acquire polls of its own (no ccoGda at all)
//   raw-fence         the same, polling relaxed and fencing (system scope) once it holds
//   raw-4             the same, polling the sum of 4 words relaxed, then the fence (what
//                     wait_signal does for 2 ranks: 2 proxy words, 2 direct words)
// Diagnostic, not a benchmark of record (`cco perf --suites gda` is):
//   nvcc -std=c++17 -arch=sm_90 -O2 -I. -Ihost/include tools/perf/gda_rtt_probe.cu -Lbazel-bin/host -lcco -o probe
//   python -m cco.launch -n 2 ./probe
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cco/cco_scale_out.hpp"
#include "examples/cpp/launch_env.h"

struct Times {
  unsigned long long post, wait, total;
  int errors;
};

template <class Coop> __device__ void Bounce(const ccoDevComm& dc, int peer, int rounds, bool first, Times* t) {
  ccoGda<> gda(dc, 0, 10000000000ull);
  long long post = 0, wait = 0;
  int errors = 0;
  const long long start = clock64();
  for (int i = 0; i < rounds; ++i) {
    long long a = clock64();
    if (!first) errors += gda.wait_signal<Coop>(1, 1) != 0;
    long long b = clock64();
    errors += gda.signal<Coop>(peer, 1) != 0;
    long long c = clock64();
    if (first) errors += gda.wait_signal<Coop>(1, 1) != 0;
    long long d = clock64();
    post += c - b;
    wait += (b - a) + (d - c);
  }
  if (threadIdx.x == 0)
    *t = Times{static_cast<unsigned long long>(post), static_cast<unsigned long long>(wait),
               static_cast<unsigned long long>(clock64() - start), errors};
}
template <class Coop> __global__ void bounce(ccoDevComm dc, int peer, int rounds, bool first, Times* t) {
  Bounce<Coop>(dc, peer, rounds, first, t);
}
__global__ void bounce_global(const ccoDevComm* dc, int peer, int rounds, bool first, Times* t) {
  Bounce<ccoCoopBlock>(*dc, peer, rounds, first, t);
}

// One thread: add 1 to this rank's word at the peer (release, system scope), poll its own
// word for the peer's (acquire).
template <int kWay> __device__ bool Reached(const uint64_t* mine, uint64_t least) {
  namespace arch = cco::arch;
  if (kWay == 0) return arch::load<cco::order::Acquire, cco::scope::System>(mine) >= least;
  uint64_t sum = 0;
  for (int i = 0; i < (kWay == 1 ? 1 : 4); ++i)
    sum += arch::load<cco::order::Relaxed, cco::scope::System>(mine + 8 * i);
  if (sum < least) return false;
  arch::fence<cco::scope::System>();
  return true;
}

template <int kWay> __global__ void raw(uint64_t* theirs, const uint64_t* mine, int rounds, bool first, Times* t) {
  namespace arch = cco::arch;
  long long post = 0, wait = 0;
  const long long start = clock64();
  for (int i = 1; i <= rounds; ++i) {
    long long a = clock64();
    if (!first)
      while (!Reached<kWay>(mine, static_cast<uint64_t>(i))) {
      }
    long long b = clock64();
    arch::add<cco::order::Release, cco::scope::System>(theirs, uint64_t{1});
    long long c = clock64();
    if (first)
      while (!Reached<kWay>(mine, static_cast<uint64_t>(i))) {
      }
    long long d = clock64();
    post += c - b;
    wait += (b - a) + (d - c);
  }
  *t = Times{static_cast<unsigned long long>(post), static_cast<unsigned long long>(wait),
             static_cast<unsigned long long>(clock64() - start), 0};
}

int main() {
  int rank = 0, world = 0;
  ccoUniqueId id;
  if (!JoinFromLaunchEnv("./probe", &rank, &world, &id)) return 2;
  if (world != 2) {
    fprintf(stderr, "the probe bounces between 2 ranks (python -m cco.launch -n 2)\n");
    return 2;
  }
  const int peer = 1 - rank;
  UseDevice(rank);
  int device = 0, khz = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device);
  ccoComm* comm = nullptr;
  CHECK_CCO(ccoCommCreate(id, 2, rank, size_t{256} << 20, &comm));
  void* mem = nullptr;
  ccoWindow_t win = 0;
  CHECK_CCO(ccoWindowAllocRegister(comm, 1 << 20, &mem, &win));
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
  reqs.gdaContextCount = 1;
  ccoDevComm dc;
  CHECK_CCO(ccoDevCommCreate(comm, &reqs, &dc));
  Times* t = nullptr;
  cudaMallocManaged(&t, sizeof(Times));
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  const int rounds = 2000;
  const double us = 1e3 / khz;                                   // per cycle
  ccoDevComm* dcGlobal = reinterpret_cast<ccoDevComm*>(dc.ptr);  // ccoDevCommCreate's device copy
  for (const char* variant : {"thread", "block", "global", "raw", "raw-fence", "raw-4", "thread", "block", "global",
                              "raw", "raw-fence", "raw-4"}) {
    CHECK_CCO(ccoBarrierAll(comm));
    if (!strcmp(variant, "thread")) {
      bounce<ccoCoopThread><<<1, 1, 0, stream>>>(dc, peer, rounds, rank == 0, t);
    } else if (!strcmp(variant, "block")) {
      bounce<ccoCoopBlock><<<1, 128, 0, stream>>>(dc, peer, rounds, rank == 0, t);
    } else if (!strcmp(variant, "global")) {
      bounce_global<<<1, 128, 0, stream>>>(dcGlobal, peer, rounds, rank == 0, t);
    } else {
      // Words of the window: each rank's at offset 8 * rank, zeroed before each run.
      void* peerWord = nullptr;
      CHECK_CCO(ccoGetPeerPtr(comm, win, peer, 8 * rank, &peerWord));
      cudaMemsetAsync(static_cast<char*>(mem) + 8 * peer, 0, 8, stream);
      cudaStreamSynchronize(stream);
      CHECK_CCO(ccoBarrierAll(comm));
      auto* theirs = static_cast<uint64_t*>(peerWord);
      auto* mine = reinterpret_cast<const uint64_t*>(static_cast<char*>(mem) + 8 * peer);
      if (!strcmp(variant, "raw")) raw<0><<<1, 1, 0, stream>>>(theirs, mine, rounds, rank == 0, t);
      else if (!strcmp(variant, "raw-fence")) raw<1><<<1, 1, 0, stream>>>(theirs, mine, rounds, rank == 0, t);
      else raw<2><<<1, 1, 0, stream>>>(theirs, mine, rounds, rank == 0, t);
    }
    cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
      fprintf(stderr, "rank %d: %s: %s\n", rank, variant, cudaGetErrorString(e));
      return 1;
    }
    printf("rank %d %-6s round trip %6.2f us: posting %5.2f us, waiting %5.2f us (errors %d)\n", rank, variant,
           t->total * us / rounds, t->post * us / rounds, t->wait * us / rounds, t->errors);
  }
  fflush(stdout);
  CHECK_CCO(ccoBarrierAll(comm));
  CHECK_CCO(ccoDevCommDestroy(comm, &dc));
  CHECK_CCO(ccoWindowDeregister(comm, win));
  CHECK_CCO(ccoCommDestroy(comm));
  return 0;
}
