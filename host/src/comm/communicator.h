// SPDX-License-Identifier: MIT
// ccoComm: one communicator's state, and the operations the C API runs on it.
//
// Locking: `mu` serialises the calls on one communicator (different communicators run
// in parallel). ccoCommAbort takes no lock: it must reach a call that blocks holding it.
#ifndef CCO_HOST_COMM_COMMUNICATOR_H_
#define CCO_HOST_COMM_COMMUNICATOR_H_

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "abi/window.h"
#include "auth/crypto.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/fd_mesh.h"
#include "comm/host_words.h"
#include "comm/window_table.h"
#include "memory/descriptor_pool.h"
#include "memory/slot_allocator.h"
#include "platform/platform.h"
#include "proxy/liveness.h"
#include "proxy/proxy.h"
#include "topology/topology.h"

namespace cco {

// One ccoMemAlloc allocation: a slot of this rank's slice, backed by its own physical
// memory. While windows cover it, each host peer's copy is reachable in the peer's slice:
// the granules under those windows, mapped in pieces (a later window maps what the earlier
// ones did not cover), so a peer's memory outside every window is not mapped at all where
// the platform maps at an offset (platform.h), and nothing past the last window anywhere.
struct Allocation {
  struct Piece {
    size_t begin, end;  // bytes of the allocation, granule-aligned
  };
  size_t offset = 0;
  size_t size = 0;
  MemHandle handle = 0;
  int windows = 0;  // live windows over it
  bool peersMapped = false;
  std::vector<MemHandle> peers;  // each host peer's physical memory, by host index (own slot unused)
  std::vector<bool> ownsPeer;    // false: an in-process peer's own handle, not ours to release
  std::vector<Piece> pieces;     // what is mapped of every peer's copy
};
// Where device communicators' resources come from (comm/resource_pool.h).
struct ResourcePool {
  ccoWindow_t window = 0;   // 0: none (the communicator is being created)
  size_t offset = 0;        // where the pool starts inside every slice
  size_t statusOffset = 0;  // this rank's status word (proxy_context.h), inside every slice
  SlotAllocator carves;     // offsets from the pool's start
};

class VerbsBackend;
class DevCommTrace;

struct DevCommRecord {
  ccoWindow_t resourceWindow = 0;       // the pool's window, or one of its own
  bool pooled = false;                  // resources carved from the pool at resourceOffset
  size_t resourceOffset = 0;            // inside every slice
  uint32_t serial = 0;                  // ccoDevComm.hostSerial (ccoComm::devCommSerial when it was made)
  std::shared_ptr<GdaResources> gda;    // null without GDA
  std::shared_ptr<SdmaResources> sdma;  // null without SDMA
  std::shared_ptr<DevCommTrace> trace;  // null unless CCO_TRACE (comm/devcomm_trace.h)
  bool hostWords = false;               // its host signal words are carved at hostWordsOffset
  size_t hostWordsOffset = 0;
};

}  // namespace cco

struct ccoComm {
  std::mutex mu;
  // Held by ccoCommAbort while it reaches into the bootstrap, the mesh and the abort flag,
  // and by teardown while it frees them: abort never takes `mu` (it must wake a call that
  // blocks holding it), so this is what keeps the two apart.
  std::mutex abortMu;
  uint64_t handle = 0;  // what the caller holds (api/comm_registry.h)
  cco::Platform* platform = nullptr;
  int device = 0;
  int64_t timeoutMs = 0;
  cco::Key secret{};  // the unique id's: every connection of this communicator proves it
  std::string idTag;  // a public name derived from it (process-local bookkeeping)
  cco::Topology topo;
  std::vector<cco::RankInfo> hostInfos;  // what this host's ranks announced at creation, by host index
  std::unique_ptr<cco::Bootstrap> bootstrap;
  std::unique_ptr<cco::FdMesh> mesh;
  // This rank's liveness word, and each host peer's in another process (by host index; null
  // for the others): the proxy sees a peer die by its word before its sockets close.
  std::unique_ptr<cco::OwnLiveness> liveness;
  std::vector<std::unique_ptr<cco::PeerLiveness>> peerLiveness;

