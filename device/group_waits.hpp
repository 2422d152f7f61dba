// SPDX-License-Identifier: MIT
//===-- device/group_waits.hpp - waits a coop group makes together -*- C++ -*-===//
//
// What ccoGda and ccoSdma both do with a group of threads (ccoCoopThread / Warp / Block):
//   EveryRing  share out a set of proxy rings, run a step on each (post, flush, wait), and
//              give every thread the group's verdict (the worst status, a failed ring's)
//   Consume    wait until a monotone count minus its shadow reaches `least`, then consume it
//              (shadow += least), the signal and counter semantics of both transports; a
//              failed ring it depends on ends it
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_GROUP_WAITS_HPP_
#define CCO_DEVICE_GROUP_WAITS_HPP_

#include <stdint.h>

#include "abi/ring.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/ring.hpp"
#include "device/spin_wait.hpp"

namespace cco {
namespace group {

/// The group shares out rings [0, count) and runs step(i) on each of its share until one
/// fails. Every thread then returns the group's verdict (worst_status): the worst status a
/// step returned, or ABORTED where the proxy failed a ring, whichever thread met it.
/// A failed ring shows in its device-side mirror (the proxy writes it before the host words),
/// which each thread reads for its own share: every thread reading every ring's host error
/// word would cost a bus trip per ring, most of what a flush costs.
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
  // A group that cannot vote learns nothing from the others' shares: each thread reads them all.
  const bool mineOnly = Coop::kVotes;
  if (!mineOnly) coop.sync();
  for (int32_t i = mineOnly ? static_cast<int32_t>(coop.thread_rank()) : 0; i < count && status == CCO_DEVICE_STATUS_OK;
       i += mineOnly ? static_cast<int32_t>(coop.size()) : 1)
    if (failed(i)) status = CCO_DEVICE_STATUS_ABORTED;
  return worst_status(coop, status);
}

/// Waits until value() - *shadow reaches `least` (compared in `bits` bits, 32 or 64), then
/// consumes it. value() may load relaxed: the fence after the wait makes it an acquire.
/// failed(): a ring whose failure means the count may never come (a lost peer's); the wait
/// then ends ABORTED. Every thread of the group waits; thread 0 moves the shadow.
///
/// onePoller (a count in host memory: the host signal words, abi/gda.h): in a group that can
/// vote, thread 0 alone polls and the others wait for its verdict at the vote; the group's
/// closing barrier orders their reads after its acquire. Every warp of a block polling host
/// memory made round trips several times slower on an H100 (gda_rtt_probe: block 54.7 us against
/// 13.5 for one thread; with thread 0 alone polling, 14.3). A group that cannot vote (an amdgcn
/// block) learns nothing from the others, so there every thread polls.
template <class Coop, class Value, class Failed>
CCO_DEVICE_API int32_t Consume(Value value, Failed failed, uint64_t* shadow, uint64_t least, int32_t bits,
                               const WaitLimits& limits, bool onePoller = false) {
  Coop coop;
  const uint64_t base = *shadow;
  int32_t status = CCO_DEVICE_STATUS_OK;
  if (!onePoller || !Coop::kVotes || coop.thread_rank() == 0)
    status = spin_wait<RingSpin>(
        [&] {
          const uint64_t got = value() - base;
          return bits == 32 ? static_cast<uint32_t>(got) >= static_cast<uint32_t>(least) : got >= least;
        },
        failed, limits);
  arch::fence<scope::System>();
  // One verdict: the shadow moves only when every polling thread saw the count (timeouts are per
  // thread).
  const int32_t verdict = worst_status(coop, status);
  if (verdict == CCO_DEVICE_STATUS_OK && coop.thread_rank() == 0) *shadow = base + least;
  coop.sync();
  return verdict;
}

}  // namespace group
}  // namespace cco

#endif  // CCO_DEVICE_GROUP_WAITS_HPP_
