/* SPDX-License-Identifier: MIT */
/* CCO ABI: the GDA proxy provider's device-host contract: which rings a device
 * communicator has (one per context and connected peer, each a ring of abi/ring.h), how
 * world ranks map to ring slots for each connection type, and where signal words live.
 * Plain C, freestanding, no allocation; compiled by the device library and the host proxy,
 * the only copy of this arithmetic on either side.
 */
#ifndef CCO_ABI_GDA_H_
#define CCO_ABI_GDA_H_

#include <stdint.h>

#include "abi/enums.h"
#include "abi/ring.h"
#include "abi/version.h"

/* Descriptors per ring by default; a ring's depth is any power of two (ccoDevComm.gdaRingDepth). */
#define CCO_GDA_RING_DEPTH_DEFAULT 256u

/* Descriptor flags. */
#define CCO_GDA_DESC_MARKER                                                \
  1u /* a counter marker (op SIGNAL, no signal): counter counterId counts, \
        per context, the markers every ring of the context has passed */

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
CCO_ABI_INLINE int32_t cco_gda_conn_peer_count(int32_t connectionType, const ccoGdaTopo* t) {
  switch (connectionType) {
    case CCO_GDA_CONNECTION_FULL: return t->nRanks;
    case CCO_GDA_CONNECTION_CROSSNODE: return t->nRanks - t->lsaSize + 1; /* off-node ranks and self */
    case CCO_GDA_CONNECTION_RAIL: return t->uniform ? t->nNodes : 1;      /* this LSA rank on every node */
    default: return 0;
  }
}

/* The GDA-team index (ring slot) of world rank `peer`, or -1 where it is not connected. */
CCO_ABI_INLINE int32_t cco_gda_conn_peer_index(int32_t connectionType, const ccoGdaTopo* t, int32_t peer) {
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
CCO_ABI_INLINE int32_t cco_gda_conn_team_peer(int32_t connectionType, const ccoGdaTopo* t, int32_t index) {
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
CCO_ABI_INLINE uint64_t cco_gda_signal_word(uint32_t signalId, int32_t sender, int32_t worldSize) {
  return (uint64_t)signalId * (uint64_t)worldSize + (uint64_t)sender;
}

/* The direct path (ccoDevComm.gdaDirectMaxBytes, gdaDirectGroupMaxBytes): a sender in the
 * target's LSA team whose ring to it is idle does small operations itself, by stores into the
 * target's memory, and adds to a word of its own there with a system-scope atomic. Those
 * words follow the proxy's words, one per (signal id, sender's LSA rank); the proxy never
 * writes them and a device never writes a proxy word, so each keeps one kind of writer (the
 * proxy's stores of running sums would overwrite a device's adds). A signal's value is the
 * sum of both kinds. */
CCO_ABI_INLINE uint64_t cco_gda_direct_signal_word(uint32_t signalIds, int32_t worldSize, uint32_t signalId,
                                                   int32_t senderLsaRank, int32_t lsaSize) {
  return (uint64_t)signalIds * (uint64_t)worldSize + (uint64_t)signalId * (uint64_t)lsaSize + (uint64_t)senderLsaRank;
}

/* Host signal words (ccoDevComm.gdaHostSignals, where not 0): one more word per (signal id,
 * sender's LSA rank), in host memory, for the signals the sender's proxy can write with a CPU
 * store, those with nothing it queued before still running; a signal behind work still on its
 * stream (a put's) goes to the sender's proxy word in gdaSignals by a stream write, as without
 * host words. The proxy keeps each word's own running sum; a signal's value adds the host
 * words to the others. Each word still has one writer, the sender's proxy. */
CCO_ABI_INLINE uint64_t cco_gda_host_signal_word(uint32_t signalId, int32_t senderLsaRank, int32_t lsaSize) {
  return (uint64_t)signalId * (uint64_t)lsaSize + (uint64_t)senderLsaRank;
}

/* Signal words of a device communicator with `signalIds` ids (user signals and barriers):
 * the proxy's, then the direct ones. */
CCO_ABI_INLINE uint64_t cco_gda_signal_words(uint32_t signalIds, int32_t worldSize, int32_t lsaSize) {
  return (uint64_t)signalIds * ((uint64_t)worldSize + (uint64_t)lsaSize);
}

/* --- which ring ------------------------------------------------------------------------- */

/* The ring of (context, GDA-team index) in the device communicator's ring set. */
CCO_ABI_INLINE uint32_t cco_gda_ring_index(int32_t context, int32_t peerIndex, int32_t peersPerContext) {
  return (uint32_t)context * (uint32_t)peersPerContext + (uint32_t)peerIndex;
}

#endif /* CCO_ABI_GDA_H_ */
