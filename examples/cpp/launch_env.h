// SPDX-License-Identifier: MIT
// What the C++ examples (and tools/perf's probes) share: CHECK_CCO, joining the job that
// `python -m cco.launch -n N ./program` started, which hands each process CCO_RANK,
// CCO_WORLD_SIZE and CCO_UNIQUE_ID (the id as 256 hex digits), the rank's GPU, and the error
// word a checking kernel counts into.
#ifndef CCO_EXAMPLES_CPP_LAUNCH_ENV_H_
#define CCO_EXAMPLES_CPP_LAUNCH_ENV_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cco/cco.h"
#include "examples/cpp/gpu_runtime.h"

// Returns 1 from the calling function, saying which call failed and why.
#define CHECK_CCO(call)                                                                        \
  do {                                                                                         \
    ccoResult_t r_ = (call);                                                                   \
    if (r_ != ccoSuccess) {                                                                    \
      fprintf(stderr, "%s failed: %s: %s\n", #call, ccoGetErrorString(r_), ccoGetLastError()); \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

// This process's rank, the world size and the unique id from the launcher; false, having
// said why on stderr, when the environment does not hold them.
static inline bool JoinFromLaunchEnv(const char* program, int* rank, int* world, ccoUniqueId* id) {
  const char* rank_s = getenv("CCO_RANK");
  const char* world_s = getenv("CCO_WORLD_SIZE");
  const char* uid_s = getenv("CCO_UNIQUE_ID");
  if (!rank_s || !world_s || !uid_s) {
    fprintf(stderr, "run under `python -m cco.launch -n N %s`\n", program);
    return false;
  }
  *rank = atoi(rank_s);
  *world = atoi(world_s);
  bool ok = strlen(uid_s) == 2 * sizeof(id->internal);
  for (size_t i = 0; ok && i < sizeof(id->internal); ++i) {
    unsigned v;
    ok = sscanf(uid_s + 2 * i, "%2x", &v) == 1;
    id->internal[i] = static_cast<char>(v);
  }
  if (!ok) fprintf(stderr, "CCO_UNIQUE_ID is not 256 hex digits\n");
  return ok;
}

// Returns 1 from the calling function, saying which GPU runtime call failed and why.
#define CHECK_GPU(call)                                                  \
  do {                                                                   \
    cudaError_t e_ = (call);                                             \
    if (e_ != cudaSuccess) {                                             \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_)); \
      return 1;                                                          \
    }                                                                    \
  } while (0)

// This rank's GPU (ranks beyond the GPUs share them, under MPS) and its context, made before
// CCO's first call so the library uses it; false, having said why, when there is none.
static inline bool UseDevice(int rank) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e == cudaSuccess) e = cudaSetDevice(rank % (devices > 0 ? devices : 1));
  if (e == cudaSuccess) e = cudaFree(nullptr);
  if (e != cudaSuccess) fprintf(stderr, "rank %d: no GPU to run on: %s\n", rank, cudaGetErrorString(e));
  return e == cudaSuccess;
}

// A device word the kernel counts its errors in, zeroed on `stream` (the kernel's: ordered
// before it, where a copy on the legacy stream would not be); NULL, having said why, on failure.
static inline int* NewErrorWord(cudaStream_t stream) {
  int* errors = nullptr;
  cudaError_t e = cudaMalloc(&errors, sizeof(int));
  if (e == cudaSuccess) e = cudaMemsetAsync(errors, 0, sizeof(int), stream);
  if (e != cudaSuccess) {
    fprintf(stderr, "the error word: %s\n", cudaGetErrorString(e));
    if (errors) (void)cudaFree(errors);
    return nullptr;
  }
  return errors;
}

// The kernel's error count once `stream` is done, or -1 when the kernel itself failed (said
// on stderr); frees the word. Prints the rank's verdict as "rank r/n: WHAT: OK (0 errors)".
static inline int ErrorsAfter(cudaStream_t stream, int* errors, int rank, int world, const char* what) {
  int count = -1;
  cudaError_t e = cudaStreamSynchronize(stream);
  if (e == cudaSuccess) e = cudaMemcpy(&count, errors, sizeof(int), cudaMemcpyDeviceToHost);
  const cudaError_t freed = cudaFree(errors);
  if (e == cudaSuccess) e = freed;
  if (e != cudaSuccess) {
    fprintf(stderr, "rank %d: kernel failed: %s\n", rank, cudaGetErrorString(e));
    return -1;
  }
  printf("rank %d/%d: %s%s%s (%d errors)\n", rank, world, what, *what ? ": " : "", count == 0 ? "OK" : "WRONG", count);
  return count;
}

#endif  // CCO_EXAMPLES_CPP_LAUNCH_ENV_H_
