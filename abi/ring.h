/* SPDX-License-Identifier: MIT */
/* CCO ABI: the proxy ring, the one layout through which a device hands work to the host
 * proxy: GDA's rings (abi/gda.h) and SDMA's (abi/sdma.h) are both of it. The device library
 * (producer) and the host proxy (consumer) compile this header; plain C, freestanding, no
 * allocation: the arithmetic here is the only copy of it on either side.
 *
 * A ring: `depth` (a power of two) 64-byte descriptors in host-mapped memory, and three
 * counters, all monotone 64-bit tickets compared wrap-safely:
 *
 *   head      (device memory)  next ticket; a poster reserves by compare-and-swap once its
 *             slot is free
 *   released  (device memory)  the doorbell: tickets below it may be consumed. A ring raises
 *             it by compare-and-swap, and the poster whose swap moved it from X to M tells the
 *             proxy by storing M into the ring's mark for ticket X (host memory). The raises
 *             form one chain from the first ticket up, each link stored once into its own
 *             word, so the proxy follows the chain from where it stands, one word a link, and
 *             no two rings ever store into one word: whatever order their stores leave the
 *             device in, none is lost (one shared host word could end at the lower of two
 *             rings made at once). A mark is a link only where X < M <= X + depth: the marks
 *             of earlier laps are at most X, so no mark is ever cleared.
 *   consumed  (host memory, written by the proxy, behind the work on its stream)  tickets
 *             below it are complete; posters wait for credit on it (head - consumed < depth),
 *             through a device-side cache. SDMA's rings are mirrored: the proxy's stream writes
 *             every `consumed` into that cache too, behind the same work, and their posters
 *             wait on the cache alone: device memory, no bus trip a poll (polls of host memory
 *             from many programs slow the very copies they wait for)
 *
 * A slot is complete when its `seq` word, written last with release order, equals its
 * ticket + 1: the proxy never acts on a descriptor that is still being written, even when a
 * later ring released it, and never needs to clear a slot (the marks need no order either).
 * Windows travel as ids (ccoWindowDevice.id) and offsets, never as addresses.
 *
 * The C names keep the ccoGda / cco_gda_ spelling GDA gave them first; SDMA's rings are the
 * same rings.
 */
#ifndef CCO_ABI_RING_H_
#define CCO_ABI_RING_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/version.h"

/* What a descriptor asks for. */
typedef enum ccoGdaOp {
  CCO_GDA_OP_PUT = 1,       /* bytes from (srcWindow, srcOffset) here to (dstWindow, dstOffset) there */
  CCO_GDA_OP_PUT_VALUE = 2, /* srcOffset holds the value (bytes <= 8) */
  CCO_GDA_OP_GET = 3,       /* bytes from (srcWindow, srcOffset) there to (dstWindow, dstOffset) here */
  CCO_GDA_OP_SIGNAL = 4     /* only the signal */
} ccoGdaOp;

typedef struct ccoGdaDesc {
  uint64_t seq;     /* ticket + 1, stored last with release order: the slot is complete */
  uint8_t op;       /* ccoGdaOp */
  uint8_t signalOp; /* ccoSignalOp: applied at the target after the data */
  uint16_t flags;   /* the transport's: CCO_GDA_DESC_* (abi/gda.h), CCO_SDMA_DESC_* (abi/sdma.h) */
  uint32_t signalId;
  uint32_t dstWindow; /* window ids */
  uint32_t srcWindow;
  uint64_t dstOffset;
  uint64_t srcOffset; /* CCO_GDA_OP_PUT_VALUE: the value */
  uint64_t bytes;
  uint64_t signalValue; /* CCO_SIGNAL_ADD: the addend (INC adds 1) */
  uint32_t counterId;   /* CCO_GDA_DESC_MARKER */
  uint32_t traceRecord; /* 0, or the index + 1 of the post's trace record (abi/trace.h): the
                           proxy stamps the record's host times. Was reserved (zero): a device
                           before it traces nothing, a proxy before it ignores it */
} ccoGdaDesc;

