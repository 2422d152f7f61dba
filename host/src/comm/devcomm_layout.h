// SPDX-License-Identifier: MIT
// Where a device communicator's resources sit, from where they start. Every rank
// computes the same layout from the same requirements, so a peer's inbox is at the same
// offset in every rank's copy. Peers write into them: they hold counts and epochs only,
// never a pointer (the device copy of ccoDevComm lies apart, comm/devcomm.cc).
#ifndef CCO_HOST_COMM_DEVCOMM_LAYOUT_H_
#define CCO_HOST_COMM_DEVCOMM_LAYOUT_H_

#include <stddef.h>

#include "cco/cco.h"
#include "common/status.h"

namespace cco {

struct ResourceLayout {
  size_t barrierEpochs = 0;   // lsaBarrierCount x {epoch, verdict} uint32
  size_t barrierInboxes = 0;  // lsaBarrierCount * lsaSize uint32
  size_t shadows = 0;         // uint64 shadows: gdaSignalCount signals, then gdaCounterCount counters
  size_t flushTargets = 0;    // gdaContextCount * gdaPeerCount uint64 (flush_async)
  size_t gdaEpochs = 0;       // gdaBarrierCount uint64 (right after the flush targets)
  size_t gdaSignals = 0;      // (gdaSignalCount + gdaBarrierCount) * (worldSize + lsaSize) uint64 (abi/gda.h), with GDA
  size_t gdaCounters = 0;     // gdaCounterCount uint64 (right after the signal words)
  size_t sdmaSignals = 0;     // lsaSize * queues uint64: the remote pool (abi/sdma.h), with SDMA
  size_t sdmaLocal = 0;       // lsaSize * queues uint64: the local pool
  size_t sdmaShadows = 0;     // 2 * lsaSize * queues uint64: their shadows
  size_t bytes = 0;           // everything, before rounding to the granularity
};

// Checks the requirements' header and counts, then lays the resources out; `gdaPeerCount`
// is the number of peers the connection type connects (0 without GDA: no signal words),
// `sdmaQueues` the SDMA queues in use (0 without SDMA: no pools).
// A caller built against an older cco.h passes a shorter struct (its `size`): ReadRequirements
// copies the fields it has into `out` and leaves the later ones at the initializer's values,
// then checks them all. Nothing is read past the caller's `size`.
Status ReadRequirements(const ccoDevCommRequirements* reqs, ccoDevCommRequirements* out);
// The shortest ccoDevCommRequirements taken: up to gdaDirectMaxBytes (before gdaDirectGroupMaxBytes).
constexpr size_t kRequirementsMinSize = offsetof(ccoDevCommRequirements, gdaDirectGroupMaxBytes);
// The largest direct-path bound (ccoDevComm.gdaDirectMaxBytes, gdaDirectGroupMaxBytes) a
// device communicator takes.
constexpr int kGdaDirectMaxBytesLimit = 1 << 20;
ResourceLayout LayoutResources(const ccoDevCommRequirements& reqs, int worldSize, int lsaSize, int gdaPeerCount,
                               int sdmaQueues = 0);

}  // namespace cco

#endif  // CCO_HOST_COMM_DEVCOMM_LAYOUT_H_
