// SPDX-License-Identifier: MIT
// Windows: registration maps every host peer's copy of the window's granules into the peer's
// slice of this rank's flat range (the LSA team's slices are consecutive in it; peers of the
// host's other virtual nodes are there for the GDA proxy), and publishes a device descriptor.
//
// The ranks agree first on the window and on the allocation behind it (offset and size of
// both), so ranks whose allocation layouts differ fail together instead of mapping each
// other's memory at different places. Peers in another process hand over their memory as
// descriptors (the fd mesh); peers in this process publish their handle for direct mapping
// (memory/local_handles.h).
#include <unistd.h>

#include <algorithm>

#include "comm/agree.h"
#include "comm/communicator.h"
#include "comm/net_setup.h"
#include "common/phase_trace.h"
#include "memory/local_handles.h"
#include "net/verbs_backend.h"

namespace cco {
namespace {

// What each rank contributes to a (de)registration: its local verdict, the window, and
// the allocation it lies in.
struct Region {
  uint64_t offset;
  uint64_t size;
  uint64_t allocOffset;
  uint64_t allocSize;
};

// Ranks must propose the same region of the same allocation: where one does not, says how.
Status CheckProposals(const std::string& op, const Difference<Region>& d) {
  if (d.rank < 0) return Status::Ok();
  const Region& zero = d.zero;
  const Region& region = d.theirs;
  if (region.offset != zero.offset || region.size != zero.size) {
    return InvalidUsage(Fmt(op, ": ranks disagree: rank ", d.rank, " has size ", region.size, " at offset ",
                            region.offset, ", rank 0 has size ", zero.size, " at offset ", zero.offset,
                            " (every rank must allocate and register in the same order, with the same sizes)"));
  }
  return InvalidUsage(Fmt(op, ": ranks disagree on the allocation behind the window: rank ", d.rank, "'s is ",
                          region.allocSize, " bytes at offset ", region.allocOffset, ", rank 0's ", zero.allocSize,
                          " bytes at offset ", zero.allocOffset,
                          " (every rank must make the same ccoMemAlloc calls, in the same order)"));
}

local_handles::Key HandleKey(const ccoComm& c, uint64_t registration, int hostIndex) {
  return local_handles::Key{c.idTag, registration, c.topo.hostMembers[hostIndex]};
}

// The granules of allocation `a` that peers map for window `r`; the whole allocation where
// the platform maps a handle only from its first byte.
Allocation::Piece SpanOf(const ccoComm& c, const Allocation& a, const Region& r) {
  if (!c.platform->MapsAtOffset(c.device)) return {0, a.size};
  const size_t g = c.granularity;
  const size_t begin = (r.offset - a.offset) / g * g;
  const size_t end = std::min(a.size, (r.offset - a.offset + r.size + g - 1) / g * g);
  return {begin, end};
}

// The parts of `span` that no piece covers yet.
std::vector<Allocation::Piece> Uncovered(const std::vector<Allocation::Piece>& pieces, Allocation::Piece span) {
  std::vector<Allocation::Piece> sorted = pieces, out;
  std::sort(sorted.begin(), sorted.end(),
            [](const Allocation::Piece& x, const Allocation::Piece& y) { return x.begin < y.begin; });
  size_t at = span.begin;
  for (const auto& p : sorted) {
    if (p.end <= at || p.begin >= span.end) continue;
    if (p.begin > at) out.push_back({at, p.begin});
    at = std::max(at, p.end);
  }
  if (at < span.end) out.push_back({at, span.end});
  return out;
}

Status UnmapPieces(ccoComm& c, Allocation& a, const std::vector<Allocation::Piece>& pieces) {
  Failures failures;
  for (int p = 0; p < c.HostSize(); ++p) {
    if (p == c.topo.hostRank) continue;
    for (const auto& piece : pieces)
      failures.Note(c.platform->Unmap(c.device, c.HostSlice(p) + a.offset + piece.begin, piece.end - piece.begin));
  }
  return failures.Summary("unmapping this host's ranks' copies");
}

// Maps `pieces` of every peer's copy; all or nothing.
Status MapPieces(ccoComm& c, Allocation& a, const std::vector<Allocation::Piece>& pieces) {
  std::vector<std::pair<int, Allocation::Piece>> done;
  Status s;
  for (int p = 0; p < c.HostSize() && s.ok(); ++p) {
    if (p == c.topo.hostRank) continue;
    for (const auto& piece : pieces) {
      s = c.platform->Map(c.device, c.HostSlice(p) + a.offset + piece.begin, piece.end - piece.begin, a.peers[p],
                          piece.begin);
      if (!s.ok()) break;
      done.emplace_back(p, piece);
    }
  }
  if (!s.ok()) {
    for (const auto& d : done)
      c.platform->Unmap(c.device, c.HostSlice(d.first) + a.offset + d.second.begin, d.second.end - d.second.begin);
    return s.Prefixed("mapping the copies of this host's ranks");
  }
  a.pieces.insert(a.pieces.end(), pieces.begin(), pieces.end());
  return Status::Ok();
}

Status DropPeerHandles(ccoComm& c, Allocation& a) {
  Failures failures;
  for (int p = 0; p < c.HostSize(); ++p) {
    if (p != c.topo.hostRank && a.ownsPeer[p] && a.peers[p] != 0)
      failures.Note(c.platform->Destroy(c.device, a.peers[p]));
    a.peers[p] = 0;
    a.ownsPeer[p] = false;
  }
  return failures.Summary("letting go of this host's ranks' memory");
}

// Each LSA peer's physical memory behind allocation `a` (its first window): descriptors
// from peers in other processes, published handles from peers in this one.
Status ObtainPeers(ccoComm& c, Allocation& a, uint64_t registration, PhaseTrace& trace) {
  a.peers.assign(c.HostSize(), 0);
  a.ownsPeer.assign(c.HostSize(), false);
  int fd = -1;
  const Status exported = c.platform->Export(c.device, a.handle, &fd);
  trace.Mark("export");
  // Each peer's descriptor is imported as it arrives (Import closes it). A rank whose export
  // failed takes part without one, so that its peers fail now, not at the timeout.
  Status s = c.mesh->AllExchange(exported.ok() ? fd : -1, registration, [&](int p, int theirs) {
    Status imported = c.platform->Import(c.device, theirs, a.size, &a.peers[p]);
    a.ownsPeer[p] = imported.ok();
    return imported.Prefixed(Fmt("rank ", c.topo.hostMembers[p], "'s memory"));
  });
  if (fd >= 0) close(fd);
  s = (exported.ok() ? s : exported).Prefixed("exchanging memory handles on this host");
  trace.Mark("exchange+import");
  for (int p = 0; p < c.HostSize() && s.ok(); ++p) {
    if (p == c.topo.hostRank || !c.InThisProcess(p)) continue;
    size_t size = 0;
    MemHandle theirs = 0;
    if (!local_handles::Find(HandleKey(c, registration, p), &theirs, &size))
      s = RemoteError(Fmt("rank ", c.topo.hostMembers[p], " shares this process but published no memory"));
    if (s.ok() && size != a.size)
      s = RemoteError(Fmt("rank ", c.topo.hostMembers[p], "'s allocation is ", size, " bytes, this rank's ", a.size));
    if (s.ok()) {
      bool owned = false;
      s = c.platform->Reference(c.device, theirs, &a.peers[p], &owned);
      a.ownsPeer[p] = s.ok() && owned;
    }
  }
  if (!s.ok()) (void)DropPeerHandles(c, a);  // the failure that came first is the one to report
  return s;
}

// Where a window may start: kernels (CCO's Triton kernels among them) move 16 bytes at a time
// through its pointers, which a misaligned window would turn into a fault on the device.
constexpr uint64_t kWindowAlign = 16;

// The allocation that holds [offset, offset + size) of this rank's slice.
Status Locate(ccoComm& c, const void* ptr, size_t size, Allocation** found, Region* region) {
  const uint64_t address = reinterpret_cast<uint64_t>(ptr);
  if (ptr == nullptr) return InvalidArgument("ptr is NULL");
  if (size == 0) return InvalidArgument("size is 0");
  if (address % kWindowAlign != 0)
    return InvalidArgument(Fmt("ptr ", ptr, " is not ", kWindowAlign,
                               "-byte aligned (a window's first byte must be: "
                               "device code moves 16 bytes at a time through window pointers)"));
  if (address < c.MySlice() || address >= c.MySlice() + c.stride)
    return InvalidArgument(Fmt("ptr ", ptr, " is not memory of this communicator (use ccoMemAlloc)"));
  const size_t offset = address - c.MySlice();
  size_t start = 0, slot = 0;
  if (!c.slots.Find(offset, &start, &slot))
    return InvalidArgument(Fmt("ptr ", ptr, " is not inside a live ccoMemAlloc allocation"));
  if (size > slot - (offset - start))
    return InvalidArgument(
        Fmt("size ", size, " runs past the end of its allocation (", slot - (offset - start), " bytes left from ptr)"));
  *found = &c.allocations.at(start);
  *region = Region{offset, size, start, (*found)->size};
  return Status::Ok();
}

}  // namespace

Status ReleasePeers(ccoComm& c, Allocation& a) {
  if (!a.peersMapped) return Status::Ok();
  Failures failures;
  failures.Note(UnmapPieces(c, a, a.pieces));
  a.pieces.clear();
  failures.Note(DropPeerHandles(c, a));
  a.peersMapped = false;
  return failures.Summary("releasing this host's ranks' copies");
}

Status RegisterWindow(ccoComm& c, void* ptr, size_t size, bool ownsAllocation, ccoWindow_t* win, bool internal) {
  const char* op = "ccoWindowRegister";
  PhaseTrace trace(c.topo.rank, op, size);
  const uint64_t registration = ++c.registrations;  // every rank counts every call
  Allocation* a = nullptr;
  Region region{};
  Status local =
      win == nullptr ? InvalidArgument("win (the output pointer) is NULL") : Locate(c, ptr, size, &a, &region);
  const bool first = local.ok() && !a->peersMapped;
  const local_handles::Key mine = HandleKey(c, registration, c.topo.hostRank);
  if (first) local_handles::Publish(mine, a->handle, a->size);
  Difference<Region> difference;
  Status s = AgreeOnSame(c, op, local, region, &difference);
  if (s.ok()) s = CheckProposals(op, difference);
  if (!s.ok()) {
    local_handles::Withdraw(mine);
    return s;
  }
  trace.Mark("agree");

  // Every rank proposed the same region of the same allocation: map, publish, agree.
  if (first) s = ObtainPeers(c, *a, registration, trace);
  const size_t piecesBefore = first ? 0 : a->pieces.size();
  if (s.ok()) {
    s = MapPieces(c, *a, Uncovered(a->pieces, SpanOf(c, *a, region)));
    if (s.ok()) a->peersMapped = true;
    else if (first) (void)DropPeerHandles(c, *a);
  }
  trace.Mark("map");
  ccoWindow_t handle = 0;
  if (s.ok()) {
    ccoWindowDevice desc = {};
    desc.magic = CCO_WINDOW_MAGIC;
    desc.abiVersion = CCO_ABI_VERSION;
    desc.flatBase = c.LsaFlatBase();
    desc.stride = c.stride;
    desc.offset = region.offset;
    desc.size = region.size;
    desc.lsaRank = c.topo.lsaRank;
    desc.lsaSize = c.topo.lsaSize;
    desc.rank = c.topo.rank;
    desc.lsaWorldBase = c.topo.lsaWorldBase;
    desc.id = static_cast<uint32_t>(registration);
    // The communicator's own windows get a dead descriptor (zeros): every device call refuses
    // the handle as it refuses a deregistered window's, so a kernel cannot name them either.
    const ccoWindowDevice dead = {};
    s = c.descriptors->Add(internal ? dead : desc, &handle);
  }
  trace.Mark("descriptor");
  s = Agree(c, "ccoWindowRegister (mapping)", s);
  trace.Mark("agree mapped");
  local_handles::Withdraw(mine);  // every in-process peer has mapped it (or failed) by now
  // Collective, after the mapping agreed: the network backend's keys (verbs), if it needs them.
  if (s.ok())
    s = ExchangeWindowKeys(c, static_cast<uint32_t>(registration), c.MySlice() + region.offset, region.size, internal);
  if (!s.ok()) {
    if (handle != 0) c.descriptors->Remove(handle);
    if (first) {  // (the failure that came first is the one to report)
      (void)ReleasePeers(c, *a);
    } else {  // only what this call mapped
      (void)UnmapPieces(c, *a, std::vector<Allocation::Piece>(a->pieces.begin() + piecesBefore, a->pieces.end()));
      a->pieces.resize(piecesBefore);
    }
    return s;
  }
  ++a->windows;
  c.windows.Add(WindowRecord{handle, static_cast<uint32_t>(registration), region.offset, region.size, a->offset,
                             ownsAllocation, internal});
  *win = handle;
  return Status::Ok();
}

Status DeregisterWindow(ccoComm& c, ccoWindow_t win, bool internal) {
  const char* op = "ccoWindowDeregister";
  const WindowRecord* found = c.windows.Find(win);
  Status local = found == nullptr
                     ? InvalidArgument(Fmt("window 0x", std::hex, win, " is not a live window of this communicator"))
                     : Status::Ok();
  if (local.ok() && found->internal && !internal)
    local = InvalidArgument(
        Fmt("window 0x", std::hex, win,
            " holds device communicators' resources: ccoDevCommDestroy (or ccoCommDestroy) releases it"));
  Region region{};
  if (local.ok()) {
    const Allocation& a = c.allocations.at(found->allocOffset);
    region = Region{found->offset, found->size, a.offset, a.size};
  }
  Difference<Region> difference;
  CCO_RETURN_IF_ERROR(AgreeOnSame(c, op, local, region, &difference));
  CCO_RETURN_IF_ERROR(CheckProposals(op, difference));

  const WindowRecord record = *found;
  c.windows.Remove(win);
  c.proxy->Quiesce();  // no copy the proxy queued still reads or writes the window's memory
  if (c.verbs) c.verbs->DeregisterWindow(record.id);
  Allocation& a = c.allocations.at(record.allocOffset);
  Status s = c.descriptors->Remove(record.handle);
  // Peers' copies stay mapped while another window covers the allocation.
  if (--a.windows == 0) {
    Status released = ReleasePeers(c, a);
    if (s.ok()) s = released;
  }
  if (record.ownsAllocation && a.windows == 0) {
    Status freed = FreeMem(c, reinterpret_cast<void*>(c.MySlice() + record.allocOffset));
    if (s.ok()) s = freed;
  }
  return s;
}

Status PeerPointer(ccoComm& c, ccoWindow_t win, int lsaPeer, size_t offset, void** ptr) {
  const WindowRecord* w = c.windows.Find(win);
  if (w == nullptr)
    return InvalidArgument(Fmt("window 0x", std::hex, win, " is not a live window of this communicator"));
  if (lsaPeer < 0 || lsaPeer >= c.topo.lsaSize)
    return InvalidArgument(Fmt("lsaPeer=", lsaPeer, " is not in [0, lsaSize=", c.topo.lsaSize, ")"));
  if (offset >= w->size) return InvalidArgument(Fmt("offset ", offset, " is past the window's ", w->size, " bytes"));
  *ptr = reinterpret_cast<void*>(c.LsaSlice(lsaPeer) + w->offset + offset);
  return Status::Ok();
}

}  // namespace cco