/* Each ring's host-side words, one cache line apiece (the proxy writes them; the device reads). */
typedef struct ccoGdaRingHost {
  uint64_t consumed;
  uint64_t pad0[7];
  uint32_t error;    /* ccoGdaRingError: the proxy failed this ring's work */
  int32_t errorPeer; /* the world rank it failed on */
  /* The cpu platform's (device code on host threads; 0 elsewhere): 1 while the proxy sleeps in
   * a wait that a write to consumerWakeFd (an eventfd of the proxy's process) ends, which a
   * doorbell then makes. Were padding: a device before them leaves the proxy to its naps. */
  uint32_t consumerAsleep;
  int32_t consumerWakeFd;
  uint64_t pad1[6];
} ccoGdaRingHost;

/* Each ring's device-side words. */
typedef struct ccoGdaRingDevice {
  uint64_t head;
  uint64_t released;
  uint64_t consumedCache; /* the last `consumed` a poster read, or (mirrored) the proxy wrote */
  uint64_t failed;        /* non-zero once the proxy failed the ring (ccoGdaRingHost.error says
                             why): the direct path, which reads no host word, sees it here */
  uint64_t pad[4];
} ccoGdaRingDevice;

typedef enum ccoGdaRingError {
  CCO_GDA_RING_OK = 0,
  CCO_GDA_RING_PEER_FAILED = 1,    /* the backend lost the peer (it exited, its link is down) */
  CCO_GDA_RING_BAD_DESCRIPTOR = 2, /* a window id, offset or size the proxy could not honour */
  CCO_GDA_RING_ABORTED = 3         /* the communicator was aborted */
} ccoGdaRingError;

CCO_STATIC_ASSERT(sizeof(ccoGdaDesc) == 64, "ccoGdaDesc size");
CCO_STATIC_ASSERT(offsetof(ccoGdaDesc, op) == 8, "ccoGdaDesc.op");
CCO_STATIC_ASSERT(offsetof(ccoGdaDesc, signalId) == 12, "ccoGdaDesc.signalId");
CCO_STATIC_ASSERT(offsetof(ccoGdaDesc, dstWindow) == 16, "ccoGdaDesc.dstWindow");
CCO_STATIC_ASSERT(offsetof(ccoGdaDesc, dstOffset) == 24, "ccoGdaDesc.dstOffset");
CCO_STATIC_ASSERT(offsetof(ccoGdaDesc, srcOffset) == 32, "ccoGdaDesc.srcOffset");
CCO_STATIC_ASSERT(offsetof(ccoGdaDesc, bytes) == 40, "ccoGdaDesc.bytes");
CCO_STATIC_ASSERT(offsetof(ccoGdaDesc, signalValue) == 48, "ccoGdaDesc.signalValue");
CCO_STATIC_ASSERT(offsetof(ccoGdaDesc, counterId) == 56, "ccoGdaDesc.counterId");
CCO_STATIC_ASSERT(offsetof(ccoGdaDesc, traceRecord) == 60, "ccoGdaDesc.traceRecord");
CCO_STATIC_ASSERT(sizeof(ccoGdaRingHost) == 128, "ccoGdaRingHost size");
CCO_STATIC_ASSERT(offsetof(ccoGdaRingHost, consumed) == 0, "ccoGdaRingHost.consumed");
CCO_STATIC_ASSERT(offsetof(ccoGdaRingHost, error) == 64, "ccoGdaRingHost.error");
CCO_STATIC_ASSERT(offsetof(ccoGdaRingHost, consumerAsleep) == 72, "ccoGdaRingHost.consumerAsleep");
CCO_STATIC_ASSERT(sizeof(ccoGdaRingDevice) == 64, "ccoGdaRingDevice size");
CCO_STATIC_ASSERT(offsetof(ccoGdaRingDevice, failed) == 24, "ccoGdaRingDevice.failed");

