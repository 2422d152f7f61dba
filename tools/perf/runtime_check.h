// SPDX-License-Identifier: MIT
// What the single-file probes of tools/perf that use the CUDA runtime share:
//   RT_CHECK(call)   a runtime call that must succeed, or the probe exits naming it
#ifndef CCO_TOOLS_PERF_RUNTIME_CHECK_H_
#define CCO_TOOLS_PERF_RUNTIME_CHECK_H_

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define RT_CHECK(call)                                                                      \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

#endif  // CCO_TOOLS_PERF_RUNTIME_CHECK_H_
