// SPDX-License-Identifier: MIT
// A unique id handed between processes through a file: rank 0 mints it and writes it
// (atomically, by rename), the others wait for it, bounded (30 s).
#ifndef CCO_TOOLS_PERF_ID_FILE_H_
#define CCO_TOOLS_PERF_ID_FILE_H_

#include <stdio.h>

#include <chrono>
#include <string>
#include <thread>

#include "cco/cco.h"

namespace cco_test {

inline bool ShareId(const char* path, int rank, ccoUniqueId* id) {
  if (path == nullptr) return false;
  if (rank == 0) {
    if (ccoGetUniqueId(id) != ccoSuccess) return false;
    const std::string partial = std::string(path) + ".partial";
    FILE* f = fopen(partial.c_str(), "wb");
    if (f == nullptr) return false;
    const bool written = fwrite(id, sizeof(*id), 1, f) == 1;
    return fclose(f) == 0 && written && rename(partial.c_str(), path) == 0;
  }
  for (int i = 0; i < 3000; ++i) {
    FILE* f = fopen(path, "rb");
    if (f != nullptr) {
      const bool read = fread(id, sizeof(*id), 1, f) == 1;
      fclose(f);
      return read;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace cco_test

#endif  // CCO_TOOLS_PERF_ID_FILE_H_
