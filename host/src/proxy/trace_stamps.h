// SPDX-License-Identifier: MIT
// The proxy's part of a device communicator's trace (abi/trace.h). A traced descriptor names
// its trace record (ccoGdaDesc.traceRecord); the proxy stamps, on the host's CLOCK_MONOTONIC,
// when it took the descriptor, when its work was queued (on a stream, or with the network
// backend) and when that work completed: when the ring's `consumed`, which the proxy writes
// behind the work, passed its ticket. It also keeps its clock in a host-mapped word that the
// device samples, so that the two clocks can be aligned.
//
// Off (the device communicator does not trace) the proxy pays one null test per descriptor and
// per ring it drains. Everything here runs on the proxy's thread but Snapshot and Reset, which
// the host calls when no kernel uses the device communicator; a mutex keeps them apart.
#ifndef CCO_HOST_PROXY_TRACE_STAMPS_H_
#define CCO_HOST_PROXY_TRACE_STAMPS_H_

#include <stdint.h>

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "abi/cco_abi.h"

namespace cco {

// The host's clock, as the proxy stamps it (CLOCK_MONOTONIC, ns).
uint64_t TraceNow();

// The stamps of one device communicator's records, by record index: shared by its GDA and
// SDMA rings.
class TraceStamps {
 public:
  struct Stamp {
    uint64_t taken = 0;   // the proxy read the descriptor
    uint64_t queued = 0;  // its work was on a stream, or with the network backend
    uint64_t done = 0;    // the ring's `consumed` passed it
  };
  // clockWord: the host-mapped word the device samples (abi/trace.h, hostClock); may be null.
  TraceStamps(uint32_t capacity, uint64_t* clockWord);

  // The stamps so far (a copy), and a fresh start: what a flush takes.
  std::vector<Stamp> Snapshot() const;
  void Reset();

 private:
  friend class RingTrace;
  mutable std::mutex mu_;
  std::vector<Stamp> stamps_;
  uint64_t generation_ = 0;  // Reset's count: what a ring still held from before stamps nothing
  uint64_t* clockWord_;
};

// One ring set's traced descriptors still in flight, by ring (in ticket order: a ring's
// work completes in ticket order).
class RingTrace {
 public:
  RingTrace(std::shared_ptr<TraceStamps> stamps, uint32_t rings);

  // Once per pass over the ring set: the clock word the device samples.
  void Tick();
  // The proxy took (at `taken`) and has just queued the work of `ticket` of `ring`, whose
  // descriptor names record traceRecord - 1 (one out of range is ignored: the device wrote it).
  void Queued(uint32_t ring, uint64_t ticket, uint32_t traceRecord, uint64_t taken);
  // After the proxy published `consumed` for `ring`: the traced tickets below what the ring's
  // host word says (the stream's write may still be on its way) are done, now.
  void Poll(uint32_t ring, const ccoGdaRingHost* host);

 private:
  struct Pending {
    uint64_t ticket;
    uint32_t index;
    uint64_t generation;
  };
  std::shared_ptr<TraceStamps> stamps_;
  std::vector<std::deque<Pending>> pending_;
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_TRACE_STAMPS_H_
