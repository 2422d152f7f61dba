// SPDX-License-Identifier: MIT
// The memory of a set of proxy rings (abi/gda.h), as GDA and SDMA both use it: descriptors
// and host-side words in one host-mapped block, device-side words in device memory, one
// consumer per ring, and a staging word per ring slot (a copy source for put_value that
// stays put until the copy ran: the slot is posted to again only after `consumed` passed it).
#ifndef CCO_HOST_PROXY_RING_SET_H_
#define CCO_HOST_PROXY_RING_SET_H_

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <vector>

#include "abi/cco_abi.h"
#include "common/status.h"
#include "proxy/ring_consumer.h"
#include "proxy/trace_stamps.h"

namespace cco {

class Platform;

struct RingSet {
  uint32_t count = 0;
  uint32_t depth = 0;
  void* host = nullptr;     // descriptors, doorbell marks, then the host-side words
  uint64_t hostDevice = 0;  // ... as the device addresses them
  size_t hostBytes = 0;
  uint64_t device = 0;  // device-side words
  uint64_t* staging = nullptr;
  uint64_t stagingDevice = 0;
  std::vector<RingConsumer> consumers;
  std::shared_ptr<RingTrace> trace;  // the device communicator traces (proxy/trace_stamps.h); else null
  // Every `consumed` is written into the ring's device-side credit cache too, behind the same
  // work (abi/ring.h: SDMA's rings, whose `consumed` always goes through a stream), so that
  // their waiters poll device memory, not host memory.
  bool mirrorConsumed = false;

  uint64_t slotsAddress() const { return hostDevice; }
  uint64_t hostWordsAddress() const { return hostDevice + cco_gda_host_words_offset(count, depth); }
  uint64_t consumedAddress(uint32_t ring) const {
    return cco_gda_ring_host_address(hostWordsAddress(), ring) + offsetof(ccoGdaRingHost, consumed);
  }
  // `ring`'s host-side words, as this process addresses them.
  const ccoGdaRingHost* hostWords(uint32_t ring) const {
    return reinterpret_cast<const ccoGdaRingHost*>(static_cast<const char*>(host) +
                                                   cco_gda_host_words_offset(count, depth)) +
           ring;
  }
  uint64_t consumedCacheAddress(uint32_t ring) const {
    return cco_gda_ring_device_address(device, ring) + offsetof(ccoGdaRingDevice, consumedCache);
  }
  uint64_t failedAddress(uint32_t ring) const {
    return cco_gda_ring_device_address(device, ring) + offsetof(ccoGdaRingDevice, failed);
  }
  // put_value's staging word for `ticket` of `ring`: host pointer and device address.
  uint64_t* stagingWord(uint32_t ring, uint64_t ticket) const {
    return staging + static_cast<size_t>(ring) * depth + cco_gda_slot_of(ticket, depth);
  }
  uint64_t stagingAddress(uint32_t ring, uint64_t ticket) const {
    return stagingDevice + sizeof(uint64_t) * (static_cast<size_t>(ring) * depth + cco_gda_slot_of(ticket, depth));
  }
};

// Allocates and initialises `count` empty rings of `depth` (a power of two) on `device`, their
// `consumed` mirrored into device memory where `mirrorConsumed` (RingSet::mirrorConsumed).
// FreeRings frees them, and also what a call that failed had made.
Status AllocateRings(Platform* platform, int device, uint32_t count, uint32_t depth, bool mirrorConsumed,
                     RingSet* rings);
Status FreeRings(Platform* platform, int device, RingSet* rings);

}  // namespace cco

#endif  // CCO_HOST_PROXY_RING_SET_H_
