// SPDX-License-Identifier: MIT
// The C entry points of cco.h: argument checks, the communicator lookup and lock, then
// the work in comm/. Every path returns a ccoResult_t and leaves a detail for
// ccoGetLastError; nothing here throws, exits or aborts.
#include <new>

#include "api/comm_registry.h"
#include "api/last_error.h"
#include "bootstrap/root.h"
#include "comm/communicator.h"
#include "comm/devcomm_trace.h"

using cco::InvalidArgument;
using cco::InvalidUsage;
using cco::Report;
using cco::Status;

namespace {

Status NotLive() {
  return InvalidUsage(
      "comm is not a live communicator (NULL, destroyed, never created, or not a handle ccoCommCreate gave)");
}

// Runs `body` on the live communicator `handle` under its lock.
template <class Body> ccoResult_t WithComm(const char* function, const ccoComm* handle, Body body) {
  std::shared_ptr<ccoComm> comm = cco::LookupComm(handle);
  if (!comm) return Report(function, NotLive());
  std::lock_guard<std::mutex> lock(comm->mu);
  if (comm->aborted) return Report(function, cco::Aborted("the communicator was aborted: destroy it"));
  try {
    return Report(function, body(*comm));
  } catch (const std::bad_alloc&) {
    return Report(function, cco::OutOfMemory("host memory exhausted"));
  } catch (const std::exception& e) {
    return Report(function, cco::InternalError(e.what()));
  }
}

// Queries read what creation fixed; no lock needed.
template <class T, class Get> ccoResult_t Query(const char* function, const ccoComm* handle, T* out, Get get) {
  if (out == nullptr) return Report(function, InvalidArgument("output pointer is NULL"));
  std::shared_ptr<ccoComm> comm = cco::LookupComm(handle);
  if (!comm) return Report(function, NotLive());
  *out = get(*comm);
  return ccoSuccess;
}

}  // namespace

