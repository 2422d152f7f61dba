// SPDX-License-Identifier: MIT
// The physical memory of ranks that share this process, for one another. Before a window
// registration's first agreement a rank publishes its allocation's handle under
// (communicator, registration, world rank); after it, its in-process peers take a reference
// to that handle (Platform::Reference) and map it, with no descriptor passing over sockets
// and no file descriptor kept (128 ranks as threads of one process need none); after the
// closing agreement the owner withdraws it.
#ifndef CCO_HOST_MEMORY_LOCAL_HANDLES_H_
#define CCO_HOST_MEMORY_LOCAL_HANDLES_H_

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "platform/platform.h"

namespace cco {
namespace local_handles {

struct Key {
  std::string comm;       // the communicator's id tag
  uint64_t registration;  // which ccoWindowRegister call of the communicator
  int rank;               // the owner's world rank
  bool operator<(const Key& o) const;
};

void Publish(const Key& key, MemHandle handle, size_t size);
// The handle an in-process peer published, if it did.
bool Find(const Key& key, MemHandle* handle, size_t* size);
void Withdraw(const Key& key);

}  // namespace local_handles
}  // namespace cco

#endif  // CCO_HOST_MEMORY_LOCAL_HANDLES_H_
