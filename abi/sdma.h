/* SPDX-License-Identifier: MIT */
/* CCO ABI: SDMA, copy-engine transfers between the ranks of one host with a device-visible
 * signal pool. Plain C, freestanding; compiled by the device library and the host proxy.
 *
 * A device posts descriptors (abi/ring.h: op PUT or GET, signalOp INC when the transfer
 * signals) to one ring per (LSA peer, queue); the proxy issues each
 * queue's work on a copy-engine stream of its own, in order, and after a signalled
 * transfer's data writes the new running count into the pool slot it alone writes:
 *
 *   remote pool (the target's, of a put): slot [srcLsaRank * queues + q] counts the
 *     signalled puts from srcLsaRank on queue q that have landed there;
 *   local pool (the initiator's): slot [peerLsaRank * queues + q] counts this rank's
 *     signalled gets from that peer on q that have landed here, and its puts to that peer
 *     on q posted with CCO_SDMA_FLAG_LOCAL once they are complete.
 *
 * A waiter reads a slot minus its shadow and consumes what it waited for (like GDA). */
#ifndef CCO_ABI_SDMA_H_
#define CCO_ABI_SDMA_H_

#include <stdint.h>

#include "abi/ring.h"
#include "abi/version.h"

/* Queues when the requirements ask for 0; descriptors per queue ring. */
#define CCO_SDMA_QUEUES_DEFAULT 2u
#define CCO_SDMA_RING_DEPTH_DEFAULT 256u

/* Flags of put and get (their i32 `flags` argument). */
#define CCO_SDMA_FLAG_AGGREGATE 1u /* not released until commit(peer, queue) */
#define CCO_SDMA_FLAG_LOCAL 2u     /* a put also counts in this rank's local pool once complete */
#define CCO_SDMA_FLAGS_ALL (CCO_SDMA_FLAG_AGGREGATE | CCO_SDMA_FLAG_LOCAL)

/* Descriptor flags (ccoGdaDesc.flags) the proxy reads: count completion in the local pool;
 * the offsets are from the LSA team's flat base (dstOffset, srcOffset: resolved pointers, each
 * inside a live window of the rank the operation names), the window ids unused. */
#define CCO_SDMA_DESC_LOCAL 2u
#define CCO_SDMA_DESC_FLAT 4u

/* The ring, and the pool slot, of (LSA peer, queue). */
CCO_ABI_INLINE uint32_t cco_sdma_slot(int32_t lsaPeer, int32_t queue, uint32_t queues) {
  return (uint32_t)lsaPeer * queues + (uint32_t)queue;
}

#endif /* CCO_ABI_SDMA_H_ */
