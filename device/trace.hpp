// SPDX-License-Identifier: MIT
//===-- device/trace.hpp - the device API's trace points --------*- C++ -*-===//
//
// Where a device communicator traces (ccoDevComm.trace != 0, abi/trace.h), the device API
// records what its calls did: each post (GDA and SDMA, through a ring or the direct path),
// each wait, flush and barrier, and the ranges a kernel marks itself (ccoTraceClock /
// ccoTraceRange: a fused operator's tiles). Where it does not, a trace point costs one test
// of that field, which the handles read with the rest of the device communicator; built
// with -DCCO_DEVICE_TRACE=0 there is no trace point at all.
//
//   Begin(buffer)            the device clock where tracing is on, else 0 (no clock read)
//   Take(buffer)             a record slot for a post that the proxy will stamp: its index
//                            + 1 (what goes into ccoGdaDesc.traceRecord), 0 when off or full
//   Write(buffer, tag, ...)  fills the slot taken, its end stamp now
//   Record(buffer, ...)      Take and Write at once: a call the proxy does not see
//   Span<Coop>(buffer, ...)  Record by the group's thread 0 only (a group's wait or flush)
//
// A full buffer drops what comes after (the host reports next - capacity as dropped): what
// was recorded first stays whole.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_TRACE_HPP_
#define CCO_DEVICE_TRACE_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"

#ifndef CCO_DEVICE_TRACE
#define CCO_DEVICE_TRACE 1
#endif

namespace cco {
namespace trace {

/// Whether the trace points are compiled in.
constexpr bool kCompiled = CCO_DEVICE_TRACE != 0;

/// What a record says besides its stamps and where it was made.
struct Event {
  uint16_t kind;   // ccoTraceKind
  uint16_t flags;  // CCO_TRACE_FLAG_*
  int32_t peer;    // -1: none
  uint32_t ring;
  uint32_t aux;
  uint64_t bytes;
  uint64_t ticket;
  int32_t status;
};

/// Whether the device communicator whose `trace` field this is traces. Expected not to: the
/// branch falls through to the call's own work.
CCO_DEVICE_API bool On(uint64_t buffer) { return kCompiled && __builtin_expect(buffer != 0, 0); }

/// The device clock where tracing is on; 0 where it is off (the clock is not read).
CCO_DEVICE_API uint64_t Begin(uint64_t buffer) { return On(buffer) ? arch::timer_ns() : 0; }

namespace detail {

CCO_DEVICE_API ccoTraceBuffer* Header(uint64_t buffer) { return reinterpret_cast<ccoTraceBuffer*>(buffer); }

// A pair of clocks: the device's around a read of the proxy's clock word. The read must be
// done before the second stamp is taken: a GPU issues the clock read without waiting for an
// earlier load to return, so the stamp is taken under a branch on the loaded value (a branch
// waits for its operand; a volatile clock read is never hoisted above one).
CCO_DEVICE_API void Sample(ccoTraceBuffer* b, uint64_t capacity) {
  const uint64_t clockWord = b->hostClock;
  const uint64_t index = arch::fetch_add<order::Relaxed, scope::Device>(&b->samplesNext, uint64_t{1});
  if (clockWord == 0 || index >= b->sampleCapacity) return;
  ccoTraceClockSample* s = reinterpret_cast<ccoTraceClockSample*>(
      cco_trace_sample_address(reinterpret_cast<uint64_t>(b), static_cast<uint32_t>(capacity), index));
  const uint64_t before = arch::timer_ns();
  const uint64_t host = arch::load<order::Relaxed, scope::System>(reinterpret_cast<const uint64_t*>(clockWord));
  uint64_t after = 0;
  if (host != ~uint64_t{0}) after = arch::timer_ns();
  s->before = before;
  s->host = host;
  s->after = after;
  arch::store<order::Relaxed, scope::Device>(&s->seq, index + 1);
}

}  // namespace detail

/// A record slot: its index + 1, or 0 where tracing is off or the buffer is full (the slot
/// is still counted: next - capacity is what was dropped). The taker of every sampleEvery-th
/// slot also takes a clock sample.
CCO_DEVICE_API uint32_t Take(uint64_t buffer) {
  if (!On(buffer)) return 0;
  ccoTraceBuffer* b = detail::Header(buffer);
  const uint64_t index = arch::fetch_add<order::Relaxed, scope::Device>(&b->next, uint64_t{1});
  const uint64_t capacity = b->capacity;
  if (index >= capacity) return 0;
  if ((index & (b->sampleEvery - 1u)) == 0) detail::Sample(b, capacity);
  return static_cast<uint32_t>(index + 1);
}

/// Fills slot `tag` (from Take; 0: nothing) with [begin, now] and `e`, where the caller runs;
/// `seq` last.
CCO_DEVICE_API void Write(uint64_t buffer, uint32_t tag, uint64_t begin, const Event& e) {
  if (!kCompiled || tag == 0) return;
  const uint64_t end = arch::timer_ns();
  ccoTraceRecord* r = reinterpret_cast<ccoTraceRecord*>(cco_trace_record_address(buffer, tag - 1u));
  r->begin = begin;
  r->end = end;
  r->bytes = e.bytes;
  r->ticket = e.ticket;
  r->kind = e.kind;
  r->flags = e.flags;
  r->peer = e.peer;
  r->ring = e.ring;
  r->block = arch::block_id();
  r->warp = static_cast<uint16_t>(arch::warp_id());
  r->lane = static_cast<uint16_t>(arch::lane_id());
  r->status = e.status;
  r->aux = e.aux;
  arch::store<order::Relaxed, scope::Device>(&r->seq, tag);
}

/// A call the proxy does not see: Take and Write.
CCO_DEVICE_API void Record(uint64_t buffer, uint64_t begin, const Event& e) {
  if (!On(buffer)) return;
  Write(buffer, Take(buffer), begin, e);
}

/// A group's call (every thread of the group returns its verdict): recorded once, by the
/// group's thread 0.
template <class Coop> CCO_DEVICE_API void Span(uint64_t buffer, uint64_t begin, const Event& e) {
  if (!On(buffer) || Coop().thread_rank() != 0) return;
  Write(buffer, Take(buffer), begin, e);
}

}  // namespace trace

/// The device clock where `dc` traces (CCO_TRACE), else 0 without reading it: the start of a
/// range that ccoTraceRange records.
CCO_DEVICE_API uint64_t ccoTraceClock(const ccoDevComm& dc) { return trace::Begin(dc.trace); }

/// Records [begin, now] as a range of the kernel's own, with `tag` (ccoTraceTag: TILE, PUSH,
/// WAIT, REDUCE, or USER and above for the kernel's own names) and `arg` (a tile's index,
/// say), once per group (its thread 0: every thread of a warp or block may call). Nothing
/// where `begin` is 0 (the clock was read while tracing was off) or `dc` does not trace.
template <class Coop = ccoCoopThread>
CCO_DEVICE_API void ccoTraceRange(const ccoDevComm& dc, uint32_t tag, uint64_t arg, uint64_t begin) {
  if (begin == 0) return;
  trace::Span<Coop>(dc.trace, begin, trace::Event{CCO_TRACE_RANGE, 0, -1, 0, tag, arg, 0, CCO_DEVICE_STATUS_OK});
}

}  // namespace cco

using cco::ccoTraceClock;
using cco::ccoTraceRange;

#endif  // CCO_DEVICE_TRACE_HPP_
