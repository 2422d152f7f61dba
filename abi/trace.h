/* SPDX-License-Identifier: MIT */
/* CCO ABI: the device-side trace, a bounded buffer of what device calls did and when.
 *
 * A device communicator made with tracing on (CCO_TRACE) carries the device address of one
 * ccoTraceBuffer in ccoDevComm.trace; 0 there means tracing is off, and every trace point of
 * the device library is then one test of that field. The buffer lives in device memory:
 *
 *   ccoTraceBuffer   the header: capacities, and the two counters devices take slots with
 *   records          `capacity` ccoTraceRecord of 64 bytes, one per traced call
 *   samples          `sampleCapacity` ccoTraceClockSample: device clock / host clock pairs
 *
 * A device call takes record `next` with one device-scope atomic add; a slot at or past
 * `capacity` is not written (stop when full): next - capacity counts the calls dropped. A
 * record's `seq` (its index + 1) is stored last, so a record a kernel never finished (it
 * died, or still runs) is told apart. A call that posts to a proxy ring puts its record's
 * index + 1 into the descriptor (ccoGdaDesc.traceRecord): the proxy stamps, on the host,
 * when it took the descriptor, when its work was queued and when that work completed, and
 * the host joins those stamps to the record when it writes the trace out.
 *
 * Clocks: records are in the device clock (the arch layer's timer_ns: %globaltimer on nvptx,
 * s_memrealtime on amdgcn, CLOCK_MONOTONIC on the host arch, where "device" code runs on the
 * CPU). The proxy's stamps are in the host's CLOCK_MONOTONIC. To align the two, the proxy keeps
 * its clock in a host-mapped word (hostClock) while it serves traced rings, and the taker of
 * every sampleEvery-th record also reads that word between two readings of its own clock (a
 * ccoTraceClockSample): the host wrote the value before the device read it, which bounds
 * (device - host) from above; a descriptor is posted before the proxy takes it, which bounds it
 * from below (cco_trace_offset_bounds in the host's writer).
 *
 * Plain C, freestanding; compiled by the device library and the host.
 */
#ifndef CCO_ABI_TRACE_H_
#define CCO_ABI_TRACE_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/version.h"

#define CCO_TRACE_MAGIC 0x544F4343u /* "CCOT" */
#define CCO_TRACE_VERSION 1u

/* Records per device communicator when CCO_TRACE_EVENTS does not say; clock samples. */
#define CCO_TRACE_EVENTS_DEFAULT 65536u
#define CCO_TRACE_SAMPLES_DEFAULT 256u
#define CCO_TRACE_SAMPLE_EVERY_DEFAULT 64u

/* What a record is. Posts go through a proxy ring (the proxy stamps them) unless
 * CCO_TRACE_FLAG_DIRECT says the device did the work itself; the others are spans of a
 * device call: a wait, a flush, a barrier, or a range a kernel marked (cco_trace_range). */
typedef enum ccoTraceKind {
  CCO_TRACE_GDA_PUT = 1,
  CCO_TRACE_GDA_PUT_VALUE = 2,
  CCO_TRACE_GDA_GET = 3,
  CCO_TRACE_GDA_SIGNAL = 4,
  CCO_TRACE_GDA_COUNTER = 5, /* a counter marker into one ring (one record per ring) */
  CCO_TRACE_GDA_WAIT_SIGNAL = 6,
  CCO_TRACE_GDA_WAIT_COUNTER = 7,
  CCO_TRACE_GDA_FLUSH = 8, /* flush, flush_peer (peer >= 0) and flush_wait */
  CCO_TRACE_GDA_BARRIER = 9,
  CCO_TRACE_SDMA_PUT = 10,
  CCO_TRACE_SDMA_GET = 11,
  CCO_TRACE_SDMA_QUIET = 12,  /* quiet (every queue) and quiet_queue */
  CCO_TRACE_SDMA_WAIT = 13,   /* wait_signal and wait_local (CCO_TRACE_FLAG_LOCAL) */
  CCO_TRACE_LSA_BARRIER = 14, /* sync, or wait (CCO_TRACE_FLAG_WAIT_ONLY) */
  CCO_TRACE_RANGE = 15        /* a kernel's own range: aux is its tag (ccoTraceTag), bytes its argument */
} ccoTraceKind;