extern "C" {

int ccoGetAbiVersion(void) { return CCO_ABI_VERSION; }

ccoResult_t ccoGetVersion(int* major, int* minor, int* patch) {
  if (major == nullptr || minor == nullptr || patch == nullptr)
    return Report(__func__, InvalidArgument("an output pointer is NULL"));
  *major = CCO_VERSION_MAJOR;
  *minor = CCO_VERSION_MINOR;
  *patch = CCO_VERSION_PATCH;
  return ccoSuccess;
}

ccoResult_t ccoGetUniqueId(ccoUniqueId* id) {
  if (id == nullptr) return Report(__func__, InvalidArgument("id is NULL"));
  return Report(__func__, cco::StartRendezvousRoot(id));
}

ccoResult_t ccoCommCreate(ccoUniqueId id, int nRanks, int rank, size_t perRankVmmSize, ccoComm** comm) {
  if (comm == nullptr) return Report(__func__, InvalidArgument("comm (the output pointer) is NULL"));
  *comm = nullptr;
  try {
    std::shared_ptr<ccoComm> created;
    Status s = cco::CreateComm(id, nRanks, rank, perRankVmmSize, &created);
    if (!s.ok()) return Report(__func__, s.Prefixed(cco::Fmt("rank ", rank)));
    *comm = cco::RegisterComm(created);
    return ccoSuccess;
  } catch (const std::exception& e) {
    return Report(__func__, cco::InternalError(e.what()));
  }
}

ccoResult_t ccoCommDestroy(ccoComm* handle) {
  std::shared_ptr<ccoComm> comm = cco::UnregisterComm(handle);
  if (!comm) return Report(__func__, NotLive());
  std::lock_guard<std::mutex> lock(comm->mu);  // waits for a call in flight on another thread
  const cco::Status s = cco::DestroyComm(*comm);
  return s.ok() ? ccoSuccess : Report(__func__, s);  // the communicator is gone either way
}

ccoResult_t ccoCommAbort(ccoComm* handle) {
  std::shared_ptr<ccoComm> comm = cco::LookupComm(handle);
  if (!comm) return Report(__func__, NotLive());
  cco::AbortComm(*comm);  // no lock: it must wake a call that blocks holding it
  return ccoSuccess;
}

ccoResult_t ccoCommGetAsyncError(ccoComm* handle, ccoResult_t* asyncError) {
  if (asyncError == nullptr) return Report(__func__, InvalidArgument("asyncError is NULL"));
  std::shared_ptr<ccoComm> comm = cco::LookupComm(handle);
  if (!comm) return Report(__func__, NotLive());
  cco::Status s;
  {
    // Not under `mu` (a watchdog must not wait for a blocked call), but under the lock that
    // ccoCommDestroy takes to let go of the proxy.
    std::lock_guard<std::mutex> lock(comm->abortMu);
    if (comm->proxy) s = comm->proxy->AsyncError();
  }
  *asyncError = s.code();
  if (!s.ok()) cco::SetLastError(s.message());
  return ccoSuccess;
}

ccoResult_t ccoCommRank(const ccoComm* comm, int* rank) {
  return Query(__func__, comm, rank, [](const ccoComm& c) { return c.topo.rank; });
}
ccoResult_t ccoCommSize(const ccoComm* comm, int* nRanks) {
  return Query(__func__, comm, nRanks, [](const ccoComm& c) { return c.topo.nRanks; });
}
ccoResult_t ccoCommLsaRank(const ccoComm* comm, int* lsaRank) {
  return Query(__func__, comm, lsaRank, [](const ccoComm& c) { return c.topo.lsaRank; });
}
ccoResult_t ccoCommLsaSize(const ccoComm* comm, int* lsaSize) {
  return Query(__func__, comm, lsaSize, [](const ccoComm& c) { return c.topo.lsaSize; });
}
ccoResult_t ccoCommNode(const ccoComm* comm, int* node, int* nNodes) {
  if (nNodes == nullptr) return Report(__func__, InvalidArgument("nNodes is NULL"));
  ccoResult_t r = Query(__func__, comm, node, [](const ccoComm& c) { return c.topo.node; });
  if (r == ccoSuccess) r = Query(__func__, comm, nNodes, [](const ccoComm& c) { return c.topo.nNodes; });
  return r;
}
ccoResult_t ccoCommPlatform(const ccoComm* comm, ccoPlatform_t* platform) {
  return Query(__func__, comm, platform, [](const ccoComm& c) { return c.platform->kind(); });
}
ccoResult_t ccoCommDevice(const ccoComm* comm, int* device) {
  return Query(__func__, comm, device, [](const ccoComm& c) { return c.device; });
}

ccoResult_t ccoMemAlloc(ccoComm* comm, size_t size, void** ptr) {
  if (ptr == nullptr) return Report(__func__, InvalidArgument("ptr (the output pointer) is NULL"));
  *ptr = nullptr;
  return WithComm(__func__, comm, [&](ccoComm& c) { return cco::AllocMem(c, size, ptr); });
}

ccoResult_t ccoMemFree(ccoComm* comm, void* ptr) {
  if (ptr == nullptr) return Report(__func__, InvalidArgument("ptr is NULL"));
  return WithComm(__func__, comm, [&](ccoComm& c) { return cco::FreeMem(c, ptr); });
}

// A NULL output pointer of a collective call is this rank's failure inside the call's
// agreement, not a return before it: the peers learn of it at once and the communicator
// stays usable (a rank that left early left its peers waiting, then out of step).
ccoResult_t ccoWindowRegister(ccoComm* comm, void* ptr, size_t size, ccoWindow_t* win) {
  if (win != nullptr) *win = 0;
  return WithComm(__func__, comm, [&](ccoComm& c) { return cco::RegisterWindow(c, ptr, size, false, win); });
}

ccoResult_t ccoWindowAllocRegister(ccoComm* comm, size_t size, void** ptr, ccoWindow_t* win) {
  if (ptr != nullptr) *ptr = nullptr;
  if (win != nullptr) *win = 0;
  return WithComm(__func__, comm, [&](ccoComm& c) {
    // Allocation failures are local; ranks agree on them before registering.
    void* mem = nullptr;
    Status local =
        ptr == nullptr || win == nullptr ? InvalidArgument("an output pointer is NULL") : cco::AllocMem(c, size, &mem);
    Status s = cco::Agree(c, "ccoWindowAllocRegister (allocation)", local);
    if (!s.ok()) {
      if (mem != nullptr) cco::FreeMem(c, mem);
      return s;
    }
    s = cco::RegisterWindow(c, mem, size, /*ownsAllocation=*/true, win);
    if (!s.ok()) {
      cco::FreeMem(c, mem);
      return s;
    }
    *ptr = mem;
    return s;
  });
}

ccoResult_t ccoWindowDeregister(ccoComm* comm, ccoWindow_t win) {
  return WithComm(__func__, comm, [&](ccoComm& c) { return cco::DeregisterWindow(c, win); });
}

ccoResult_t ccoGetPeerPtr(ccoComm* comm, ccoWindow_t win, int lsaPeer, size_t offset, void** ptr) {
  if (ptr == nullptr) return Report(__func__, InvalidArgument("ptr (the output pointer) is NULL"));
  *ptr = nullptr;
  return WithComm(__func__, comm, [&](ccoComm& c) { return cco::PeerPointer(c, win, lsaPeer, offset, ptr); });
}

ccoResult_t ccoDevCommCreate(ccoComm* comm, const ccoDevCommRequirements* reqs, ccoDevComm* devComm) {
  return WithComm(__func__, comm, [&](ccoComm& c) { return cco::CreateDevComm(c, reqs, devComm); });
}

ccoResult_t ccoDevCommDestroy(ccoComm* comm, ccoDevComm* devComm) {
  return WithComm(__func__, comm, [&](ccoComm& c) { return cco::DestroyDevComm(c, devComm); });
}

ccoResult_t ccoDevCommTraceFlush(ccoComm* comm, const ccoDevComm* devComm, const char* path) {
  return WithComm(__func__, comm, [&](ccoComm& c) { return cco::TraceFlush(c, devComm, path); });
}

ccoResult_t ccoBarrierAll(ccoComm* comm) {
  return WithComm(__func__, comm, [&](ccoComm& c) { return c.bootstrap->Barrier("ccoBarrierAll"); });
}

ccoResult_t ccoAllGatherHost(ccoComm* comm, const void* mine, size_t bytes, void* all) {
  if (bytes > CCO_ALLGATHER_HOST_MAX_BYTES)
    return Report(__func__, InvalidArgument(cco::Fmt("bytes is ", bytes, ", more than CCO_ALLGATHER_HOST_MAX_BYTES (",
                                                     CCO_ALLGATHER_HOST_MAX_BYTES, ")")));
  if (bytes > 0 && (mine == nullptr || all == nullptr))
    return Report(__func__, InvalidArgument(mine == nullptr ? "mine is NULL" : "all is NULL"));
  static_assert(CCO_ALLGATHER_HOST_MAX_BYTES <= cco::kMaxContribution, "the bootstrap carries the contribution");
  char none = 0;  // an empty contribution still takes part, through valid pointers
  return WithComm(__func__, comm, [&](ccoComm& c) {
    return c.bootstrap->AllGather("ccoAllGatherHost", bytes ? mine : &none, bytes, bytes ? all : &none);
  });
}

}  // extern "C"
