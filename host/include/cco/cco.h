/* SPDX-License-Identifier: MIT */
/* CCO host API: communicators, symmetric memory, windows and the device communicator.
 *
 * Plain C with a stable ABI. Every call returns a ccoResult_t; on failure,
 * ccoGetLastError() tells, for the calling thread, what was wrong (which argument, which
 * rank, which size). The library never exits or aborts the process, and every blocking
 * call is bounded by CCO_TIMEOUT_MS; so is every device wait that gives no timeout of its
 * own (ccoDevComm.waitTimeoutMs; CCO_NO_TIMEOUT asks for none).
 *
 * Collective calls (every rank of the communicator calls them, in the same order, with
 * matching arguments): ccoCommCreate, ccoWindowRegister, ccoWindowAllocRegister,
 * ccoWindowDeregister, ccoDevCommCreate, ccoDevCommDestroy, ccoBarrierAll, ccoAllGatherHost.
 * Ranks that disagree fail together, with a message naming the mismatch.
 * Local calls: queries, ccoMemAlloc, ccoMemFree, ccoGetPeerPtr, ccoCommAbort,
 * ccoCommGetAsyncError, ccoDevCommTraceFlush, and ccoCommDestroy: it frees this rank's part
 * alone and waits for no peer (a rank whose peers failed can always destroy); call it once
 * the collective calls are done (a peer still inside one, or still running kernels on this
 * rank's memory, sees this rank leave).
 *
 * Failure: a rank that ends (a process killed, or gone) fails the communicator on every rank
 * that sees it end (its host peers at once, its network peers when the connection breaks):
 * every device wait of every device communicator ends CCO_DEVICE_STATUS_ABORTED, and
 * ccoCommGetAsyncError names the rank; the host calls fail within CCO_TIMEOUT_MS. The
 * communicator can then only be destroyed; a new one can be made.
 *
 * Symmetric memory: ccoMemAlloc places an allocation at the same offset of every rank's
 * slice of the communicator's flat virtual range when ranks allocate in the same order;
 * ccoWindowRegister maps each LSA peer's copy, so peer pointer = base + peer*stride + offset.
 */
#ifndef CCO_CCO_H_
#define CCO_CCO_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/cco_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CCO_VERSION_MAJOR 0
#define CCO_VERSION_MINOR 1
#define CCO_VERSION_PATCH 0

typedef enum ccoResult_t {
  ccoSuccess = 0,
  ccoInvalidArgument = 1, /* a bad pointer, size, rank or handle from the caller */
  ccoInvalidUsage = 2,    /* a call that is not allowed now (use after destroy, free of a registered window) */
  ccoSystemError = 3,     /* the OS refused (sockets, mmap, file descriptors) */
  ccoPlatformError = 4,   /* the GPU driver refused */
  ccoRemoteError = 5,     /* another rank failed, exited, or disagreed on a collective call */
  ccoTimeout = 6,         /* a bounded wait expired (CCO_TIMEOUT_MS) */
  ccoOutOfMemory = 7,     /* the symmetric heap or the device is full */
  ccoAborted = 8,         /* ccoCommAbort was called on this communicator */
  ccoUnsupported = 9,     /* not available on this platform / build */
  ccoInternalError = 10
} ccoResult_t;

typedef enum ccoPlatform_t {
  ccoPlatformCpu = 0,  /* host memory stands in for device memory (memfd) */
  ccoPlatformCuda = 1, /* NVIDIA, through libcuda.so.1 (driver VMM) */
  ccoPlatformHip = 2   /* AMD, through libamdhip64.so */
} ccoPlatform_t;

#define CCO_UNIQUE_ID_BYTES 128
typedef struct ccoUniqueId {
  char internal[CCO_UNIQUE_ID_BYTES];
} ccoUniqueId;

typedef struct ccoComm ccoComm;

