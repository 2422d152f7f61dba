// The communicators alive in this process. Entry points look a ccoComm* up here, so a
// destroyed (or never created) handle is an error instead of a use-after-free, and hold
// a reference for the call's duration, so a concurrent destroy cannot free it under them.
#ifndef CCO_HOST_API_COMM_REGISTRY_H_
#define CCO_HOST_API_COMM_REGISTRY_H_

#include <memory>

#include "comm/communicator.h"

namespace cco {

void RegisterComm(const std::shared_ptr<ccoComm>& comm);
// The live communicator behind `handle`, or null.
std::shared_ptr<ccoComm> LookupComm(const ccoComm* handle);
// Removes it; returns it (null if it was not live) for the caller to tear down.
std::shared_ptr<ccoComm> UnregisterComm(const ccoComm* handle);

}  // namespace cco

#endif  // CCO_HOST_API_COMM_REGISTRY_H_
