// What the C++ examples (and tools/perf's probes) share: CHECK_CCO, joining the job that
// `python -m cco.launch -n N ./program` started, which hands each process CCO_RANK,
// CCO_WORLD_SIZE and CCO_UNIQUE_ID (the id as 256 hex digits), the rank's GPU, and the error
// word a checking kernel counts into.
#ifndef CCO_EXAMPLES_CPP_LAUNCH_ENV_H_
#define CCO_EXAMPLES_CPP_LAUNCH_ENV_H_

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cco/cco.h"

// Returns 1 from the calling function, saying which call failed and why.
#define CHECK_CCO(call)                                                                       \
  do {                                                                                        \
    ccoResult_t r_ = (call);                                                                  \
    if (r_ != ccoSuccess) {                                                                   \
      fprintf(stderr, "%s failed: %s: %s\n", #call, ccoGetErrorString(r_), ccoGetLastError()); \
      return 1;                                                                               \
    }                                                                                         \
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

// This rank's GPU (ranks beyond the GPUs share them, under MPS) and its context, made before
// CCO's first call so the library uses it.
static inline void UseDevice(int rank) {
  int devices = 1;
  cudaGetDeviceCount(&devices);
  cudaSetDevice(rank % (devices > 0 ? devices : 1));
  cudaFree(nullptr);
}

// A device word the kernel counts its errors in, zeroed on `stream` (the kernel's: ordered
// before it, where a copy on the legacy stream would not be).
static inline int* NewErrorWord(cudaStream_t stream) {
  int* errors = nullptr;
  cudaMalloc(&errors, sizeof(int));
  cudaMemsetAsync(errors, 0, sizeof(int), stream);
  return errors;
}

// The kernel's error count once `stream` is done, or -1 when the kernel itself failed (said
// on stderr); frees the word. Prints the rank's verdict as "rank r/n: WHAT: OK (0 errors)".
static inline int ErrorsAfter(cudaStream_t stream, int* errors, int rank, int world, const char* what) {
  int count = -1;
  cudaError_t e = cudaStreamSynchronize(stream);
  if (e == cudaSuccess) e = cudaMemcpy(&count, errors, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(errors);
  if (e != cudaSuccess) {
    fprintf(stderr, "rank %d: kernel failed: %s\n", rank, cudaGetErrorString(e));
    return -1;
  }
  printf("rank %d/%d: %s%s%s (%d errors)\n", rank, world, what, *what ? ": " : "", count == 0 ? "OK" : "WRONG", count);
  return count;
}

#endif  // CCO_EXAMPLES_CPP_LAUNCH_ENV_H_
