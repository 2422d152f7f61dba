// Windows: registration maps every LSA peer's copy of an allocation into the peer's
// slice of this rank's flat range, and publishes a device descriptor (the handle).
#include <unistd.h>

#include "bootstrap/wire.h"
#include "comm/communicator.h"

namespace cco {
namespace {

// What each rank contributes to a (de)registration: its local verdict and the region.
struct Region {
  uint64_t offset;
  uint64_t size;
};

std::string EncodeProposal(const Status& s, const Region& r) {
  return WireWriter().Put(static_cast<int32_t>(s.code())).PutString(s.message()).Put(r).bytes();
}

// Ranks must propose the same region; a rank whose arguments were bad fails everyone.
Status CheckProposals(const std::string& op, const std::vector<std::string>& all, int self, Region* agreed) {
  for (size_t r = 0; r < all.size(); ++r) {
    WireReader reader(all[r]);
    int32_t code = 0;
    std::string message;
    Region region{};
    if (!reader.Get(&code).ok() || !reader.GetString(&message).ok() || !reader.Get(&region).ok())
      return RemoteError(Fmt(op, ": rank ", r, " sent a malformed proposal"));
    if (code != ccoSuccess) {
      if (static_cast<int>(r) == self) return Status(static_cast<ccoResult_t>(code), message);
      return RemoteError(Fmt(op, ": rank ", r, " rejected its arguments: ", message));
    }
    if (r == 0) {
      *agreed = region;
    } else if (region.offset != agreed->offset || region.size != agreed->size) {
      return InvalidUsage(Fmt(op, ": ranks disagree: rank ", r, " has size ", region.size, " at offset ", region.offset,
                              ", rank 0 has size ", agreed->size, " at offset ", agreed->offset,
                              " (every rank must allocate and register in the same order, with the same sizes)"));
    }
  }
  return Status::Ok();
}

// Imports and maps each LSA peer's copy of allocation `a` (first window over it).
Status MapPeers(ccoComm& c, Allocation& a) {
  int fd = -1;
  CCO_RETURN_IF_ERROR(c.platform->Export(c.device, a.handle, &fd));
  std::vector<int> fds;
  Status s = c.mesh->AllExchange(fd, ++c.fdTag, &fds);
  close(fd);
  CCO_RETURN_IF_ERROR(s.Prefixed("exchanging memory handles on this host"));
  int mapped = 0;
  for (int p = 0; p < c.topo.lsaSize && s.ok(); ++p) {
    if (p == c.topo.lsaRank) continue;
    s = c.platform->Import(c.device, fds[p], a.size, &a.peers[p]);
    fds[p] = -1;  // Import owns it now
    if (s.ok()) {
      s = c.platform->Map(c.device, c.SliceBase(p) + a.offset, a.size, a.peers[p]);
      if (!s.ok()) c.platform->Destroy(c.device, a.peers[p]);
    }
    if (s.ok()) mapped = p + 1;
  }
  for (int& f : fds)
    if (f >= 0) close(f);
  if (!s.ok()) {  // undo what was mapped
    for (int p = 0; p < mapped; ++p) {
      if (p == c.topo.lsaRank) continue;
      c.platform->Unmap(c.device, c.SliceBase(p) + a.offset, a.size);
      c.platform->Destroy(c.device, a.peers[p]);
    }
    return s.Prefixed(Fmt("mapping the copies of this host's ranks"));
  }
  a.peersMapped = true;
  return Status::Ok();
}

void UnmapPeers(ccoComm& c, Allocation& a) {
  for (int p = 0; p < c.topo.lsaSize; ++p) {
    if (p == c.topo.lsaRank) continue;
    c.platform->Unmap(c.device, c.SliceBase(p) + a.offset, a.size);
    c.platform->Destroy(c.device, a.peers[p]);
    a.peers[p] = 0;
  }
  a.peersMapped = false;
}

// The allocation that holds [offset, offset + size) of this rank's slice.
Status Locate(ccoComm& c, const void* ptr, size_t size, Allocation** found, Region* region) {
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  if (ptr == nullptr) return InvalidArgument("ptr is NULL");
  if (size == 0) return InvalidArgument("size is 0");
  if (address < c.MySlice() || address >= c.MySlice() + c.stride)
    return InvalidArgument(Fmt("ptr ", ptr, " is not memory of this communicator (use ccoMemAlloc)"));
  const size_t offset = address - c.MySlice();
  size_t start = 0, slot = 0;
  if (!c.slots.Find(offset, &start, &slot))
    return InvalidArgument(Fmt("ptr ", ptr, " is not inside a live ccoMemAlloc allocation"));
  if (size > slot - (offset - start))
    return InvalidArgument(Fmt("size ", size, " runs past the end of its allocation (", slot - (offset - start),
                               " bytes left from ptr)"));
  *found = &c.allocations.at(start);
  *region = Region{offset, size};
  return Status::Ok();
}

}  // namespace

Status RegisterWindow(ccoComm& c, void* ptr, size_t size, bool ownsAllocation, ccoWindow_t* win) {
  const char* op = "ccoWindowRegister";
  Allocation* a = nullptr;
  Region region{};
  Status local = Locate(c, ptr, size, &a, &region);
  std::vector<std::string> all;
  CCO_RETURN_IF_ERROR(c.bootstrap->Exchange(op, EncodeProposal(local, region), &all));
  Region agreed{};
  CCO_RETURN_IF_ERROR(CheckProposals(op, all, c.topo.rank, &agreed));

  // Every rank proposed the same region of a live allocation: map, publish, agree.
  const bool first = !a->peersMapped;
  Status s = first ? MapPeers(c, *a) : Status::Ok();
  ccoWindow_t handle = 0;
  if (s.ok()) {
    ccoWindowDevice desc = {};
    desc.magic = CCO_WINDOW_MAGIC;
    desc.abiVersion = CCO_ABI_VERSION;
    desc.flatBase = c.flatBase;
    desc.stride = c.stride;
    desc.offset = region.offset;
    desc.size = region.size;
    desc.lsaRank = c.topo.lsaRank;
    desc.lsaSize = c.topo.lsaSize;
    desc.rank = c.topo.rank;
    desc.lsaWorldBase = c.topo.lsaWorldBase;
    s = c.descriptors->Add(desc, &handle);
  }
  s = Agree(c, "ccoWindowRegister (mapping)", s);
  if (!s.ok()) {
    if (handle != 0) c.descriptors->Remove(handle);
    if (first && a->peersMapped) UnmapPeers(c, *a);
    return s;
  }
  ++a->windows;
  c.windows[handle] = WindowRecord{handle, region.offset, region.size, a->offset, ownsAllocation};
  *win = handle;
  return Status::Ok();
}

Status DeregisterWindow(ccoComm& c, ccoWindow_t win) {
  const char* op = "ccoWindowDeregister";
  auto it = c.windows.find(win);
  Status local = it == c.windows.end()
                     ? InvalidArgument(Fmt("window 0x", std::hex, win, " is not a live window of this communicator"))
                     : Status::Ok();
  Region region = local.ok() ? Region{it->second.offset, it->second.size} : Region{};
  std::vector<std::string> all;
  CCO_RETURN_IF_ERROR(c.bootstrap->Exchange(op, EncodeProposal(local, region), &all));
  Region agreed{};
  CCO_RETURN_IF_ERROR(CheckProposals(op, all, c.topo.rank, &agreed));

  const WindowRecord record = it->second;
  c.windows.erase(it);
  Allocation& a = c.allocations.at(record.allocOffset);
  Status s = c.descriptors->Remove(record.handle);
  // Peers' copies stay mapped while another window covers the allocation.
  if (--a.windows == 0 && a.peersMapped) UnmapPeers(c, a);
  if (record.ownsAllocation && a.windows == 0) {
    Status freed = FreeMem(c, reinterpret_cast<void*>(c.MySlice() + record.allocOffset));
    if (s.ok()) s = freed;
  }
  return s;
}

Status PeerPointer(ccoComm& c, ccoWindow_t win, int lsaPeer, size_t offset, void** ptr) {
  auto it = c.windows.find(win);
  if (it == c.windows.end()) return InvalidArgument(Fmt("window 0x", std::hex, win, " is not a live window of this communicator"));
  if (lsaPeer < 0 || lsaPeer >= c.topo.lsaSize)
    return InvalidArgument(Fmt("lsaPeer=", lsaPeer, " is not in [0, lsaSize=", c.topo.lsaSize, ")"));
  if (offset >= it->second.size)
    return InvalidArgument(Fmt("offset ", offset, " is past the window's ", it->second.size, " bytes"));
  *ptr = reinterpret_cast<void*>(c.SliceBase(lsaPeer) + it->second.offset + offset);
  return Status::Ok();
}

}  // namespace cco
