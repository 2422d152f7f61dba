// SPDX-License-Identifier: MIT
//===-- device/ring.hpp - the producer side of a proxy ring -----*- C++ -*-===//
//
// Posting into one ring of abi/ring.h, GDA's and SDMA's alike: reserve a ticket once its
// slot is free (waiting for credit), write the descriptor (its `seq` last), and ring the
// doorbell as the post's ccoGdaDoorbellMode says:
//
//   IMMEDIATE      the doorbell up to this ticket
//   DEFERRED       no doorbell; the next doorbell that reaches it releases it
//   CALLER_ORDERED no doorbell; only its own flush, which fences first (the caller's other
//                  writes are ordered before the transfers), rings
// In every mode `seq` is stored last with release order: a doorbell rung by any handle may
// release the slot, and the proxy must never read it torn.
//
// Deadlock rule: a poster that must wait for credit first rings everything below its own
// ticket, so deferred posts it (or anyone) left unreleased cannot hold the ring full.
// Every wait polls the abort flag and the ring's error word and gives up at its timeout
// (device/spin_wait.hpp, RingSpin).
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_RING_HPP_
#define CCO_DEVICE_RING_HPP_

#include <stdint.h>

#include "abi/enums.h"
#include "abi/ring.h"
#include "device/arch/arch.h"
#include "device/spin_wait.hpp"