/* --- tickets ----------------------------------------------------------------------------- */

/* a < b, wrap-safe (tickets are 64-bit and never wrap in practice; the compare stays right
 * across 2^64 anyway). */
CCO_ABI_INLINE int cco_gda_before(uint64_t a, uint64_t b) { return (int64_t)(a - b) < 0; }
CCO_ABI_INLINE uint64_t cco_gda_slot_of(uint64_t ticket, uint32_t depth) { return ticket & (uint64_t)(depth - 1u); }

/* Whether the mark `mark` read at boundary `at` (the mark of ticket `at`) is the link the
 * ring from `at` stored: `at` < mark <= `at` + depth. Marks left by earlier laps are at most
 * `at`; a device cannot release more than `depth` tickets past the proxy. */
CCO_ABI_INLINE int cco_gda_mark_links(uint64_t at, uint64_t mark, uint32_t depth) {
  return cco_gda_before(at, mark) && !cco_gda_before(at + depth, mark);
}

/* The ticket of `slot`'s first lap, for a ring whose first ticket is `firstTicket`. */
CCO_ABI_INLINE uint64_t cco_gda_first_lap_ticket(uint64_t slot, uint64_t firstTicket, uint32_t depth) {
  return firstTicket + ((slot - firstTicket) & (uint64_t)(depth - 1u));
}

/* What a slot's `seq` holds before its first post: the ticket one lap before its first, + 1.
 * It matches no ticket of the first lap (zeroed memory would match ticket 2^64 - 1), so a slot
 * never written is never taken as complete. A slot's mark starts at its first-lap ticket,
 * which links nothing (cco_gda_mark_links). */
CCO_ABI_INLINE uint64_t cco_gda_initial_seq(uint64_t slot, uint64_t firstTicket, uint32_t depth) {
  return cco_gda_first_lap_ticket(slot, firstTicket, depth) + 1u - depth;
}

/* --- where a ring lives: ring `ring` of a set of rings of one depth ----------------------- */

CCO_ABI_INLINE uint64_t cco_gda_desc_address(uint64_t slots, uint32_t depth, uint32_t ring, uint64_t ticket) {
  return slots + ((uint64_t)ring * depth + cco_gda_slot_of(ticket, depth)) * sizeof(ccoGdaDesc);
}
CCO_ABI_INLINE uint64_t cco_gda_ring_host_address(uint64_t hostWords, uint32_t ring) {
  return hostWords + (uint64_t)ring * sizeof(ccoGdaRingHost);
}
/* The marks of `ring` (one uint64 per slot) lie below the host-side words, ring 0's nearest:
 * a poster finds them from the words' address alone. */
CCO_ABI_INLINE uint64_t cco_gda_ring_marks_address(uint64_t hostWords, uint32_t depth, uint32_t ring) {
  return hostWords - ((uint64_t)ring + 1u) * depth * sizeof(uint64_t);
}
CCO_ABI_INLINE uint64_t cco_gda_ring_device_address(uint64_t deviceState, uint32_t ring) {
  return deviceState + (uint64_t)ring * sizeof(ccoGdaRingDevice);
}
/* Host-mapped bytes of `rings` rings of `depth`: the descriptors, the marks (last ring
 * first), then the host-side words. */
CCO_ABI_INLINE uint64_t cco_gda_slots_bytes(uint32_t rings, uint32_t depth) {
  return (uint64_t)rings * depth * sizeof(ccoGdaDesc);
}
CCO_ABI_INLINE uint64_t cco_gda_host_words_offset(uint32_t rings, uint32_t depth) {
  return cco_gda_slots_bytes(rings, depth) + (uint64_t)rings * depth * sizeof(uint64_t);
}
CCO_ABI_INLINE uint64_t cco_gda_host_bytes(uint32_t rings, uint32_t depth) {
  return cco_gda_host_words_offset(rings, depth) + (uint64_t)rings * sizeof(ccoGdaRingHost);
}

#endif /* CCO_ABI_RING_H_ */
