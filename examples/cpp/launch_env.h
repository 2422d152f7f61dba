// What the C++ examples (and tools/perf's probes) share: CHECK_CCO, and joining the job that
// `python -m cco.launch -n N ./program` started, which hands each process CCO_RANK,
// CCO_WORLD_SIZE and CCO_UNIQUE_ID (the id as 256 hex digits).
#ifndef CCO_EXAMPLES_CPP_LAUNCH_ENV_H_
#define CCO_EXAMPLES_CPP_LAUNCH_ENV_H_

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

#endif  // CCO_EXAMPLES_CPP_LAUNCH_ENV_H_
