// SPDX-License-Identifier: MIT
// GPU-initiated put + signal / wait with the header-only C++ device API (ccoGda,
// device/gda.hpp), mirroring the guide's cpp/02_gda_put: each rank puts rank*1000+i into the
// next rank's window with a signal, waits for the signal of the previous rank, checks the
// data, then all ranks meet at a GDA barrier. FULL connections: every rank, this host's
// included (the guide's recipe "GDA on one node").
//
//   nvcc -std=c++17 -arch=sm_90 -I. -Ihost/include examples/cpp/gda_put.cu -Lbazel-bin/host -lcco -o gda_put
//   hipcc -std=c++17 --offload-arch=gfx942 -x hip -I. -Ihost/include examples/cpp/gda_put.cu -Lbazel-bin/host -lcco -o
//   gda_put python -m cco.launch -n 2 ./gda_put        (CCO_RANK, CCO_WORLD_SIZE, CCO_UNIQUE_ID)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cco/cco_scale_out.hpp"       // the guide's header for GDA (pulls in cco/cco.hpp)
#include "examples/cpp/gpu_runtime.h"  // CUDA or HIP, one source
#include "examples/cpp/launch_env.h"

__global__ void put_signal_wait(ccoDevComm dc, ccoWindow_t win, int n, int* errors) {
  ccoGda<> gda(dc, /*context=*/0, /*timeoutNs=*/10000000000ull);
  const int peer = (dc.rank + 1) % dc.worldSize;
  const int left = (dc.rank + dc.worldSize - 1) % dc.worldSize;
  auto* mine = reinterpret_cast<unsigned*>(cco::lsa_local_address(reinterpret_cast<const ccoWindowDevice*>(win), 0));
  for (int i = threadIdx.x; i < n; i += blockDim.x) mine[i] = dc.rank * 1000 + i;
  // The block's writes, then one put of them into the peer's second half, signal 0 += 1.
  if (gda.put<ccoCoopBlock>(peer, win, n * sizeof(unsigned), win, 0, n * sizeof(unsigned), CCO_SIGNAL_INC, 0) !=
      CCO_DEVICE_STATUS_OK)
    atomicAdd(errors, 1000000);
  if (gda.wait_signal<ccoCoopBlock>(0, 1) != CCO_DEVICE_STATUS_OK) atomicAdd(errors, 1000000);
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    if (mine[n + i] != static_cast<unsigned>(left * 1000 + i)) atomicAdd(errors, 1);
  if (gda.flush<ccoCoopBlock>() != CCO_DEVICE_STATUS_OK) atomicAdd(errors, 1000000);
  ccoGdaBarrierSession<ccoCoopBlock> barrier(ccoCoopBlock(), gda, 0);
  if (barrier.sync() != CCO_DEVICE_STATUS_OK) atomicAdd(errors, 1000000);
}

int main() {
  int rank = 0, world = 0;
  ccoUniqueId id;
  if (!JoinFromLaunchEnv("./gda_put", &rank, &world, &id)) return 2;
  if (!UseDevice(rank)) return 2;

  const int n = 1 << 14;
  ccoComm* comm = nullptr;
  CHECK_CCO(ccoCommCreate(id, world, rank, size_t{256} << 20, &comm));
  void* mem = nullptr;
  ccoWindow_t win = 0;
  CHECK_CCO(ccoWindowAllocRegister(comm, 2 * n * sizeof(unsigned), &mem, &win));
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
  reqs.gdaContextCount = 1;
  ccoDevComm dc;
  CHECK_CCO(ccoDevCommCreate(comm, &reqs, &dc));

  // A stream of our own, waited on by itself: a synchronous copy on the legacy default
  // stream would wait for a kernel launched there, which waits for a signal.
  cudaStream_t stream;
  CHECK_GPU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int* errors = NewErrorWord(stream);
  if (!errors) return 1;
  put_signal_wait<<<1, 256, 0, stream>>>(dc, win, n, errors);
  const int found = ErrorsAfter(stream, errors, rank, world, "");
  CHECK_GPU(cudaStreamDestroy(stream));
  CHECK_CCO(ccoBarrierAll(comm));
  CHECK_CCO(ccoDevCommDestroy(comm, &dc));
  CHECK_CCO(ccoWindowDeregister(comm, win));
  CHECK_CCO(ccoCommDestroy(comm));
  return found == 0 ? 0 : 1;
}
