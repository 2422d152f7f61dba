// SPDX-License-Identifier: MIT
// Sealed memfds: host memory that can travel to another process as a descriptor, sized once
// and sealed so that no holder of the descriptor can shrink or grow it under another's
// mapping (a shrink would kill the mapping process with SIGBUS).
#ifndef CCO_HOST_PLATFORM_MEMFD_H_
#define CCO_HOST_PLATFORM_MEMFD_H_

#include <stddef.h>

#include "common/status.h"

namespace cco {

// The seals every CCO memfd carries.
int MemfdSeals();
Status CreateSealedMemfd(const char* name, size_t size, int* fd);
// Whether `fd` is a sealed memfd of exactly `size` bytes (a peer's descriptor, before use).
Status CheckSealedMemfd(int fd, size_t size);
// Maps a memfd read/write, shared.
Status MapMemfd(int fd, size_t size, void** address);

}  // namespace cco

#endif  // CCO_HOST_PLATFORM_MEMFD_H_
