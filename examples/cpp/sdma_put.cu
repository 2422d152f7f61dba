// SPDX-License-Identifier: MIT
// Copy-engine puts and gets with the header-only C++ device API (ccoSdma, device/sdma.hpp):
// each rank puts lsaRank*1000+i into the next LSA rank's window, once by window and offset and
// once on resolved pointers (ccoGetLsaPeerPtr), waits for both signals, gets the previous
// rank's source back through a pointer, and checks every word. Needs CCO_ENABLE_SDMA=1.
//
//   nvcc -std=c++17 -arch=sm_90 -I. -Ihost/include examples/cpp/sdma_put.cu -Lbazel-bin/host -lcco -o sdma_put
//   hipcc -std=c++17 --offload-arch=gfx942 -x hip -I. -Ihost/include examples/cpp/sdma_put.cu -Lbazel-bin/host -lcco -o
//   sdma_put CCO_ENABLE_SDMA=1 python -m cco.launch -n 2 ./sdma_put
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cco/cco_scale_out.hpp"       // the guide's header for SDMA (pulls in cco/cco.hpp)
#include "examples/cpp/gpu_runtime.h"  // CUDA or HIP, one source
#include "examples/cpp/launch_env.h"

// The window: [0, n) this rank's source, [n, 2n) what the window-form put brings, [2n, 3n)
// what the pointer-form put brings, [3n, 4n) what this rank's get fetches.
__global__ void sdma_puts_and_get(ccoDevComm dc, ccoWindow_t win, int n, int* errors) {
  ccoSdma sdma(dc, /*timeoutNs=*/10000000000ull);
  const int peer = (dc.lsaRank + 1) % dc.lsaSize;
  const int left = (dc.lsaRank + dc.lsaSize - 1) % dc.lsaSize;
  const uint64_t words = static_cast<uint64_t>(n) * sizeof(unsigned);
  auto* mine = static_cast<unsigned*>(ccoGetLsaPeerPtr(win, dc.lsaRank, 0));
  for (int i = threadIdx.x; i < n; i += blockDim.x) mine[i] = dc.lsaRank * 1000 + i;
  auto check = [&](int status) {
    if (status != CCO_DEVICE_STATUS_OK) atomicAdd(errors, 1000000);
  };
  // The block's writes come before each post (the coop synchronises first).
  check(sdma.put<ccoCoopBlock>(peer, win, words, win, 0, words, /*queue=*/0));
  check(sdma.put<ccoCoopBlock>(peer, ccoGetLsaPeerPtr(win, peer, 2 * words), mine, words, /*queue=*/1));
  check(sdma.wait_signal<ccoCoopBlock>(left, 0, 1));
  check(sdma.wait_signal<ccoCoopBlock>(left, 1, 1));
  // The left rank's source, fetched through pointers; the local pool counts it.
  check(sdma.get<ccoCoopBlock>(left, ccoGetLsaPeerPtr(win, dc.lsaRank, 3 * words), ccoGetLsaPeerPtr(win, left, 0),
                               words, /*queue=*/0));
  check(sdma.wait_local<ccoCoopBlock>(left, 0, 1));
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    for (int part = 1; part <= 3; ++part)
      if (mine[part * n + i] != static_cast<unsigned>(left * 1000 + i)) atomicAdd(errors, 1);
  check(sdma.quiet<ccoCoopBlock>(peer));
}

int main() {
  int rank = 0, world = 0;
  ccoUniqueId id;
  if (!JoinFromLaunchEnv("./sdma_put", &rank, &world, &id)) return 2;
  if (!UseDevice(rank)) return 2;

  const int n = 1 << 14;
  ccoComm* comm = nullptr;
  CHECK_CCO(ccoCommCreate(id, world, rank, size_t{256} << 20, &comm));
  void* mem = nullptr;
  ccoWindow_t win = 0;
  CHECK_CCO(ccoWindowRegister(comm, 4 * n * sizeof(unsigned), &win, &mem));  // the guide's size-only form
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_NONE;
  reqs.sdmaQueueCount = 2;
  ccoDevComm dc;
  CHECK_CCO(ccoDevCommCreate(comm, &reqs, &dc));
  CHECK_CCO(ccoBarrierAll(comm));  // every window is registered before any rank's copies

  cudaStream_t stream;  // a stream of our own, waited on by itself
  CHECK_GPU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int* errors = NewErrorWord(stream);
  if (!errors) return 1;
  sdma_puts_and_get<<<1, 256, 0, stream>>>(dc, win, n, errors);
  const int found = ErrorsAfter(stream, errors, rank, world, "SDMA puts (window, pointers) and get");
  CHECK_GPU(cudaStreamDestroy(stream));
  CHECK_CCO(ccoBarrierAll(comm));
  CHECK_CCO(ccoDevCommDestroy(comm, &dc));
  CHECK_CCO(ccoWindowDeregister(comm, win));
  CHECK_CCO(ccoCommDestroy(comm));
  return found == 0 ? 0 : 1;
}
