// SPDX-License-Identifier: MIT
// The communicator's resource pool: one allocation, registered as a window while the
// communicator is created, that device communicators' resources (barrier inboxes, signal
// words, counters, shadows) are carved from. ccoDevCommCreate then allocates, exports, imports
// and maps nothing: it agrees on the requirements and the carve in one round, where a window
// of its own costs an export, an import and a map on every rank.
//
// The window is internal: host peers map it (their barrier arrivals and direct signals are
// stores into it), but no request names it as a data window (the proxies, SDMA's pointers,
// the network backends' targets refuse it, and its device descriptor reads as a dead window),
// and it holds no pointer the device follows: the device copies of ccoDevComm lie apart.
//
// Its first 256 bytes hold the rank's status word (proxy/proxy_context.h), which its host
// peers read when they see its process end. Free pool memory is zero on every rank: the pool is zeroed before its
// registration and a carve when it is given back (after every rank has destroyed its device communicator), so a new
// device communicator's words read zero before any peer can write them, without a closing agreement. A device
// communicator too large for what is left gets a window of its own.
#ifndef CCO_HOST_COMM_RESOURCE_POOL_H_
#define CCO_HOST_COMM_RESOURCE_POOL_H_

#include <stddef.h>
#include <stdint.h>

#include "comm/communicator.h"

namespace cco {

// The pool's size for an allocation granularity: each slice holds it besides the caller's
// perRankVmmSize.
size_t ResourcePoolBytes(size_t granularity);

// ccoCommCreate's steps: allocates and zeroes the pool (local; freed with the communicator's
// other memory on failure), then registers it (collective, once the host mesh is up).
Status AllocateResourcePool(ccoComm& c);
Status RegisterResourcePool(ccoComm& c);

// Local and deterministic (ranks that carve and give back in the same order get the same
// offsets): `size` bytes of the pool, `*offset` inside this rank's slice. False: no room.
bool CarveResources(ccoComm& c, size_t size, size_t* offset);
// Zeroes this rank's copy of the carve at `offset` (from CarveResources).
Status ZeroResources(ccoComm& c, size_t offset);
// Returns the carve at `offset` to the pool: zeroed first (ZeroResources), by every rank.
Status ReleaseResources(ccoComm& c, size_t offset);

}  // namespace cco

#endif  // CCO_HOST_COMM_RESOURCE_POOL_H_
