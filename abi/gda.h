/* CCO ABI: the GDA proxy provider's rings, the one layout the device library (producer)
 * and the host proxy (consumer) both compile. Plain C, freestanding, no allocation: the
 * arithmetic here is the only copy of it on either side.
 *
 * One ring per (context, connected peer): `depth` (a power of two) 64-byte descriptors in
 * host-mapped memory, and three counters, all monotone 64-bit tickets compared wrap-safely:
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
 *             through a device-side cache
 *
 * A slot is complete when its `seq` word, written last with release order, equals its
 * ticket + 1: the proxy never acts on a descriptor that is still being written, even when a
 * later ring released it, and never needs to clear a slot (the marks need no order either).
 * Windows travel as ids
 * (ccoWindowDevice.id) and offsets, never as addresses.
 */
#ifndef CCO_ABI_GDA_H_
#define CCO_ABI_GDA_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/enums.h"
#include "abi/version.h"

/* Compiled by every side: host, freestanding device builds, and nvcc / hipcc kernels. */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define CCO_GDA_INLINE static inline __host__ __device__ __attribute__((always_inline))
#elif defined(__cplusplus)
#define CCO_GDA_INLINE static inline __attribute__((always_inline))
#else
#define CCO_GDA_INLINE static inline
#endif

/* Descriptors per ring by default; a ring's depth is any power of two (ccoDevComm.gdaRingDepth). */
#define CCO_GDA_RING_DEPTH_DEFAULT 256u

/* What a descriptor asks for. */
typedef enum ccoGdaOp {
  CCO_GDA_OP_PUT = 1,       /* bytes from (srcWindow, srcOffset) here to (dstWindow, dstOffset) there */
  CCO_GDA_OP_PUT_VALUE = 2, /* srcOffset holds the value (bytes <= 8) */
  CCO_GDA_OP_GET = 3,       /* bytes from (srcWindow, srcOffset) there to (dstWindow, dstOffset) here */
  CCO_GDA_OP_SIGNAL = 4     /* only the signal */
} ccoGdaOp;

/* Descriptor flags. */
#define CCO_GDA_DESC_MARKER 1u /* a counter marker (op SIGNAL, no signal): counter counterId counts,
                                  per context, the markers every ring of the context has passed */

typedef struct ccoGdaDesc {
  uint64_t seq;          /* ticket + 1, stored last with release order: the slot is complete */
  uint8_t op;            /* ccoGdaOp */
  uint8_t signalOp;      /* ccoSignalOp: applied at the target after the data */
  uint16_t flags;        /* CCO_GDA_DESC_* */
  uint32_t signalId;
  uint32_t dstWindow;    /* window ids */
  uint32_t srcWindow;
  uint64_t dstOffset;
  uint64_t srcOffset;    /* CCO_GDA_OP_PUT_VALUE: the value */
  uint64_t bytes;
  uint64_t signalValue;  /* CCO_SIGNAL_ADD: the addend (INC adds 1) */
  uint32_t counterId;    /* CCO_GDA_DESC_MARKER */
  uint32_t reserved;     /* zero */
} ccoGdaDesc;

/* Each ring's host-side words, one cache line apiece (the proxy writes them; the device reads). */
typedef struct ccoGdaRingHost {
  uint64_t consumed;
  uint64_t pad0[7];
  uint32_t error;        /* ccoGdaRingError: the proxy failed this ring's work */
  int32_t errorPeer;     /* the world rank it failed on */
  uint64_t pad1[7];
} ccoGdaRingHost;

