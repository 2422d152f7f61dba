// SPDX-License-Identifier: MIT
// What one device communicator's SDMA needs on the host (abi/sdma.h): a ring per (LSA peer,
// queue), the proxy's copy-engine stream of each queue, where the signal pools sit, and the
// proxy's running counts. Made with the device communicator when SDMA is enabled (comm/sdma_setup.h); freed
// locally once the proxy let go of it.
#ifndef CCO_HOST_PROXY_SDMA_RESOURCES_H_
#define CCO_HOST_PROXY_SDMA_RESOURCES_H_

#include <stdint.h>

#include <vector>

#include "abi/cco_abi.h"
#include "proxy/ring_set.h"

namespace cco {

struct SdmaResources {
  int queues = 0;
  int lsaSize = 0;
  int lsaRank = 0;
  RingSet rings;                  // lsaSize * queues, ring cco_sdma_slot(peer, queue)
  std::vector<uint64_t> streams;  // by queue: the proxy's (Proxy::QueueStreams), in order, on a copy engine
  // Offsets of the pools in a rank's slice of the flat range (set by ccoDevCommCreate).
  uint64_t signalOffset = 0;  // remote pool
  uint64_t localOffset = 0;   // local pool
  // Proxy state, by slot: what this rank has counted into each peer's remote pool slot, and
  // into its own local pool slot.
  std::vector<uint64_t> sent;
  std::vector<uint64_t> landed;
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_SDMA_RESOURCES_H_
