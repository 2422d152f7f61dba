// SPDX-License-Identifier: MIT
// One proxy ring in plain memory, with both sides' views of it: the device producer
// (device/ring.hpp, compiled for the host) and the proxy's consumer (proxy/ring_consumer.h).
#ifndef CCO_TESTS_DEVICE_TEST_RING_H_
#define CCO_TESTS_DEVICE_TEST_RING_H_

#include <stdint.h>

#include <vector>

#include "abi/gda.h"
#include "device/ring.hpp"
#include "proxy/ring_consumer.h"

namespace cco {

struct TestRing {
  std::vector<ccoGdaDesc> slots;
  std::vector<uint64_t> marks;
  ccoGdaRingHost host{};
  ccoGdaRingDevice dev{};
  RingConsumer consumer;
  uint32_t abort = 0;
  bool mirrored;  // the proxy writes `consumed` into the device-side cache too (abi/ring.h)

  explicit TestRing(uint32_t depth, uint64_t first = 0, bool mirrored = false)
      : slots(depth), marks(depth), mirrored(mirrored) {
    RingConsumer::Initialize(memory(), first);
    dev.head = dev.released = dev.consumedCache = first;
    consumer = RingConsumer(memory(), first);
  }
  RingMemory memory() { return RingMemory{slots.data(), marks.data(), &host, static_cast<uint32_t>(slots.size())}; }
  ring::View view() { return ring::View{slots.data(), marks.data(), &host, &dev, static_cast<uint32_t>(slots.size())}; }
  // The proxy's part: the work of `ticket` is done, and `consumed` says so (and its device
  // copy, where mirrored, unless the test holds that back).
  void Complete(uint64_t ticket, bool mirror = true) {
    consumer.Complete(ticket);
    uint64_t consumed;
    if (!consumer.Unpublished(&consumed)) return;
    __atomic_store_n(&host.consumed, consumed, __ATOMIC_RELEASE);
    if (mirrored && mirror) __atomic_store_n(&dev.consumedCache, consumed, __ATOMIC_RELEASE);
  }
  WaitLimits limits(uint64_t timeoutNs = 20'000'000'000ull) { return WaitLimits{&abort, timeoutNs}; }
};

}  // namespace cco

#endif  // CCO_TESTS_DEVICE_TEST_RING_H_
