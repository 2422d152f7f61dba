/* SPDX-License-Identifier: MIT */
/* CCO ABI: enumerations shared by the host SDK, the device library and the ABI table.
 *
 * tools/abi/gen_abi.py reads this file to put the enums into abi/cco_abi_table.json,
 * so keep the form: one `typedef enum ccoName { CCO_PREFIX_VALUE = N, ... } ccoName;`
 * per enum, every value explicit. Structs never store these types (their size is the
 * compiler's choice); they store int32_t / uint32_t fields holding the values. */
#ifndef CCO_ABI_ENUMS_H_
#define CCO_ABI_ENUMS_H_

/* Which threads cooperate in one device call. */
typedef enum ccoCoopScope { CCO_COOP_THREAD = 0, CCO_COOP_WARP = 1, CCO_COOP_BLOCK = 2 } ccoCoopScope;

/* What a signalling operation does to the remote signal slot. */
typedef enum ccoSignalOp { CCO_SIGNAL_NONE = 0, CCO_SIGNAL_INC = 1, CCO_SIGNAL_ADD = 2 } ccoSignalOp;

/* Whether the threads of a coop post independently or aggregate into one post. */
typedef enum ccoThreadMode { CCO_THREAD_INDEPENDENT = 0, CCO_THREAD_AGGREGATE = 1 } ccoThreadMode;

/* When a GDA post rings the NIC's doorbell. */
typedef enum ccoGdaDoorbellMode {
  CCO_GDA_DOORBELL_IMMEDIATE = 0,
  CCO_GDA_DOORBELL_DEFERRED = 1,
  CCO_GDA_DOORBELL_CALLER_ORDERED = 2
} ccoGdaDoorbellMode;

/* The guide's GDA variant tags: thread mode and coop in one (it = independent threads,
 * iw = independent warp, ib = independent block, at = aggregated threads). */
typedef enum ccoGdaTag { CCO_GDA_TAG_IT = 0, CCO_GDA_TAG_IW = 1, CCO_GDA_TAG_IB = 2, CCO_GDA_TAG_AT = 3 } ccoGdaTag;

/* The guide's SDMA variant tags: coop, and whether the transfer signals (_ns: no signal). */
typedef enum ccoSdmaTag {
  CCO_SDMA_TAG_THREAD = 0,
  CCO_SDMA_TAG_WARP = 1,
  CCO_SDMA_TAG_BLOCK = 2,
  CCO_SDMA_TAG_THREAD_NS = 3,
  CCO_SDMA_TAG_WARP_NS = 4,
  CCO_SDMA_TAG_BLOCK_NS = 5
} ccoSdmaTag;

/* Whether an SDMA put or get signals once its data has landed. */
typedef enum ccoSdmaSignal { CCO_SDMA_SIGNAL_OFF = 0, CCO_SDMA_SIGNAL_ON = 1 } ccoSdmaSignal;

/* Which peers get GDA (RDMA) connections. */
typedef enum ccoGdaConnectionType {
  CCO_GDA_CONNECTION_NONE = 0,
  CCO_GDA_CONNECTION_CROSSNODE = 1,
  CCO_GDA_CONNECTION_FULL = 2,
  CCO_GDA_CONNECTION_RAIL = 3
} ccoGdaConnectionType;

/* Logical rank subsets that device code addresses peers through. */
typedef enum ccoTeamKind {
  CCO_TEAM_WORLD = 0,
  CCO_TEAM_LSA = 1,
  CCO_TEAM_CROSSNODE = 2,
  CCO_TEAM_RAIL = 3,
  CCO_TEAM_GDA = 4 /* the ranks of this rank's GDA connections, in ring order */
} ccoTeamKind;

/* How an LSA barrier orders memory around it (as C++'s memory orders): an arrive with
 * RELEASE (or ACQ_REL) makes the coop's earlier writes visible before it; a wait with
 * ACQUIRE (or ACQ_REL) makes the peers' writes before their arrive visible after it.
 * RELAXED orders nothing and costs least: on a GPU a release waits until every earlier
 * store of the thread is acknowledged, the previous barrier's included. */
typedef enum ccoMemoryOrder {
  CCO_MEMORY_ORDER_RELAXED = 0,
  CCO_MEMORY_ORDER_ACQUIRE = 1,
  CCO_MEMORY_ORDER_RELEASE = 2,
  CCO_MEMORY_ORDER_ACQ_REL = 3
} ccoMemoryOrder;

/* What a device wait that can fail returns. */
typedef enum ccoDeviceStatus {
  CCO_DEVICE_STATUS_OK = 0,
  CCO_DEVICE_STATUS_TIMEOUT = 1,
  CCO_DEVICE_STATUS_ABORTED = 2,
  CCO_DEVICE_STATUS_INVALID_ARGUMENT = 3
} ccoDeviceStatus;

/* The tags of a kernel's own trace ranges (cco_trace_range, abi/trace.h): the trace names
 * these; from USER on the tags are the kernel's own. */
typedef enum ccoTraceTag {
  CCO_TRACE_TAG_TILE = 1,   /* a tile of a fused operator's GEMM */
  CCO_TRACE_TAG_PUSH = 2,   /* moving a tile or a chunk into peers' memory */
  CCO_TRACE_TAG_WAIT = 3,   /* waiting for what a peer sends */
  CCO_TRACE_TAG_REDUCE = 4, /* combining the peers' parts */
  CCO_TRACE_TAG_USER = 256
} ccoTraceTag;

#endif /* CCO_ABI_ENUMS_H_ */
