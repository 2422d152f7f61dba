// CHECK(call): a CUDA driver call that must succeed, or the probe exits naming it. Shared
// by the single-file probes of tools/perf (each built alone by nvcc in stage_device.sh).
#ifndef CCO_TOOLS_PERF_DRIVER_CHECK_H_
#define CCO_TOOLS_PERF_DRIVER_CHECK_H_

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                     \
  do {                                                                  \
    CUresult r_ = (call);                                               \
    if (r_ != CUDA_SUCCESS) {                                           \
      const char* m_ = nullptr;                                         \
      cuGetErrorString(r_, &m_);                                        \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, m_); \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

#endif  // CCO_TOOLS_PERF_DRIVER_CHECK_H_
