// SPDX-License-Identifier: MIT
// The communicators alive in this process, by handle. A handle is a number that names one
// communicator for the life of the process: not its address, and never given out twice, so
// a destroyed, never-created or stale handle is an error, not a use-after-free and not a
// call on whichever communicator was created later at the same address. Entry points hold
// a reference for the call's duration, so a concurrent destroy cannot free it under them.
#ifndef CCO_HOST_API_COMM_REGISTRY_H_
#define CCO_HOST_API_COMM_REGISTRY_H_

#include <memory>

#include "comm/communicator.h"

namespace cco {

// Registers `comm` under a fresh handle (also stored in comm->handle) and returns it.
ccoComm* RegisterComm(const std::shared_ptr<ccoComm>& comm);
// The live communicator behind `handle`, or null.
std::shared_ptr<ccoComm> LookupComm(const ccoComm* handle);
// Removes it; returns it (null if it was not live) for the caller to tear down.
std::shared_ptr<ccoComm> UnregisterComm(const ccoComm* handle);

}  // namespace cco

#endif  // CCO_HOST_API_COMM_REGISTRY_H_
