//===-- device/group_waits.hpp - waits a coop group makes together -*- C++ -*-===//
//
// What ccoGda and ccoSdma both do with a group of threads (ccoCoopThread / Warp / Block):
//   EveryRing  share out a set of proxy rings, run a step on each (post, flush, wait), and
//              give every thread the group's verdict on failed rings
//   Consume    wait until a monotone count minus its shadow reaches `least`, then consume it
//              (shadow += least), the signal and counter semantics of both transports
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_GROUP_WAITS_HPP_
#define CCO_DEVICE_GROUP_WAITS_HPP_

#include <stdint.h>

#include "abi/gda.h"
#include "device/arch/arch.h"
#include "device/gda_ring.hpp"

namespace cco {
namespace gda {

/// The group shares out rings [0, count) and runs step(i) on each of its share until one
/// fails. Every thread then returns the group's verdict on failed rings, whichever thread
/// met them: any ring the proxy failed fails the call in every thread.
/// The verdict reads each ring's device-side mirror of its error (the proxy writes it before
/// the host words), not the host word: one bus trip per ring, one after another, was most of
/// what a flush cost. Where the group votes, each thread looks at its own share and one vote
/// tells the others.
template <class Coop, class RingOf, class Step>
CCO_DEVICE_API int32_t EveryRing(int32_t count, RingOf ringOf, Step step) {
  Coop coop;
  coop.sync();
  int32_t status = CCO_DEVICE_STATUS_OK;
  for (int32_t i = static_cast<int32_t>(coop.thread_rank()); i < count && status == CCO_DEVICE_STATUS_OK;
       i += static_cast<int32_t>(coop.size()))
    status = step(i);
  if (coop.size() == 1) return status;  // its waits met any failure of its rings
  const auto failed = [&](int32_t i) { return arch::load<order::Relaxed, scope::System>(&ringOf(i).dev->failed) != 0; };
  bool anyFailed = false;
  if (Coop::kVotes) {
    for (int32_t i = static_cast<int32_t>(coop.thread_rank()); i < count; i += static_cast<int32_t>(coop.size()))
      anyFailed |= failed(i);
    anyFailed = coop.any(anyFailed);
  } else {
    coop.sync();
    for (int32_t i = 0; i < count; ++i) anyFailed |= failed(i);
  }
  return status == CCO_DEVICE_STATUS_OK && anyFailed ? CCO_DEVICE_STATUS_ABORTED : status;
}

/// Waits until value() - *shadow reaches `least` (compared in `bits` bits, 32 or 64), then
/// consumes it. value() may load relaxed: the fence after the wait makes it an acquire.
/// Every thread of the group waits; thread 0 moves the shadow.
template <class Coop, class Value>
CCO_DEVICE_API int32_t Consume(Value value, uint64_t* shadow, uint64_t least, int32_t bits, const WaitLimits& limits) {
  Coop coop;
  const uint64_t base = *shadow;
  const int32_t status = Wait(
      [&] {
        const uint64_t got = value() - base;
        return bits == 32 ? static_cast<uint32_t>(got) >= static_cast<uint32_t>(least) : got >= least;
      },
      nullptr, limits);
  arch::fence<scope::System>();
  coop.sync();
  if (status == CCO_DEVICE_STATUS_OK && coop.thread_rank() == 0) *shadow = base + least;
  coop.sync();
  return status;
}

}  // namespace gda
}  // namespace cco

#endif  // CCO_DEVICE_GROUP_WAITS_HPP_
