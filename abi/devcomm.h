/* SPDX-License-Identifier: MIT */
/* CCO ABI: the device communicator.
 *
 * ccoDevCommCreate fills one ccoDevComm on the host and copies it to device memory; a
 * kernel takes it by value (C++) or as `dc`, the uint64 device address of that copy
 * (DSL kernels, through the bitcode). Everything a device function needs reaches it
 * through this struct and window handles: there is no process-global device state.
 */
#ifndef CCO_ABI_DEVCOMM_H_
#define CCO_ABI_DEVCOMM_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/version.h"
#include "abi/window.h"

/* A logical subset of ranks; member i has world rank worldBase + i * stride.
 * rank is this rank's index in the team, or -1 where it is not a member. */
typedef struct ccoTeam {
  int32_t nRanks;
  int32_t rank;
  int32_t stride;
  int32_t worldBase;
} ccoTeam;

CCO_STATIC_ASSERT(sizeof(ccoTeam) == 16, "ccoTeam size");

/* A device wait's timeoutNs argument (ccoGda, ccoSdma, the LSA barrier's wait and sync, the
 * _timeout wrappers): 0 takes the device communicator's bound (waitTimeoutMs); this value
 * sets none, so that the wait ends only when its condition holds or the communicator is
 * aborted or fails; any other value is the bound in ns. A timed-out wait returns
 * CCO_DEVICE_STATUS_TIMEOUT, an aborted one CCO_DEVICE_STATUS_ABORTED. */
#define CCO_NO_TIMEOUT UINT64_MAX

