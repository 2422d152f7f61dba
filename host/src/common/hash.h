// SPDX-License-Identifier: MIT
// FNV-1a, 64-bit: a stable hash for identities and checksums (not for security).
#ifndef CCO_HOST_COMMON_HASH_H_
#define CCO_HOST_COMMON_HASH_H_

#include <stddef.h>
#include <stdint.h>

namespace cco {

inline uint64_t Fnv1a(const void* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<const uint8_t*>(data)[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace cco

#endif  // CCO_HOST_COMMON_HASH_H_
