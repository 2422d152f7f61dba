// SPDX-License-Identifier: MIT
// The kernel of examples/python/02_lsa_put.py, written by hand against the guide's C++ header
// (cco/cco.hpp) and loaded from Python: each rank stores lsaRank*1000+i into the next LSA rank's
// window through its load/store pointer, the ranks meet at an LSA barrier, and each counts
// the words of its own window that differ from what the previous rank must have stored.
#if defined(__HIP__)
#include <hip/hip_runtime.h>  // threadIdx, atomicAdd: nvcc brings CUDA's by itself, clang -x hip does not
#endif

#include "cco/cco.hpp"

extern "C" __global__ void lsa_put(const ccoDevComm* dc, ccoWindow_t win, int n, int* errors) {
  const int peer = (dc->lsaRank + 1) % dc->lsaSize;
  const int left = (dc->lsaRank + dc->lsaSize - 1) % dc->lsaSize;
  auto* dst = static_cast<unsigned*>(ccoGetLsaPeerPtr(win, peer, 0));
  for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = dc->lsaRank * 1000 + i;

  ccoLsaBarrierSession<ccoCoopBlock> barrier(ccoCoopBlock(), *dc, 0);
  if (barrier.sync(10000000000ull) != CCO_DEVICE_STATUS_OK) atomicAdd(errors, 1000000);

  const auto* mine = static_cast<const unsigned*>(ccoGetLsaPeerPtr(win, dc->lsaRank, 0));
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    if (mine[i] != static_cast<unsigned>(left * 1000 + i)) atomicAdd(errors, 1);
}