/* Each ring's device-side words. */
typedef struct ccoGdaRingDevice {
  uint64_t head;
  uint64_t released;
  uint64_t consumedCache;  /* the last `consumed` a poster read */
  uint64_t failed;         /* non-zero once the proxy failed the ring (ccoGdaRingHost.error says
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
CCO_STATIC_ASSERT(sizeof(ccoGdaRingHost) == 128, "ccoGdaRingHost size");
CCO_STATIC_ASSERT(offsetof(ccoGdaRingHost, consumed) == 0, "ccoGdaRingHost.consumed");
CCO_STATIC_ASSERT(offsetof(ccoGdaRingHost, error) == 64, "ccoGdaRingHost.error");
CCO_STATIC_ASSERT(sizeof(ccoGdaRingDevice) == 64, "ccoGdaRingDevice size");
CCO_STATIC_ASSERT(offsetof(ccoGdaRingDevice, failed) == 24, "ccoGdaRingDevice.failed");

/* --- tickets ----------------------------------------------------------------------------- */

/* a < b, wrap-safe (tickets are 64-bit and never wrap in practice; the compare stays right
 * across 2^64 anyway). */
CCO_GDA_INLINE int cco_gda_before(uint64_t a, uint64_t b) { return (int64_t)(a - b) < 0; }
CCO_GDA_INLINE uint64_t cco_gda_slot_of(uint64_t ticket, uint32_t depth) { return ticket & (uint64_t)(depth - 1u); }

/* Whether the mark `mark` read at boundary `at` (the mark of ticket `at`) is the link the
 * ring from `at` stored: `at` < mark <= `at` + depth. Marks left by earlier laps are at most
 * `at`; a device cannot release more than `depth` tickets past the proxy. */
CCO_GDA_INLINE int cco_gda_mark_links(uint64_t at, uint64_t mark, uint32_t depth) {
  return cco_gda_before(at, mark) && !cco_gda_before(at + depth, mark);
}

/* The ticket of `slot`'s first lap, for a ring whose first ticket is `firstTicket`. */
CCO_GDA_INLINE uint64_t cco_gda_first_lap_ticket(uint64_t slot, uint64_t firstTicket, uint32_t depth) {
  return firstTicket + ((slot - firstTicket) & (uint64_t)(depth - 1u));
}

/* What a slot's `seq` holds before its first post: the ticket one lap before its first, + 1.
 * It matches no ticket of the first lap (zeroed memory would match ticket 2^64 - 1), so a slot
 * never written is never taken as complete. A slot's mark starts at its first-lap ticket,
 * which links nothing (cco_gda_mark_links). */
CCO_GDA_INLINE uint64_t cco_gda_initial_seq(uint64_t slot, uint64_t firstTicket, uint32_t depth) {
  return cco_gda_first_lap_ticket(slot, firstTicket, depth) + 1u - depth;
}

/* --- peers ------------------------------------------------------------------------------- */

/* The topology the peer arithmetic needs (from ccoDevComm on the device, the communicator on
 * the host). Nodes are contiguous runs of world ranks; `uniform` = every node has lsaSize ranks. */
typedef struct ccoGdaTopo {
  int32_t rank, nRanks;
  int32_t lsaRank, lsaSize, lsaWorldBase;
  int32_t node, nNodes;
  int32_t uniform;
} ccoGdaTopo;

/* How many peers a connection type connects (rings per context). */
CCO_GDA_INLINE int32_t cco_gda_conn_peer_count(int32_t connectionType, const ccoGdaTopo* t) {
  switch (connectionType) {
    case CCO_GDA_CONNECTION_FULL: return t->nRanks;
    case CCO_GDA_CONNECTION_CROSSNODE: return t->nRanks - t->lsaSize + 1; /* off-node ranks and self */
    case CCO_GDA_CONNECTION_RAIL: return t->uniform ? t->nNodes : 1;      /* this LSA rank on every node */
    default: return 0;
  }
}

/* The GDA-team index (ring slot) of world rank `peer`, or -1 where it is not connected. */
CCO_GDA_INLINE int32_t cco_gda_conn_peer_index(int32_t connectionType, const ccoGdaTopo* t, int32_t peer) {
  if (peer < 0 || peer >= t->nRanks) return -1;
  const int32_t lsaEnd = t->lsaWorldBase + t->lsaSize;
  switch (connectionType) {
    case CCO_GDA_CONNECTION_FULL: return peer;
    case CCO_GDA_CONNECTION_CROSSNODE:
      if (peer < t->lsaWorldBase) return peer;
      if (peer == t->rank) return t->lsaWorldBase;
      if (peer < lsaEnd) return -1;
      return peer - t->lsaSize + 1;
    case CCO_GDA_CONNECTION_RAIL:
      if (!t->uniform) return peer == t->rank ? 0 : -1;
      if (peer % t->lsaSize != t->lsaRank) return -1;
      return peer / t->lsaSize;
    default: return -1;
  }
}

/* The world rank of GDA-team index `index`, or -1 outside the team. */
CCO_GDA_INLINE int32_t cco_gda_conn_team_peer(int32_t connectionType, const ccoGdaTopo* t, int32_t index) {
  if (index < 0 || index >= cco_gda_conn_peer_count(connectionType, t)) return -1;
  switch (connectionType) {
    case CCO_GDA_CONNECTION_FULL: return index;
    case CCO_GDA_CONNECTION_CROSSNODE:
      if (index < t->lsaWorldBase) return index;
      if (index == t->lsaWorldBase) return t->rank;
      return index + t->lsaSize - 1;
    case CCO_GDA_CONNECTION_RAIL: return t->uniform ? index * t->lsaSize + t->lsaRank : t->rank;
    default: return -1;
  }
}

/* --- signal words --------------------------------------------------------------------------- */

/* A rank's signal words live in its resource window (device memory, in every host peer's flat
 * range), one word per (signal id, sender's world rank): ids [0, gdaSignalCount) are the user's
 * signals, then gdaBarrierCount barrier signals. A word has one writer, the sender's proxy,
 * which writes the sender's running sum behind the signalled data on its stream (a stream
 * write needs no atomic add, and the data is visible first). A signal's value is the sum of
 * its words over the GDA team (and of the direct words below). */
CCO_GDA_INLINE uint64_t cco_gda_signal_word(uint32_t signalId, int32_t sender, int32_t worldSize) {
  return (uint64_t)signalId * (uint64_t)worldSize + (uint64_t)sender;
}

/* The direct path (ccoDevComm.gdaDirectMaxBytes, gdaDirectGroupMaxBytes): a sender in the
 * target's LSA team whose ring to it is idle does small operations itself, by stores into the
 * target's memory, and adds to a word of its own there with a system-scope atomic. Those
 * words follow the proxy's words, one per (signal id, sender's LSA rank); the proxy never
 * writes them and a device never writes a proxy word, so each keeps one kind of writer (the
 * proxy's stores of running sums would overwrite a device's adds). A signal's value is the
 * sum of both kinds. */
CCO_GDA_INLINE uint64_t cco_gda_direct_signal_word(uint32_t signalIds, int32_t worldSize, uint32_t signalId,
                                                   int32_t senderLsaRank, int32_t lsaSize) {
  return (uint64_t)signalIds * (uint64_t)worldSize + (uint64_t)signalId * (uint64_t)lsaSize + (uint64_t)senderLsaRank;
}

/* Signal words of a device communicator with `signalIds` ids (user signals and barriers):
 * the proxy's, then the direct ones. */
CCO_GDA_INLINE uint64_t cco_gda_signal_words(uint32_t signalIds, int32_t worldSize, int32_t lsaSize) {
  return (uint64_t)signalIds * ((uint64_t)worldSize + (uint64_t)lsaSize);
}

/* --- where a ring lives -------------------------------------------------------------------- */

CCO_GDA_INLINE uint32_t cco_gda_ring_index(int32_t context, int32_t peerIndex, int32_t peersPerContext) {
  return (uint32_t)context * (uint32_t)peersPerContext + (uint32_t)peerIndex;
}
CCO_GDA_INLINE uint64_t cco_gda_desc_address(uint64_t slots, uint32_t depth, uint32_t ring, uint64_t ticket) {
  return slots + ((uint64_t)ring * depth + cco_gda_slot_of(ticket, depth)) * sizeof(ccoGdaDesc);
}
CCO_GDA_INLINE uint64_t cco_gda_ring_host_address(uint64_t hostWords, uint32_t ring) {
  return hostWords + (uint64_t)ring * sizeof(ccoGdaRingHost);
}
/* The marks of `ring` (one uint64 per slot) lie below the host-side words, ring 0's nearest:
 * a poster finds them from the words' address alone. */
CCO_GDA_INLINE uint64_t cco_gda_ring_marks_address(uint64_t hostWords, uint32_t depth, uint32_t ring) {
  return hostWords - ((uint64_t)ring + 1u) * depth * sizeof(uint64_t);
}
CCO_GDA_INLINE uint64_t cco_gda_ring_device_address(uint64_t deviceState, uint32_t ring) {
  return deviceState + (uint64_t)ring * sizeof(ccoGdaRingDevice);
}
/* Host-mapped bytes of `rings` rings of `depth`: the descriptors, the marks (last ring
 * first), then the host-side words. */
CCO_GDA_INLINE uint64_t cco_gda_slots_bytes(uint32_t rings, uint32_t depth) {
  return (uint64_t)rings * depth * sizeof(ccoGdaDesc);
}
CCO_GDA_INLINE uint64_t cco_gda_host_words_offset(uint32_t rings, uint32_t depth) {
  return cco_gda_slots_bytes(rings, depth) + (uint64_t)rings * depth * sizeof(uint64_t);
}
CCO_GDA_INLINE uint64_t cco_gda_host_bytes(uint32_t rings, uint32_t depth) {
  return cco_gda_host_words_offset(rings, depth) + (uint64_t)rings * sizeof(ccoGdaRingHost);
}

#endif /* CCO_ABI_GDA_H_ */