  // The flat virtual range: host rank h's slice starts at flatBase + h * stride (LSA rank p
  // is host rank lsaHostBase + p, so LSA peers' slices are consecutive).
  uint64_t flatBase = 0;
  size_t stride = 0;
  size_t reserved = 0;
  size_t granularity = 0;
  cco::SlotAllocator slots;
  std::map<size_t, cco::Allocation> allocations;    // by offset
  cco::WindowTable windows;                         // the proxy asks it too, from its thread (comm/window_table.h)
  std::map<uint64_t, cco::DevCommRecord> devComms;  // by devComm.ptr
  cco::ResourcePool pool;
  cco::HostWords hostWords;                            // host signal words shared with host peers (comm/host_words.h)
  std::unique_ptr<cco::DescriptorPool> descriptors;    // window descriptors (window handles)
  std::unique_ptr<cco::DescriptorPool> devCommCopies;  // device copies of ccoDevComm (devComm.ptr)
  uint64_t registrations = 0;                          // ccoWindowRegister calls so far: the same count on every rank
  uint32_t devCommSerial = 0;                          // ccoDevComm.hostSerial of the last made here (a local count)
  uint32_t devCommCalls = 0;  // ccoDevCommCreate calls so far: alike on every rank, names GDA's on the wire
  // The GDA and SDMA progress (made at ccoCommCreate; its thread starts with the first device
  // communicator that has rings).
  std::unique_ptr<cco::Proxy> proxy;
  // The proxy's network backend when it is verbs: windows register with it (comm/net_setup.h).
  std::shared_ptr<cco::VerbsBackend> verbs;

  // ccoCommAbort's flag: host-mapped, so kernels poll it while they run.
  uint32_t* abortHost = nullptr;
  uint64_t abortDevice = 0;
  std::atomic<bool> aborted{false};

  uint64_t HostSlice(int hostIndex) const {
    return cco_slice_address(flatBase, stride, static_cast<uint64_t>(hostIndex), 0);
  }
  uint64_t LsaSlice(int lsaRank) const { return HostSlice(topo.lsaHostBase + lsaRank); }
  uint64_t LsaFlatBase() const { return HostSlice(topo.lsaHostBase); }
  uint64_t MySlice() const { return HostSlice(topo.hostRank); }
  int HostSize() const { return static_cast<int>(topo.hostMembers.size()); }
  // Whether host rank h lives in this process (its memory is mapped without descriptors).
  bool InThisProcess(int hostIndex) const;
};

namespace cco {

Status CreateComm(const ccoUniqueId& id, int nRanks, int rank, size_t perRankVmmSize, std::shared_ptr<ccoComm>* out);
// Local: frees every mapping, handle, descriptor and socket of this rank. A driver call that
// fails does not stop the others; the first such failure is returned (nothing else is left).
Status DestroyComm(ccoComm& comm);
void AbortComm(ccoComm& comm);

Status AllocMem(ccoComm& comm, size_t size, void** ptr);
Status FreeMem(ccoComm& comm, void* ptr);

// `internal`: the communicator's own (resources), which users cannot deregister.
Status RegisterWindow(ccoComm& comm, void* ptr, size_t size, bool ownsAllocation, ccoWindow_t* win,
                      bool internal = false);
// `internal`: the communicator's own windows may be deregistered too (never at a user's call).
Status DeregisterWindow(ccoComm& comm, ccoWindow_t win, bool internal = false);
Status PeerPointer(ccoComm& comm, ccoWindow_t win, int lsaPeer, size_t offset, void** ptr);
// Unmaps every peer's copy of `a` and lets go of the peers' memory (local); every call is made,
// the first failure returned.
Status ReleasePeers(ccoComm& comm, Allocation& a);

Status CreateDevComm(ccoComm& comm, const ccoDevCommRequirements* reqs, ccoDevComm* devComm);
Status DestroyDevComm(ccoComm& comm, ccoDevComm* devComm);
// Writes what the device communicator's trace (comm/devcomm_trace.h) recorded since its last
// flush, where it traces: at its end (destroy, or the communicator's destroy); a failure is
// said on stderr, never returned.
void WriteTraceAtEnd(ccoComm& comm, const DevCommRecord& record);

// Every rank reports how its part of the collective call `op` went; all fail if one did,
// with that rank's message. Keeps ranks from drifting apart after a local failure.
Status Agree(ccoComm& comm, const std::string& op, const Status& local);

}  // namespace cco

#endif  // CCO_HOST_COMM_COMMUNICATOR_H_