namespace cco {
namespace ring {

/// One ring as a poster sees it.
struct View {
  ccoGdaDesc* slots;  // this ring's first descriptor
  uint64_t* marks;    // this ring's doorbell marks, one per slot (host memory)
  ccoGdaRingHost* host;
  ccoGdaRingDevice* dev;
  uint32_t depth;
};

/// Ring `ring` of a ring set (abi/ring.h: its descriptors, host words and device words as a
/// device communicator gives their device addresses); GDA and SDMA rings alike.
CCO_DEVICE_API View At(uint64_t slots, uint64_t hostWords, uint64_t deviceWords, uint32_t depth, uint32_t ring) {
  return View{reinterpret_cast<ccoGdaDesc*>(cco_gda_desc_address(slots, depth, ring, 0)),
              reinterpret_cast<uint64_t*>(cco_gda_ring_marks_address(hostWords, depth, ring)),
              reinterpret_cast<ccoGdaRingHost*>(cco_gda_ring_host_address(hostWords, ring)),
              reinterpret_cast<ccoGdaRingDevice*>(cco_gda_ring_device_address(deviceWords, ring)), depth};
}

/// Waits until `done()` holds; a ccoDeviceStatus. `ring` may be null (no error word).
template <class Done> CCO_DEVICE_API int32_t Wait(Done done, const ccoGdaRingHost* ring, const WaitLimits& limits) {
  return spin_wait<RingSpin>(
      done,
      [&] { return ring != nullptr && arch::load<order::Relaxed, scope::System>(&ring->error) != CCO_GDA_RING_OK; },
      limits);
}

/// Whether the proxy failed the ring (its device-side mirror: no bus trip).
CCO_DEVICE_API bool Failed(const ccoGdaRingDevice* dev) {
  return arch::load<order::Relaxed, scope::System>(&dev->failed) != 0;
}

/// Raises *p to v in ticket order (wrap-safe, unlike an unsigned atomic max); returns the
/// value it leaves. O orders the raise (the credit cache passes on what `consumed` said).
template <class O = order::Relaxed> CCO_DEVICE_API uint64_t RollingMax(uint64_t* p, uint64_t v) {
  uint64_t seen = arch::load<order::Relaxed, scope::Device>(p);
  while (cco_gda_before(seen, v)) {
    const uint64_t was = arch::compare_exchange<O, scope::Device>(p, seen, v);
    if (was == seen) return v;
    seen = was;
  }
  return seen;
}

/// Tells the proxy that the swap from `from` to `end` was this poster's: the link into the
/// mark of ticket `from`, then a wake for a host's proxy asleep.
CCO_DEVICE_API void Link(const View& r, uint64_t from, uint64_t end) {
  arch::store<order::Relaxed, scope::System>(r.marks + cco_gda_slot_of(from, r.depth), end);
  arch::wake_host_consumer(&r.host->consumerAsleep, &r.host->consumerWakeFd);  // a host's proxy asleep
}

/// Raises the device maximum from `from` to `end` if it stands at `from`; returns where it stood.
CCO_DEVICE_API uint64_t Swap(const View& r, uint64_t from, uint64_t end) {
  return arch::compare_exchange<order::Relaxed, scope::Device>(&r.dev->released, from, end);
}

/// Rings the doorbell: releases every ticket below `end`. Raises the device maximum from X to `end` by
/// compare-and-swap, and the poster whose swap took effect stores the link (`end` into the
/// mark of ticket X, abi/ring.h) that the proxy follows. Each link has one word and one writer,
/// so rings made at once need no order among their host stores, and a ring waits for no bus
/// trip (one shared host word would need a hand-on that waits for each store to land;
/// tools/perf/ring_doorbell_probe.cu measures the two).
/// Neither the swap nor the store needs order: the proxy takes a slot only once its `seq`,
/// stored with release after the descriptor, says it is complete.
/// Where the device maximum already reaches `end`, another ring stored its link, so a ring
/// with nothing new costs no bus write: a flush of an idle ring would otherwise write host
/// memory, and the next system-scope fence wait for that write.
/// `from` is where the maximum most likely stands: a poster's own ticket (every post before
/// it rang) lets the swap go out at once, a memory trip fewer than loading the maximum first;
/// a wrong guess costs only the swap that fails and returns the true value.
CCO_DEVICE_API void DoorbellFrom(const View& r, uint64_t from, uint64_t end) {
  while (cco_gda_before(from, end)) {
    const uint64_t was = Swap(r, from, end);
    if (was == from) {
      Link(r, from, end);
      return;
    }
    from = was;
  }
}

/// The same where nothing hints at the maximum: it is loaded first.
CCO_DEVICE_API void Doorbell(const View& r, uint64_t end) {
  DoorbellFrom(r, arch::load<order::Relaxed, scope::Device>(&r.dev->released), end);
}

/// A doorbell in two steps around the writing of the slots it releases, for a poster that
/// rings for itself: Swap raises the device maximum from `from` (the poster's first ticket) to
/// `end` before the slots are written, and RingAfter, once they are, stores the link if that
/// swap took effect, else rings on from where the maximum stood. The swap's memory trip then
/// overlaps the descriptors' stores (the release that ends each waits for both at once, a
/// device-scope trip fewer per post), and the proxy still meets the link only after the slots
/// are complete. A maximum above slots not yet written is what abi/ring.h allows: the proxy
/// acts on a slot only once its `seq` says it is complete.
CCO_DEVICE_API void RingAfter(const View& r, uint64_t from, uint64_t end, uint64_t swapped) {
  if (swapped == from) {
    Link(r, from, end);
    return;
  }
  DoorbellFrom(r, swapped, end);
}

/// The proxy's `consumed` (host memory, a bus trip), raised into the device-side credit
/// cache (the orders: WaitConsumed).
CCO_DEVICE_API uint64_t ReadConsumed(const View& r) {
  const uint64_t consumed = arch::load<order::Acquire, scope::System>(&r.host->consumed);
  RollingMax<order::AcqRel>(&r.dev->consumedCache, consumed);
  return consumed;
}

/// Waits until every ticket below `end` is consumed.
/// The credit cache is read with acquire and raised with release, so that a poster that
/// learns from it that a slot is free is ordered after the proxy's reads of that slot, as
/// if it had read `consumed` itself. Mirrored (a ring whose proxy writes `consumed` into the
/// cache too: SDMA's, abi/ring.h), the wait polls the cache alone, and the ring's failure in
/// device memory: the only host word it then reads is the abort flag, at its check interval.
/// (A template argument, not a field of the view: GDA's posts compile as they did.)
template <bool Mirrored = false>
CCO_DEVICE_API int32_t WaitConsumed(const View& r, uint64_t end, const WaitLimits& limits) {
  if (!cco_gda_before(arch::load<order::Acquire, scope::Device>(&r.dev->consumedCache), end))
    return CCO_DEVICE_STATUS_OK;
  if (Mirrored) {
    return spin_wait<RingSpin>(
        [&] { return !cco_gda_before(arch::load<order::Acquire, scope::Device>(&r.dev->consumedCache), end); },
        [&] { return Failed(r.dev); }, limits);
  }
  return Wait([&] { return !cco_gda_before(ReadConsumed(r), end); }, r.host, limits);
}

/// Reserves `count` consecutive tickets (*first is the first) once their slots are free: the
/// credit comes first (waiting, after ringing every ticket below the head, when there is
/// none), then the tickets, by compare-and-swap. A wait that fails (timeout, abort, a failed
/// ring) has taken no ticket: a ticket whose slot is never written would stop the proxy
/// there for good. count <= depth.
template <bool Mirrored = false>
CCO_DEVICE_API int32_t Reserve(const View& r, const WaitLimits& limits, uint64_t* first, uint64_t count = 1) {
  uint64_t head = arch::load<order::Relaxed, scope::Device>(&r.dev->head);
  for (;;) {
    const uint64_t freeFrom = head + count - r.depth;  // consumed must pass this for the last slot to be free
    if (cco_gda_before(arch::load<order::Acquire, scope::Device>(&r.dev->consumedCache), freeFrom)) {
      Doorbell(r, head);  // the deadlock rule
      const int32_t status = WaitConsumed<Mirrored>(r, freeFrom, limits);
      if (status != CCO_DEVICE_STATUS_OK) return status;
    }
    const uint64_t was = arch::compare_exchange<order::Relaxed, scope::Device>(&r.dev->head, head, head + count);
    if (was == head) {
      *first = head;
      return CCO_DEVICE_STATUS_OK;
    }
    head = was;  // another poster took it: the credit is judged again for the new head
  }
}

/// Writes `desc` into the slot of `ticket`; `seq` goes last, with release order in every mode:
/// a ring by any handle may release the slot, and the proxy must never read it torn.
template <ccoGdaDoorbellMode Mode> CCO_DEVICE_API void Write(const View& r, uint64_t ticket, const ccoGdaDesc& desc) {
  ccoGdaDesc* slot = r.slots + cco_gda_slot_of(ticket, r.depth);
  const uint64_t* from = reinterpret_cast<const uint64_t*>(&desc);
  volatile uint64_t* to = reinterpret_cast<volatile uint64_t*>(slot);
  for (int i = 1; i < 8; ++i) to[i] = from[i];
  arch::store<order::Release, scope::System>(&slot->seq, ticket + 1);
}

/// One post: reserve, write, and ring if the mode rings for itself. On success `*ticket`
/// is the post's ticket.
template <ccoGdaDoorbellMode Mode, bool Mirrored = false>
CCO_DEVICE_API int32_t Post(const View& r, const ccoGdaDesc& desc, const WaitLimits& limits, uint64_t* ticket) {
  const int32_t status = Reserve<Mirrored>(r, limits, ticket);
  if (status != CCO_DEVICE_STATUS_OK) return status;
  if (Mode != CCO_GDA_DOORBELL_IMMEDIATE) {
    Write<Mode>(r, *ticket, desc);
    return CCO_DEVICE_STATUS_OK;
  }
  const uint64_t swapped = Swap(r, *ticket, *ticket + 1);
  Write<Mode>(r, *ticket, desc);
  RingAfter(r, *ticket, *ticket + 1, swapped);
  return CCO_DEVICE_STATUS_OK;
}

/// Releases and completes everything posted to the ring so far (a CallerOrdered flush
/// fences first: its posts' stores were not ordered).
/// A ring with nothing outstanding costs one memory trip: its three device words share a
/// cache line and are loaded together.
template <ccoGdaDoorbellMode Mode, bool Mirrored = false>
CCO_DEVICE_API int32_t Flush(const View& r, const WaitLimits& limits) {
  if (Mode == CCO_GDA_DOORBELL_CALLER_ORDERED) arch::fence<scope::System>();
  const uint64_t end = arch::load<order::Relaxed, scope::Device>(&r.dev->head);
  const uint64_t released = arch::load<order::Relaxed, scope::Device>(&r.dev->released);
  const uint64_t cached = arch::load<order::Acquire, scope::Device>(&r.dev->consumedCache);
  if (!cco_gda_before(released, end) && !cco_gda_before(cached, end)) return CCO_DEVICE_STATUS_OK;
  Doorbell(r, end);
  return WaitConsumed<Mirrored>(r, end, limits);
}

}  // namespace ring
}  // namespace cco

#endif  // CCO_DEVICE_RING_HPP_