typedef struct ccoDevComm {
  /* header */
  uint32_t magic;      /* CCO_DEV_COMM_MAGIC */
  uint32_t abiVersion; /* CCO_ABI_VERSION */
  uint32_t size;       /* sizeof(ccoDevComm) */
  uint32_t flags;      /* zero */
  uint64_t ptr;        /* device address of the device copy (what kernels get as
                        * dc), in this rank's own memory, outside every window */

  /* topology */
  int32_t rank;
  int32_t worldSize;
  int32_t lsaRank;
  int32_t lsaSize;
  int32_t node;
  int32_t nNodes;
  ccoTeam teamWorld;
  ccoTeam teamLsa;
  ccoTeam teamRail; /* same LSA rank on every node; {1, 0, 0, rank} if nodes differ in size */

  /* symmetric memory: peer address = lsaFlatBase + lsaPeer * lsaStride + offset */
  uint64_t lsaFlatBase;
  uint64_t lsaStride;

  /* this devcomm's resources (signals, counters, barrier state): resourceSize bytes at
   * resourceOffset of every rank's slice, inside window resourceWindow (the communicator's
   * resource pool, which device communicators share, or a window of their own when the pool
   * has no room: ccoGetPeerPtr(resourceWindow, peer, 0) is that window's start). The offsets
   * below count from resourceOffset. The window is the host's name for them only: no device
   * call and no request of a peer takes it as a window (its device descriptor reads as a
   * dead one, and proxies and network backends refuse its id), and nothing in it is a pointer
   * the device follows (this struct's device copy lies apart, in memory no peer maps). */
  ccoWindow_t resourceWindow;
  uint64_t resourceOffset; /* where this devcomm's resources start inside every slice */
  uint64_t resourceSize;
  uint64_t abortFlag; /* address of a uint32 that turns non-zero when the
                       * communicator is aborted (ccoCommAbort) or has failed (its
                       * proxy saw a rank end or a network peer lost): every device
                       * wait then ends ABORTED */

  /* LSA barriers, inside the resources:
   *   epochs: lsaBarrierCount pairs of uint32 at lsaBarrierEpochOffset: {epoch (this
   *           rank's progress), verdict (scratch where a coop agrees on a status)}
   *   inboxes: lsaBarrierCount * lsaSize uint32 at lsaBarrierInboxOffset; slot
   *            [barrier * lsaSize + peer] is written by LSA rank `peer` */
  uint32_t lsaBarrierCount;
  uint32_t lsaBarrierEpochOffset;
  uint32_t lsaBarrierInboxOffset;
  uint32_t hostSerial; /* which of its communicator's device communicators this is: the
                        * host checks it on destroy (a stale copy of one destroyed is
                        * refused, though a later one reuses its place); kernels never
                        * read it */

  /* GDA (proxy provider) and SDMA counts; shadows live inside the resources */
  uint32_t gdaConnectionType; /* ccoGdaConnectionType */
  uint32_t gdaContextCount;
  uint32_t gdaSignalCount;
  uint32_t gdaCounterCount;
  uint32_t gdaBarrierCount; /* GDA barriers: gdaBarrierCount * worldSize signal words after the signals */
  uint32_t gdaShadowOffset; /* gdaSignalCount uint64 shadows (consumed part of each signal) */
  uint32_t gdaFlushOffset;  /* gdaContextCount * gdaPeerCount uint64 flush_async targets */
  uint32_t sdmaQueueCount;

  /* GDA rings (abi/gda.h): gdaContextCount * gdaPeerCount rings of gdaRingDepth; and the
   * signal and counter words, in the resources (signals: (gdaSignalCount +
   * gdaBarrierCount) ids of worldSize proxy words each, cco_gda_signal_word, then as many
   * ids of lsaSize direct words, cco_gda_direct_signal_word; counters: gdaCounterCount words) */
  uint64_t gdaRingSlots;           /* device address of the descriptors (host-mapped) */
  uint64_t gdaRingHost;            /* device address of the rings' host-side words (host-mapped) */
  uint64_t gdaRingDevice;          /* device address of the rings' device-side words */
  uint64_t gdaSignals;             /* device address of this rank's signal words (uint64) */
  uint64_t gdaCounters;            /* device address of this rank's counter words (uint64) */
  uint32_t gdaRingDepth;           /* a power of two */
  int32_t gdaPeerCount;            /* connected peers (the GDA team), rings per context */
  int32_t gdaUniformNodes;         /* 1 when every node has lsaSize ranks (RAIL needs it) */
  uint32_t gdaDirectMaxBytes;      /* 0: every operation goes through the proxy. Otherwise a
                                    * signal, a put_value, or a put or get of up to this many
                                    * bytes (a lone thread's copy) with a peer of the LSA team
                                    * is done by the device itself when the ring to that peer
                                    * is idle (abi/gda.h, direct words) */
  uint32_t gdaDirectGroupMaxBytes; /* where gdaDirectMaxBytes is not 0: a put or get whose copy
                                    * a warp or block shares goes direct up to the larger of the
                                    * two. Taken from reserved space, so the version stands: a
                                    * host before it leaves 0 (groups keep gdaDirectMaxBytes), a
                                    * device before it ignores it (the same) */
  uint32_t waitTimeoutMs;          /* the bound of every device wait whose call gives none
                                    * (timeoutNs 0), in ms: CCO_TIMEOUT_MS when the device
                                    * communicator was made; 0: none. Taken from reserved space,
                                    * so the version stands: a host before it leaves 0 (no
                                    * bound, as then), a device before it ignores it */

  /* SDMA (abi/sdma.h; 0 everywhere unless enabled): lsaSize * sdmaQueueCount rings of
   * sdmaRingDepth, the GDA ring format, ring [lsaPeer * sdmaQueueCount + queue]; the signal
   * pools in the resources, lsaSize * sdmaQueueCount uint64 each */
  uint64_t sdmaRingSlots;  /* device address of the descriptors (host-mapped) */
  uint64_t sdmaRingHost;   /* device address of the rings' host-side words (host-mapped) */
  uint64_t sdmaRingDevice; /* device address of the rings' device-side words */
  uint64_t sdmaSignals;    /* remote pool: [srcLsaRank * sdmaQueueCount + q], one writer each */
  uint64_t sdmaLocal;      /* local pool: [peerLsaRank * sdmaQueueCount + q], this rank's proxy */
  uint32_t sdmaRingDepth;
  uint32_t sdmaShadowOffset; /* 2 * lsaSize * sdmaQueueCount uint64 shadows: remote pool, then local */
  uint64_t trace;            /* device address of this device communicator's trace buffer
                              * (abi/trace.h), 0: tracing off. Taken from reserved space, so
                              * the version stands: a host before it leaves 0 (no trace), a
                              * device before it records nothing */
  uint64_t hostBell;         /* the cpu platform's (device code on host threads): address of this
                              * rank's ccoHostBell, in its slice of the resource window (every
                              * rank's lies at the same offset of its own slice), rung after each
                              * word the host writes for the device, so that a wait may sleep until
                              * then; 0 elsewhere. Taken from reserved space, so the version
                              * stands: a host before it leaves 0 (a wait pauses a fixed while, as
                              * then), a device before it ignores it */
  uint64_t gdaHostSignals;   /* device address of this rank's host signal words (host memory its
                              * host peers' proxies write with CPU stores: abi/gda.h,
                              * cco_gda_host_signal_word), 0: none. Added in ABI version 7, which
                              * grew the struct; in version 8 they hold what the proxy stores, the
                              * rest staying in gdaSignals (in 7 an LSA sender's proxy words moved
                              * there whole): a host and a device of other versions refuse each other */
} ccoDevComm;