/* What ccoDevCommCreate provides. Always start from CCO_DEV_COMM_REQUIREMENTS_INITIALIZER:
 * the header (size, magic, version) lets the library reject an uninitialised struct. */
typedef struct ccoDevCommRequirements {
  size_t size;                /* sizeof(ccoDevCommRequirements) */
  uint32_t magic;             /* CCO_DEV_COMM_REQUIREMENTS_MAGIC */
  uint32_t version;           /* CCO_ABI_VERSION */
  int gdaConnectionType;      /* ccoGdaConnectionType: which peers get GDA connections */
  int gdaContextCount;        /* GDA contexts (queue sets) */
  int gdaSignalCount;         /* GDA signal slots (completion signalling) */
  int gdaCounterCount;        /* GDA counter slots (local completion) */
  int lsaBarrierCount;        /* intra-node (LSA) barriers */
  int sdmaQueueCount;         /* SDMA queues (0 = default, 2; at most 16) */
  int gdaBarrierCount;        /* GDA barriers (ccoGdaBarrierSession), among the GDA team */
  int gdaDirectMaxBytes;      /* GDA to peers of the LSA team: signal, put_value, and puts and gets
                               * a thread copies alone, of up to this many bytes by the device's own
                               * stores when the ring is idle; 0: always through the proxy; -1:
                               * CCO_GDA_DIRECT_MAX_BYTES, else 4096 (0 on hip) */
  int gdaDirectGroupMaxBytes; /* the same for a put or get whose copy a warp or block shares
                               * (the larger of the two bounds applies; none while
                               * gdaDirectMaxBytes is 0); -1: CCO_GDA_DIRECT_GROUP_MAX_BYTES,
                               * else 65536 (0 on hip) */
} ccoDevCommRequirements;     /* a caller of an older header passes its shorter `size`: the
                               * fields it lacks take the initializer's values */

#define CCO_DEV_COMM_REQUIREMENTS_INITIALIZER \
  {sizeof(ccoDevCommRequirements),            \
   CCO_DEV_COMM_REQUIREMENTS_MAGIC,           \
   CCO_ABI_VERSION,                           \
   CCO_GDA_CONNECTION_CROSSNODE,              \
   4,                                         \
   16,                                        \
   16,                                        \
   0,                                         \
   0,                                         \
   1,                                         \
   -1,                                        \
   -1}

/* --- errors and versions --------------------------------------------------------------- */
const char* ccoGetErrorString(ccoResult_t result);
/* What the calling thread's last failed call reported ("" if none). */
const char* ccoGetLastError(void);
int ccoGetAbiVersion(void);
ccoResult_t ccoGetVersion(int* major, int* minor, int* patch);

/* --- communicators --------------------------------------------------------------------- */
/* Mints a fresh id on the process that will host the rendezvous; hand the same id to
 * every rank (MPI, torch.distributed, a file). One id serves one ccoCommCreate. */
ccoResult_t ccoGetUniqueId(ccoUniqueId* id);
/* perRankVmmSize: virtual space of each rank's slice (rounded up to the granularity);
 * 0 picks the platform default (the device's memory size, 1 GiB on the cpu platform). */
ccoResult_t ccoCommCreate(ccoUniqueId id, int nRanks, int rank, size_t perRankVmmSize, ccoComm** comm);
/* Frees everything of this rank's (local, see above). comm is gone when it returns, whatever it
 * returns: an error says a driver call refused to free something (the first such, named). */
ccoResult_t ccoCommDestroy(ccoComm* comm);
/* Makes every blocking call on comm, host or device (every device communicator's waits),
 * return ccoAborted / CCO_DEVICE_STATUS_ABORTED; the communicator can then only be destroyed.
 * Callable from any thread. */
ccoResult_t ccoCommAbort(ccoComm* comm);
/* The first error the communicator's progress thread met on its own (a GDA peer lost, a
 * descriptor it refused): *asyncError is ccoSuccess, or that error's code and then
 * ccoGetLastError() names it (what failed, the peer rank). Poll it when a device wait
 * ends aborted; as NCCL's ncclCommGetAsyncError. */
