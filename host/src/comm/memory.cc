// SPDX-License-Identifier: MIT
// ccoMemAlloc / ccoMemFree: this rank's own memory in its slice (local calls).
#include "comm/communicator.h"
#include "common/phase_trace.h"

namespace cco {

Status AllocMem(ccoComm& c, size_t size, void** ptr) {
  PhaseTrace trace(c.topo.rank, "ccoMemAlloc", size);
  Allocation a;
  CCO_RETURN_IF_ERROR(c.slots.Allocate(size, &a.offset, &a.size));
  Status s = c.platform->Create(c.device, a.size, &a.handle);
  trace.Mark("create");
  if (s.ok()) {
    s = c.platform->Map(c.device, c.MySlice() + a.offset, a.size, a.handle, 0);
    if (!s.ok()) c.platform->Destroy(c.device, a.handle);
    trace.Mark("map");
  }
  if (!s.ok()) {
    c.slots.Free(a.offset);
    return s.code() == ccoPlatformError ? Status(ccoOutOfMemory, s.message()) : s;
  }
  a.peers.assign(c.HostSize(), 0);
  a.ownsPeer.assign(c.HostSize(), false);
  c.allocations[a.offset] = a;
  *ptr = reinterpret_cast<void*>(c.MySlice() + a.offset);
  return Status::Ok();
}

Status FreeMem(ccoComm& c, void* ptr) {
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  const uint64_t slice = c.MySlice();
  if (address < slice || address >= slice + c.stride)
    return InvalidArgument(Fmt("ptr ", ptr, " is not in this communicator's memory"));
  auto it = c.allocations.find(address - slice);
  if (it == c.allocations.end())
    return InvalidArgument(Fmt("ptr ", ptr, " is not the start of a live ccoMemAlloc allocation (freed twice?)"));
  if (it->second.windows > 0)
    return InvalidUsage(
        Fmt("ptr ", ptr, " still has ", it->second.windows, " registered window(s): ccoWindowDeregister them first"));
  Allocation& a = it->second;
  // Peers' copies stay mapped only while a window covers them, so none remain here.
  CCO_RETURN_IF_ERROR(c.platform->Unmap(c.device, slice + a.offset, a.size));
  CCO_RETURN_IF_ERROR(c.platform->Destroy(c.device, a.handle));
  CCO_RETURN_IF_ERROR(c.slots.Free(a.offset));
  c.allocations.erase(it);
  return Status::Ok();
}

}  // namespace cco