/* The cpu platform's bell of a rank (ccoDevComm.hostBell), a pair of words in shared memory:
 * `rings` (a futex) counts the writes of words the rank's device waits may watch (signals,
 * counters, ring credit, the abort flag) by its proxy, its host peers' proxies and direct
 * signals, and `sleepers` the waits asleep on it, so that a write with none asleep makes no
 * system call. A wait that sleeps still wakes after a short while (20 us). */
typedef struct ccoHostBell {
  uint32_t rings;
  uint32_t sleepers;
} ccoHostBell;

CCO_STATIC_ASSERT(sizeof(ccoDevComm) == 328, "ccoDevComm size");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, ptr) == 16, "ccoDevComm.ptr");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, rank) == 24, "ccoDevComm.rank");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, worldSize) == 28, "ccoDevComm.worldSize");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, lsaRank) == 32, "ccoDevComm.lsaRank");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, lsaSize) == 36, "ccoDevComm.lsaSize");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, node) == 40, "ccoDevComm.node");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, nNodes) == 44, "ccoDevComm.nNodes");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, teamWorld) == 48, "ccoDevComm.teamWorld");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, teamLsa) == 64, "ccoDevComm.teamLsa");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, teamRail) == 80, "ccoDevComm.teamRail");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, lsaFlatBase) == 96, "ccoDevComm.lsaFlatBase");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, lsaStride) == 104, "ccoDevComm.lsaStride");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, resourceWindow) == 112, "ccoDevComm.resourceWindow");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, resourceOffset) == 120, "ccoDevComm.resourceOffset");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, resourceSize) == 128, "ccoDevComm.resourceSize");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, abortFlag) == 136, "ccoDevComm.abortFlag");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, lsaBarrierCount) == 144, "ccoDevComm.lsaBarrierCount");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, lsaBarrierEpochOffset) == 148, "ccoDevComm.lsaBarrierEpochOffset");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, lsaBarrierInboxOffset) == 152, "ccoDevComm.lsaBarrierInboxOffset");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, gdaConnectionType) == 160, "ccoDevComm.gdaConnectionType");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, gdaBarrierCount) == 176, "ccoDevComm.gdaBarrierCount");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, sdmaQueueCount) == 188, "ccoDevComm.sdmaQueueCount");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, gdaRingSlots) == 192, "ccoDevComm.gdaRingSlots");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, gdaSignals) == 216, "ccoDevComm.gdaSignals");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, gdaRingDepth) == 232, "ccoDevComm.gdaRingDepth");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, gdaDirectGroupMaxBytes) == 248, "ccoDevComm.gdaDirectGroupMaxBytes");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, waitTimeoutMs) == 252, "ccoDevComm.waitTimeoutMs");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, sdmaRingSlots) == 256, "ccoDevComm.sdmaRingSlots");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, sdmaSignals) == 280, "ccoDevComm.sdmaSignals");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, sdmaRingDepth) == 296, "ccoDevComm.sdmaRingDepth");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, trace) == 304, "ccoDevComm.trace");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, hostBell) == 312, "ccoDevComm.hostBell");
CCO_STATIC_ASSERT(offsetof(ccoDevComm, gdaHostSignals) == 320, "ccoDevComm.gdaHostSignals");
CCO_STATIC_ASSERT(sizeof(ccoHostBell) == 8, "ccoHostBell size");

#endif /* CCO_ABI_DEVCOMM_H_ */
