// SPDX-License-Identifier: MIT
//===-- device/sdma.hpp - copy-engine transfers with signals ----*- C++ -*-===//
//
// ccoSdma: puts and gets between the LSA ranks of a device communicator, carried out by
// copy engines: the device posts descriptors to one ring per (LSA peer, queue) (a proxy
// ring, abi/ring.h and device/ring.hpp), the host proxy runs each queue on a copy-engine
// stream of its own, in order, and writes the signal pools behind the data (abi/sdma.h).
//
// Semantics:
//   - put(peer, dst, ..., src, ..., bytes, queue, flags): bytes from this rank's `src` window
//     to `peer`'s `dst` window. Signal = true: once the data (and that of every earlier post
//     on that queue to that peer) has landed, the target's remote pool slot of (this rank,
//     queue) counts it. CCO_SDMA_FLAG_LOCAL: this rank's local pool slot of (peer, queue)
//     counts the put once it is complete (the source is reusable).
//   - get(peer, dst, ..., src, ..., bytes, queue, flags): bytes from `peer`'s `src` window to
//     this rank's `dst` window; Signal = true: this rank's local pool slot of (peer, queue)
//     counts it once the data is here.
//   - put(peer, dst, src, bytes, queue, flags) and get(...) on resolved pointers (the guide's
//     "windows or resolved pointers"): `dst` / `src` are addresses in the LSA team's flat range
//     (ccoGetLsaPeerPtr, a window's local pointer); a put's `dst` must lie in `peer`'s copy of
//     a live window and its `src` in this rank's, a get the other way round: a pointer in
//     another rank's memory is refused on the device (INVALID_ARGUMENT), one outside every
//     live window by the proxy (its ring fails, as for a window range it refuses). Offsets,
//     unlike window ids, are reused after a window is deregistered: quiet the queues that
//     name a window's pointers before deregistering it.
//   - CCO_SDMA_FLAG_AGGREGATE: the post is not released until commit(peer, queue) (or a
//     quiet, or a later post that must wait for room); other posts release themselves.
//   - quiet(peer): every post to `peer` so far, on every queue, is released and complete;
//     quiet_queue(peer, queue) the same for one queue.
//   - wait_signal(peer, queue, least) waits until the remote pool slot of (peer, queue) minus
//     its shadow reaches `least` and consumes it; read_signal / reset_signal as in GDA;
//     wait_local / read_local / reset_local the same on the local pool.
//   - Coop: with ccoCoopWarp / ccoCoopBlock every thread of the group calls; thread 0 posts
//     after the group synchronised; waits and quiets run in every thread. Every thread
//     returns the group's verdict (coop.hpp worst_status; on an amdgcn block, which cannot
//     vote, what it met itself).
// Peers are LSA ranks. Statuses are ccoDeviceStatus values; INVALID_ARGUMENT where SDMA is
// not enabled on the device communicator (CCO_ENABLE_SDMA), or a peer, queue or flag is
// out of range, or a window is not a live one of this communicator holding the bytes. Every
// wait polls the abort flag and its ring's error word and ends at the handle's timeout (0: the
// device communicator's bound, CCO_NO_TIMEOUT: none).
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_SDMA_HPP_
#define CCO_DEVICE_SDMA_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/group_waits.hpp"
#include "device/handles.hpp"
#include "device/lsa.hpp"
#include "device/ring.hpp"
#include "device/spin_wait.hpp"
#include "device/trace.hpp"

namespace cco {

class ccoSdma {
 public:
  CCO_DEVICE_API explicit ccoSdma(const ccoDevComm& dc, uint64_t timeoutNs = 0) : ccoSdma(dc, timeoutNs, ReadAsIs()) {}
  /// The same reading `dc`'s fields with `read` (handles.hpp: ReadInvariant where it lies in
  /// global memory, as the bitcode's does).
  template <class Read>
  CCO_DEVICE_API ccoSdma(const ccoDevComm& dc, uint64_t timeoutNs, Read read)
      : f_(dc, read), limits_(wait_limits(dc, timeoutNs, read)) {
    compute_here(limits_);
  }

  /// Queues per peer (0: SDMA is not enabled on this device communicator, or it is none of
  /// this ABI: every call is then INVALID_ARGUMENT).
  CCO_DEVICE_API int32_t queue_count() const { return f_.queueCount; }