#define CCO_TRACE_FLAG_DIRECT 1u    /* done by the device's own stores (the GDA direct path) */
#define CCO_TRACE_FLAG_SIGNAL 2u    /* the post signals its target */
#define CCO_TRACE_FLAG_LOCAL 4u     /* SDMA: the local pool */
#define CCO_TRACE_FLAG_WAIT_ONLY 8u /* LSA barrier: a wait without its arrive */

typedef struct ccoTraceBuffer {
  uint32_t magic;          /* CCO_TRACE_MAGIC */
  uint32_t version;        /* CCO_TRACE_VERSION */
  uint32_t capacity;       /* records */
  uint32_t sampleCapacity; /* clock samples */
  uint32_t sampleEvery;    /* a power of two: the taker of every such record takes a sample */
  uint32_t reserved0;
  uint64_t next;        /* records taken (device-scope atomic); those from capacity on were dropped */
  uint64_t samplesNext; /* samples taken, the same way */
  uint64_t hostClock;   /* device address of the proxy's clock word (host-mapped; 0: none) */
  uint64_t reserved[2];
} ccoTraceBuffer;

typedef struct ccoTraceRecord {
  uint64_t begin;  /* device clock, ns: the call began (a post: before it waited for room) */
  uint64_t end;    /* device clock, ns: the call returned (a post: its descriptor is in the ring) */
  uint64_t bytes;  /* a transfer's bytes; a wait's target; a range's argument */
  uint64_t ticket; /* a ring post: its ticket on ring `ring` */
  uint16_t kind;   /* ccoTraceKind */
  uint16_t flags;  /* CCO_TRACE_FLAG_* */
  int32_t peer;    /* the call's peer: a world rank (GDA), an LSA rank (SDMA); -1: none */
  uint32_t ring;   /* a ring post: the ring in its set (GDA: context * peers + team index;
                      SDMA: LSA peer * queues + queue) */
  uint32_t block;  /* the caller's block */
  uint16_t warp;   /* the caller's warp in its block */
  uint16_t lane;   /* the caller's lane in its warp */
  int32_t status;  /* what the call returned (ccoDeviceStatus) */
  uint32_t aux;    /* signal or counter id, barrier index, queue, or a range's tag */
  uint32_t seq;    /* the record's index + 1, stored last */
} ccoTraceRecord;

typedef struct ccoTraceClockSample {
  uint64_t before; /* device clock, ns, before reading the host's clock word */
  uint64_t host;   /* the host clock word as read (CLOCK_MONOTONIC ns; 0: not yet written) */
  uint64_t after;  /* device clock, ns, after */
  uint64_t seq;    /* the sample's index + 1, stored last */
} ccoTraceClockSample;

CCO_STATIC_ASSERT(sizeof(ccoTraceBuffer) == 64, "ccoTraceBuffer size");
CCO_STATIC_ASSERT(offsetof(ccoTraceBuffer, next) == 24, "ccoTraceBuffer.next");
CCO_STATIC_ASSERT(offsetof(ccoTraceBuffer, hostClock) == 40, "ccoTraceBuffer.hostClock");
CCO_STATIC_ASSERT(sizeof(ccoTraceRecord) == 64, "ccoTraceRecord size");
CCO_STATIC_ASSERT(offsetof(ccoTraceRecord, kind) == 32, "ccoTraceRecord.kind");
CCO_STATIC_ASSERT(offsetof(ccoTraceRecord, block) == 44, "ccoTraceRecord.block");
CCO_STATIC_ASSERT(offsetof(ccoTraceRecord, seq) == 60, "ccoTraceRecord.seq");
CCO_STATIC_ASSERT(sizeof(ccoTraceClockSample) == 32, "ccoTraceClockSample size");

/* Where things are in a buffer of `capacity` records: the records follow the header, the
 * samples follow the records. */
CCO_ABI_INLINE uint64_t cco_trace_record_address(uint64_t buffer, uint64_t index) {
  return buffer + sizeof(ccoTraceBuffer) + index * sizeof(ccoTraceRecord);
}
CCO_ABI_INLINE uint64_t cco_trace_sample_address(uint64_t buffer, uint32_t capacity, uint64_t index) {
  return cco_trace_record_address(buffer, capacity) + index * sizeof(ccoTraceClockSample);
}
CCO_ABI_INLINE uint64_t cco_trace_buffer_bytes(uint32_t capacity, uint32_t sampleCapacity) {
  return cco_trace_sample_address(0, capacity, sampleCapacity);
}

#endif /* CCO_ABI_TRACE_H_ */
