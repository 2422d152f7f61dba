// The physical memory of ranks that share this process, for one another. Before a window
// registration's first agreement a rank publishes its allocation's handle under
// (communicator, registration, world rank); after it, its in-process peers map that handle
// directly, with no descriptor passing and no file descriptor spent (128 ranks as threads
// of one process need none); after the closing agreement the owner withdraws it. A mapping
// keeps the memory alive on every platform, so the owner's later release is safe.
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