  template <class Coop = ccoCoopThread, bool Signal = true>
  CCO_DEVICE_API int32_t put(int32_t peer, ccoWindow_t dst, uint64_t dstOffset, ccoWindow_t src, uint64_t srcOffset,
                             uint64_t bytes, int32_t queue, uint32_t flags = 0) {
    // Windows of this communicator, live, holding the bytes: what the proxy would refuse by
    // failing the queue's ring is refused here.
    const WindowFields to = window_fields(window_descriptor(dst)), from = window_fields(window_descriptor(src));
    if (!windows_hold(to, dstOffset, from, srcOffset, bytes)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    return Post<Coop>(peer, queue, flags,
                      Describe(CCO_GDA_OP_PUT, Signal, flags, to.id, dstOffset, from.id, srcOffset, bytes));
  }

  template <class Coop = ccoCoopThread, bool Signal = true>
  CCO_DEVICE_API int32_t get(int32_t peer, ccoWindow_t dst, uint64_t dstOffset, ccoWindow_t src, uint64_t srcOffset,
                             uint64_t bytes, int32_t queue, uint32_t flags = 0) {
    // Windows of this communicator, live, holding the bytes: what the proxy would refuse by
    // failing the queue's ring is refused here.
    const WindowFields to = window_fields(window_descriptor(dst)), from = window_fields(window_descriptor(src));
    if (!windows_hold(to, dstOffset, from, srcOffset, bytes)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    return Post<Coop>(peer, queue, flags,
                      Describe(CCO_GDA_OP_GET, Signal, flags, to.id, dstOffset, from.id, srcOffset, bytes));
  }

  /// The same on resolved pointers: `dst` in `peer`'s copy of a window, `src` in this rank's.
  template <class Coop = ccoCoopThread, bool Signal = true>
  CCO_DEVICE_API int32_t put(int32_t peer, void* dst, const void* src, uint64_t bytes, int32_t queue,
                             uint32_t flags = 0) {
    ccoGdaDesc d;
    if (!DescribeFlat(CCO_GDA_OP_PUT, Signal, flags, peer, dst, src, bytes, &d))
      return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    return Post<Coop>(peer, queue, flags, d);
  }

  /// The same on resolved pointers: `dst` in this rank's copy of a window, `src` in `peer`'s.
  template <class Coop = ccoCoopThread, bool Signal = true>
  CCO_DEVICE_API int32_t get(int32_t peer, void* dst, const void* src, uint64_t bytes, int32_t queue,
                             uint32_t flags = 0) {
    ccoGdaDesc d;
    if (!DescribeFlat(CCO_GDA_OP_GET, Signal, flags, peer, dst, src, bytes, &d))
      return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    return Post<Coop>(peer, queue, flags, d);
  }

  /// Releases the aggregated posts to `peer` on `queue`.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t commit(int32_t peer, int32_t queue) {
    if (!target_ok(peer, queue)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    Coop coop;
    coop.sync();
    if (coop.thread_rank() == 0) {
      const ring::View r = ring_of(peer, queue);
      ring::Doorbell(r, arch::load<order::Relaxed, scope::Device>(&r.dev->head));
    }
    coop.sync();
    return CCO_DEVICE_STATUS_OK;
  }

  /// Every post to `peer` so far, on every queue, is released and complete. The group
  /// shares out the queues; every thread returns the group's verdict.
  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t quiet(int32_t peer) {
    if (!target_ok(peer, 0)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    const uint64_t traced = f_.trace;
    const uint64_t begin = trace::Begin(traced);
    const int32_t status = group::EveryRing<Coop>(
        queue_count(), [&](int32_t q) { return ring_of(peer, q); },
        [&](int32_t q) { return ring::Flush<CCO_GDA_DOORBELL_DEFERRED, kMirrored>(ring_of(peer, q), limits_); });
    trace::Span<Coop>(traced, begin, trace::Event{CCO_TRACE_SDMA_QUIET, 0, peer, 0, ~0u, 0, 0, status});
    return status;
  }

  /// Every post to `peer` on `queue` so far is released and complete.
  CCO_DEVICE_API int32_t quiet_queue(int32_t peer, int32_t queue) {
    if (!target_ok(peer, queue)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    const uint64_t traced = f_.trace;
    const uint64_t begin = trace::Begin(traced);
    const int32_t status = ring::Flush<CCO_GDA_DOORBELL_DEFERRED, kMirrored>(ring_of(peer, queue), limits_);
    trace::Record(
        traced, begin,
        trace::Event{CCO_TRACE_SDMA_QUIET, 0, peer, slot(peer, queue), static_cast<uint32_t>(queue), 0, 0, status});
    return status;
  }

  // --- the signal pools of this rank: remote (what peers' puts counted here), local (what
  // this rank's gets, and LOCAL puts, counted) -------------------------------------------

  template <class Coop = ccoCoopThread>
  CCO_DEVICE_API int32_t wait_signal(int32_t peer, int32_t queue, uint64_t least) {
    return WaitPool<Coop>(kRemote, peer, queue, least);
  }
  CCO_DEVICE_API uint64_t read_signal(int32_t peer, int32_t queue) const { return ReadPool(kRemote, peer, queue); }
  CCO_DEVICE_API int32_t reset_signal(int32_t peer, int32_t queue) { return ResetPool(kRemote, peer, queue); }

  template <class Coop = ccoCoopThread> CCO_DEVICE_API int32_t wait_local(int32_t peer, int32_t queue, uint64_t least) {
    return WaitPool<Coop>(kLocal, peer, queue, least);
  }
  CCO_DEVICE_API uint64_t read_local(int32_t peer, int32_t queue) const { return ReadPool(kLocal, peer, queue); }
  CCO_DEVICE_API int32_t reset_local(int32_t peer, int32_t queue) { return ResetPool(kLocal, peer, queue); }

 private:
  // The fields of the device communicator this handle uses, read once when it is made, all at
  // once: a handle reading them where it needs them (the bitcode's `dc` lives in global
  // memory) would load them after the tests and the barrier before them, and after every
  // acquire and fence, which empty L1 on nvptx: a memory trip each, one after another, on the
  // critical path of every post.
  struct Fields {
    int32_t queueCount;  // 0: SDMA off, or a device communicator of another ABI
    int32_t lsaRank, lsaSize;
    uint32_t ringDepth;
    uint64_t ringSlots, ringHost, ringDevice, signals, local, flatBase, stride;
    uint64_t shadows;  // this rank's shadows (its copy of the resources)
    uint64_t trace;
    template <class Read>
    CCO_DEVICE_API Fields(const ccoDevComm& dc, Read read)
        : queueCount(all_hold(devcomm_valid(dc, read), read(dc.sdmaRingSlots) != 0)
                         ? static_cast<int32_t>(read(dc.sdmaQueueCount))
                         : 0),
          lsaRank(read(dc.lsaRank)),
          lsaSize(read(dc.lsaSize)),
          ringDepth(read(dc.sdmaRingDepth)),
          ringSlots(read(dc.sdmaRingSlots)),
          ringHost(read(dc.sdmaRingHost)),
          ringDevice(read(dc.sdmaRingDevice)),
          signals(read(dc.sdmaSignals)),
          local(read(dc.sdmaLocal)),
          flatBase(read(dc.lsaFlatBase)),
          stride(read(dc.lsaStride)),
          shadows(own_resources(dc, read) + read(dc.sdmaShadowOffset)),
          trace(cco::trace::kCompiled ? read(dc.trace) : 0) {
      compute_all_here(queueCount, lsaRank, lsaSize, ringDepth, ringSlots, ringHost, ringDevice, signals, local,
                       flatBase, stride, shadows, trace);
    }
  };

  // SDMA's rings are mirrored: their proxy writes `consumed` into the device-side cache too, and
  // their waits poll device memory alone (abi/ring.h).
  static constexpr bool kMirrored = true;
  CCO_DEVICE_API bool target_ok(int32_t peer, int32_t queue) const {
    return queue_count() > 0 && static_cast<uint32_t>(peer) < static_cast<uint32_t>(f_.lsaSize) &&
           static_cast<uint32_t>(queue) < static_cast<uint32_t>(queue_count());
  }
  CCO_DEVICE_API uint32_t slot(int32_t peer, int32_t queue) const {
    return cco_sdma_slot(peer, queue, static_cast<uint32_t>(f_.queueCount));
  }
  CCO_DEVICE_API ring::View ring_of(int32_t peer, int32_t queue) const {
    return ring::At(f_.ringSlots, f_.ringHost, f_.ringDevice, f_.ringDepth, slot(peer, queue));
  }
  // The pools: their words in the resource window's flat copy, their shadows in this rank's.
  enum Pool { kRemote = 0, kLocal = 1 };
  CCO_DEVICE_API const uint64_t* word(Pool pool, int32_t peer, int32_t queue) const {
    return reinterpret_cast<const uint64_t*>(pool == kRemote ? f_.signals : f_.local) + slot(peer, queue);
  }
  CCO_DEVICE_API uint64_t* shadow(Pool pool, int32_t peer, int32_t queue) const {
    uint64_t* shadows = reinterpret_cast<uint64_t*>(f_.shadows);
    return shadows + static_cast<uint64_t>(pool) * f_.lsaSize * f_.queueCount + slot(peer, queue);
  }
  template <class Coop> CCO_DEVICE_API int32_t WaitPool(Pool pool, int32_t peer, int32_t queue, uint64_t least) {
    if (!target_ok(peer, queue)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    const uint64_t* w = word(pool, peer, queue);
    // The queue's ring to the peer fails when the peer is lost: its signals may never come.
    const ccoGdaRingDevice* dev = ring_of(peer, queue).dev;
    const uint64_t traced = f_.trace;
    const uint64_t begin = trace::Begin(traced);
    const int32_t status =
        group::Consume<Coop>([&] { return arch::load<order::Acquire, scope::System>(w); },
                             [&] { return ring::Failed(dev); }, shadow(pool, peer, queue), least, 64, limits_);
    trace::Span<Coop>(
        traced, begin,
        trace::Event{CCO_TRACE_SDMA_WAIT, static_cast<uint16_t>(pool == kLocal ? CCO_TRACE_FLAG_LOCAL : 0), peer,
                     slot(peer, queue), static_cast<uint32_t>(queue), least, 0, status});
    return status;
  }
  CCO_DEVICE_API uint64_t ReadPool(Pool pool, int32_t peer, int32_t queue) const {
    if (!target_ok(peer, queue)) return 0;
    return arch::load<order::Acquire, scope::System>(word(pool, peer, queue)) - *shadow(pool, peer, queue);
  }
  CCO_DEVICE_API int32_t ResetPool(Pool pool, int32_t peer, int32_t queue) {
    if (!target_ok(peer, queue)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    *shadow(pool, peer, queue) = arch::load<order::Acquire, scope::System>(word(pool, peer, queue));
    return CCO_DEVICE_STATUS_OK;
  }
  CCO_DEVICE_API bool windows_hold(const WindowFields& dst, uint64_t dstOffset, const WindowFields& src,
                                   uint64_t srcOffset, uint64_t bytes) const {
    return all_hold(window_holds(dst, f_.flatBase, f_.stride, dstOffset, bytes),
                    window_holds(src, f_.flatBase, f_.stride, srcOffset, bytes));
  }

  // What a put or get descriptor says whichever way it names its memory.
  CCO_DEVICE_API static ccoGdaDesc Header(ccoGdaOp op, bool signal, uint32_t flags, uint64_t bytes) {
    ccoGdaDesc d = {};
    d.op = static_cast<uint8_t>(op);
    d.signalOp = static_cast<uint8_t>(signal ? CCO_SIGNAL_INC : CCO_SIGNAL_NONE);
    d.flags = static_cast<uint16_t>((flags & CCO_SDMA_FLAG_LOCAL) && op == CCO_GDA_OP_PUT ? CCO_SDMA_DESC_LOCAL : 0);
    d.bytes = bytes;
    return d;
  }

  CCO_DEVICE_API static ccoGdaDesc Describe(ccoGdaOp op, bool signal, uint32_t flags, uint32_t dstWindow,
                                            uint64_t dstOffset, uint32_t srcWindow, uint64_t srcOffset,
                                            uint64_t bytes) {
    ccoGdaDesc d = Header(op, signal, flags, bytes);
    d.dstWindow = dstWindow;
    d.dstOffset = dstOffset;
    d.srcWindow = srcWindow;
    d.srcOffset = srcOffset;
    return d;
  }

  // Whether `address` lies in LSA rank `rank`'s slice of the flat range.
  CCO_DEVICE_API bool InSlice(uint64_t address, int32_t rank) const {
    return static_cast<uint32_t>(rank) < static_cast<uint32_t>(f_.lsaSize) && f_.stride != 0 &&
           address >= f_.flatBase && (address - f_.flatBase) / f_.stride == static_cast<uint64_t>(rank);
  }

  // Pointers as offsets from the LSA team's flat base; false where one is not in the slice
  // of the rank it must be in (a put's destination `peer`'s, its source this rank's; a get
  // the other way round). Which window each lies in, the proxy checks (it checks the rank too).
  CCO_DEVICE_API bool DescribeFlat(ccoGdaOp op, bool signal, uint32_t flags, int32_t peer, const void* dst,
                                   const void* src, uint64_t bytes, ccoGdaDesc* d) const {
    const uint64_t to = reinterpret_cast<uint64_t>(dst), from = reinterpret_cast<uint64_t>(src);
    const bool put = op == CCO_GDA_OP_PUT;
    if (!InSlice(to, put ? peer : f_.lsaRank) || !InSlice(from, put ? f_.lsaRank : peer)) return false;
    *d = Header(op, signal, flags, bytes);
    d->flags |= CCO_SDMA_DESC_FLAT;
    d->dstOffset = to - f_.flatBase;
    d->srcOffset = from - f_.flatBase;
    return true;
  }

  template <class Coop> CCO_DEVICE_API int32_t Post(int32_t peer, int32_t queue, uint32_t flags, const ccoGdaDesc& d) {
    if (!target_ok(peer, queue) || (flags & ~CCO_SDMA_FLAGS_ALL) != 0) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
    const uint64_t traced = f_.trace;
    Coop coop;
    coop.sync();  // the group's earlier writes come before the post
    int32_t status = CCO_DEVICE_STATUS_OK;
    if (coop.thread_rank() == 0) {
      const bool aggregate = (flags & CCO_SDMA_FLAG_AGGREGATE) != 0;
      const ring::View r = ring_of(peer, queue);
      uint64_t ticket = 0;
      ccoGdaDesc posted = d;
      // Tracing off, one test of the device communicator's field; on, the post between the
      // trace's stamps, its descriptor naming its record (the proxy stamps that record).
      if (!trace::On(traced)) {
        status = aggregate ? ring::Post<CCO_GDA_DOORBELL_DEFERRED, kMirrored>(r, posted, limits_, &ticket)
                           : ring::Post<CCO_GDA_DOORBELL_IMMEDIATE, kMirrored>(r, posted, limits_, &ticket);
      } else {
        const uint64_t begin = arch::timer_ns();
        posted.traceRecord = trace::Take(traced);
        status = aggregate ? ring::Post<CCO_GDA_DOORBELL_DEFERRED, kMirrored>(r, posted, limits_, &ticket)
                           : ring::Post<CCO_GDA_DOORBELL_IMMEDIATE, kMirrored>(r, posted, limits_, &ticket);
        const uint16_t kind = d.op == CCO_GDA_OP_PUT ? CCO_TRACE_SDMA_PUT : CCO_TRACE_SDMA_GET;
        const uint16_t traceFlags = static_cast<uint16_t>((d.signalOp != CCO_SIGNAL_NONE ? CCO_TRACE_FLAG_SIGNAL : 0) |
                                                          ((d.flags & CCO_SDMA_DESC_LOCAL) ? CCO_TRACE_FLAG_LOCAL : 0));
        trace::Write(traced, posted.traceRecord, begin,
                     trace::Event{kind, traceFlags, peer, slot(peer, queue), static_cast<uint32_t>(queue), d.bytes,
                                  ticket, status});
      }
    }
    return worst_status(coop, status);  // thread 0's, in every thread
  }

  Fields f_;
  WaitLimits limits_;
};

}  // namespace cco

using cco::ccoSdma;

#endif  // CCO_DEVICE_SDMA_HPP_
