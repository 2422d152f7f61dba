// SPDX-License-Identifier: MIT
// Intra-node LSA put with the header-only C++ device API (device/cco_device.hpp) and
// the C host API (cco.h): each rank writes lsaRank*1000+i into the next rank's window, the
// ranks meet at LSA barriers of every coop scope, and each rank checks what it received.
//
//   nvcc -std=c++17 -arch=sm_90 -I. -Ihost/include examples/cpp/lsa_put.cu -Lbazel-bin/host -lcco -o lsa_put
//   hipcc -std=c++17 --offload-arch=gfx942 -x hip -I. -Ihost/include examples/cpp/lsa_put.cu -Lbazel-bin/host -lcco -o
//   lsa_put python -m cco.launch -n 2 ./lsa_put        (CCO_RANK, CCO_WORLD_SIZE, CCO_UNIQUE_ID)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cco/cco.hpp"                 // the guide's header for host + LSA
#include "examples/cpp/gpu_runtime.h"  // CUDA or HIP, one source
#include "examples/cpp/launch_env.h"

__global__ void put_and_check(ccoDevComm dc, ccoWindow_t win, int n, int* errors) {
  const int peer = (dc.lsaRank + 1) % dc.lsaSize;
  const int left = (dc.lsaRank + dc.lsaSize - 1) % dc.lsaSize;
  auto* dst = static_cast<unsigned*>(ccoGetLsaPeerPtr(win, peer, 0));
  for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = dc.lsaRank * 1000 + i;

  // Block scope: the whole block's stores come before the arrival.
  ccoLsaBarrierSession<ccoCoopBlock> block(ccoCoopBlock(), dc, 0);
  if (block.sync() != CCO_DEVICE_STATUS_OK) atomicAdd(errors, 1000000);

  auto* mine = static_cast<const unsigned*>(ccoGetLsaPeerPtr(win, dc.lsaRank, 0));
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    if (mine[i] != static_cast<unsigned>(left * 1000 + i)) atomicAdd(errors, 1);

  // Warp and thread scopes, with a timeout this time.
  if (threadIdx.x < warpSize) {
    ccoLsaBarrierSession<ccoCoopWarp> warp(ccoCoopWarp(), dc, 1);
    if (warp.sync(1000000000ull) != CCO_DEVICE_STATUS_OK) atomicAdd(errors, 1000000);
  }
  if (threadIdx.x == 0) {
    ccoLsaBarrierSession<ccoCoopThread> one(ccoCoopThread(), dc, 2);
    if (one.sync(1000000000ull) != CCO_DEVICE_STATUS_OK) atomicAdd(errors, 1000000);
  }
}

int main() {
  int rank = 0, world = 0;
  ccoUniqueId id;
  if (!JoinFromLaunchEnv("./lsa_put", &rank, &world, &id)) return 2;
  if (!UseDevice(rank)) return 2;

  const int n = 1 << 16;
  ccoComm* comm = nullptr;
  CHECK_CCO(ccoCommCreate(id, world, rank, size_t{256} << 20, &comm));
  void* mem = nullptr;
  ccoWindow_t win = 0;
  CHECK_CCO(ccoWindowAllocRegister(comm, n * sizeof(unsigned), &mem, &win));
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_NONE;
  reqs.lsaBarrierCount = 3;
  ccoDevComm dc;
  CHECK_CCO(ccoDevCommCreate(comm, &reqs, &dc));

  cudaStream_t stream;
  CHECK_GPU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int* errors = NewErrorWord(stream);
  if (!errors) return 1;
  put_and_check<<<1, 256, 0, stream>>>(dc, win, n, errors);
  const int found = ErrorsAfter(stream, errors, rank, world, "");
  CHECK_GPU(cudaStreamDestroy(stream));
  CHECK_CCO(ccoBarrierAll(comm));
  CHECK_CCO(ccoDevCommDestroy(comm, &dc));
  CHECK_CCO(ccoWindowDeregister(comm, win));
  CHECK_CCO(ccoCommDestroy(comm));
  return found == 0 ? 0 : 1;
}