ccoResult_t ccoCommGetAsyncError(ccoComm* comm, ccoResult_t* asyncError);

ccoResult_t ccoCommRank(const ccoComm* comm, int* rank);
ccoResult_t ccoCommSize(const ccoComm* comm, int* nRanks);
ccoResult_t ccoCommLsaRank(const ccoComm* comm, int* lsaRank);
ccoResult_t ccoCommLsaSize(const ccoComm* comm, int* lsaSize);
ccoResult_t ccoCommNode(const ccoComm* comm, int* node, int* nNodes);
ccoResult_t ccoCommPlatform(const ccoComm* comm, ccoPlatform_t* platform);
ccoResult_t ccoCommDevice(const ccoComm* comm, int* device);

/* --- symmetric memory and windows ------------------------------------------------------ */
ccoResult_t ccoMemAlloc(ccoComm* comm, size_t size, void** ptr);
ccoResult_t ccoMemFree(ccoComm* comm, void* ptr);
/* ptr..ptr+size must lie in one ccoMemAlloc allocation of comm; ptr must be 16-byte aligned
 * (device code moves 16 bytes at a time through window pointers). */
ccoResult_t ccoWindowRegister(ccoComm* comm, void* ptr, size_t size, ccoWindow_t* win);
/* The size-only form: allocate and register in one call (ccoWindowDeregister frees it). */
ccoResult_t ccoWindowAllocRegister(ccoComm* comm, size_t size, void** ptr, ccoWindow_t* win);
ccoResult_t ccoWindowDeregister(ccoComm* comm, ccoWindow_t win);
/* Host-usable address of byte `offset` of LSA rank lsaPeer's copy of the window. */
ccoResult_t ccoGetPeerPtr(ccoComm* comm, ccoWindow_t win, int lsaPeer, size_t offset, void** ptr);

/* --- device communicator --------------------------------------------------------------- */
/* Fills devComm (pass it by value to C++ kernels, or devComm->ptr to DSL kernels). Kernels
 * read the device copy at devComm->ptr as unchanging (invariant loads): destroy it only once
 * no kernel that was handed it runs. */
ccoResult_t ccoDevCommCreate(ccoComm* comm, const ccoDevCommRequirements* reqs, ccoDevComm* devComm);
ccoResult_t ccoDevCommDestroy(ccoComm* comm, ccoDevComm* devComm);
/* The device-side trace (CCO_TRACE=folder when devComm was made; docs/trace.md): writes what
 * devComm's trace buffer recorded since its last flush as a Chrome trace-event JSON file at
 * `path` (NULL: the next file in CCO_TRACE's folder), then empties the buffer. ccoDevCommDestroy
 * and ccoCommDestroy write what is left. Local; call it when no kernel that was handed devComm
 * runs. Does nothing where devComm does not trace. */
ccoResult_t ccoDevCommTraceFlush(ccoComm* comm, const ccoDevComm* devComm, const char* path);

/* --- host synchronisation -------------------------------------------------------------- */
ccoResult_t ccoBarrierAll(ccoComm* comm);

/* The most bytes one rank contributes to ccoAllGatherHost. */
#define CCO_ALLGATHER_HOST_MAX_BYTES 65536

/* Every rank's `bytes` bytes at `mine` (host memory), in rank order, into `all` (host memory
 * of nranks * bytes). Through the bootstrap, across nodes: for small agreements (shapes,
 * counts), not data. Every rank passes the same `bytes` (at most CCO_ALLGATHER_HOST_MAX_BYTES;
 * a rank with another count fails every rank, naming it); `mine` and `all` may be NULL only
 * where bytes is 0. */
ccoResult_t ccoAllGatherHost(ccoComm* comm, const void* mine, size_t bytes, void* all);

#ifdef __cplusplus
}
#endif

#endif /* CCO_CCO_H_ */
