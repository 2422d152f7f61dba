// ccoDevCommCreate / ccoDevCommDestroy: the resource window and the device copy of
// ccoDevComm at its start.
#include "comm/agree.h"
#include "comm/communicator.h"
#include "comm/devcomm_layout.h"

namespace cco {
namespace {

// Requirements this build cannot meet are errors, never silently ignored.
Status CheckSupported(const ccoComm& c, const ccoDevCommRequirements& reqs) {
  const bool wantsGda = (reqs.gdaConnectionType == CCO_GDA_CONNECTION_FULL && c.topo.nRanks > 1) ||
                        ((reqs.gdaConnectionType == CCO_GDA_CONNECTION_CROSSNODE ||
                          reqs.gdaConnectionType == CCO_GDA_CONNECTION_RAIL) && c.topo.nNodes > 1);
  if (wantsGda)
    return Unsupported(Fmt("reqs->gdaConnectionType=", reqs.gdaConnectionType, " needs GDA connections to ",
                           c.topo.nNodes > 1 ? "other nodes" : "the other ranks",
                           ", and this build has no GDA transport yet; use CCO_GDA_CONNECTION_NONE for LSA"));
  if (reqs.sdmaQueueCount > 0)
    return Unsupported(Fmt("reqs->sdmaQueueCount=", reqs.sdmaQueueCount, ": this build has no SDMA transport yet"));
  return Status::Ok();
}

// The fields of ccoDevCommRequirements every rank must give alike.
struct RequirementCounts {
  int32_t values[6];
};
constexpr const char* kRequirementNames[6] = {"gdaConnectionType", "gdaContextCount", "gdaSignalCount",
                                              "gdaCounterCount",   "lsaBarrierCount", "sdmaQueueCount"};

RequirementCounts CountsOf(const ccoDevCommRequirements& r) {
  return RequirementCounts{{r.gdaConnectionType, r.gdaContextCount, r.gdaSignalCount, r.gdaCounterCount,
                            r.lsaBarrierCount, r.sdmaQueueCount}};
}

Status SameCounts(const char* op, const RequirementCounts& zero, const RequirementCounts& theirs, int rank) {
  for (int i = 0; i < 6; ++i) {
    if (theirs.values[i] != zero.values[i])
      return InvalidUsage(Fmt(op, ": ranks disagree on the requirements: rank ", rank, " has ", kRequirementNames[i], "=",
                              theirs.values[i], ", rank 0 has ", zero.values[i]));
  }
  return Status::Ok();
}

}  // namespace

Status CreateDevComm(ccoComm& c, const ccoDevCommRequirements* reqs, ccoDevComm* out) {
  const char* op = "ccoDevCommCreate";
  Status local = ValidateRequirements(reqs);
  if (local.ok()) local = CheckSupported(c, *reqs);
  // Ranks agree on the requirements first, exactly (not only on the sizes they round to),
  // so all take the same path below and lay their resources out alike.
  const RequirementCounts mine = local.ok() ? CountsOf(*reqs) : RequirementCounts{};
  std::vector<RequirementCounts> all;
  CCO_RETURN_IF_ERROR(AgreeOn(c, op, local, mine, &all));
  for (size_t r = 1; r < all.size(); ++r) CCO_RETURN_IF_ERROR(SameCounts(op, all[0], all[r], static_cast<int>(r)));

  const ResourceLayout layout = LayoutResources(*reqs, c.topo.lsaSize);
  void* base = nullptr;
  Status s = AllocMem(c, layout.bytes, &base);
  CCO_RETURN_IF_ERROR(Agree(c, "ccoDevCommCreate (resource memory)", s));
  ccoWindow_t resource = 0;
  s = RegisterWindow(c, base, layout.bytes, /*ownsAllocation=*/true, &resource);
  if (!s.ok()) {
    FreeMem(c, base);
    return s.Prefixed("the resource window");
  }

  ccoDevComm dc = {};
  dc.magic = CCO_DEV_COMM_MAGIC;
  dc.abiVersion = CCO_ABI_VERSION;
  dc.size = sizeof(ccoDevComm);
  dc.ptr = reinterpret_cast<uint64_t>(base) + layout.devComm;
  dc.rank = c.topo.rank;
  dc.worldSize = c.topo.nRanks;
  dc.lsaRank = c.topo.lsaRank;
  dc.lsaSize = c.topo.lsaSize;
  dc.node = c.topo.node;
  dc.nNodes = c.topo.nNodes;
  dc.teamWorld = c.topo.world;
  dc.teamLsa = c.topo.lsa;
  dc.teamRail = c.topo.rail;
  dc.lsaFlatBase = c.LsaFlatBase();
  dc.lsaStride = c.stride;
  dc.resourceWindow = resource;
  dc.resourceOffset = reinterpret_cast<uint64_t>(base) - c.MySlice();
  dc.resourceSize = layout.bytes;
  dc.abortFlag = c.abortDevice;
  dc.lsaBarrierCount = static_cast<uint32_t>(reqs->lsaBarrierCount);
  dc.lsaBarrierEpochOffset = static_cast<uint32_t>(layout.barrierEpochs);
  dc.lsaBarrierInboxOffset = static_cast<uint32_t>(layout.barrierInboxes);
  dc.gdaConnectionType = static_cast<uint32_t>(reqs->gdaConnectionType);
  dc.gdaContextCount = static_cast<uint32_t>(reqs->gdaContextCount);
  dc.gdaSignalCount = static_cast<uint32_t>(reqs->gdaSignalCount);
  dc.gdaCounterCount = static_cast<uint32_t>(reqs->gdaCounterCount);
  dc.gdaSignalOffset = static_cast<uint32_t>(layout.signals);
  dc.gdaShadowOffset = static_cast<uint32_t>(layout.shadows);
  dc.gdaCounterOffset = static_cast<uint32_t>(layout.counters);
  dc.sdmaQueueCount = static_cast<uint32_t>(reqs->sdmaQueueCount);

  // Zero every counter and inbox before any peer can write one: the closing agreement
  // is a barrier, and peers' kernels only start after their create returned.
  s = c.platform->Memset(c.device, reinterpret_cast<uint64_t>(base), 0, layout.bytes);
  if (s.ok()) s = c.platform->CopyToDevice(c.device, dc.ptr, &dc, sizeof(dc));
  s = Agree(c, "ccoDevCommCreate (ready)", s);
  if (!s.ok()) {
    DeregisterWindow(c, resource);
    return s;
  }
  c.devComms[dc.ptr] = DevCommRecord{resource};
  *out = dc;
  return Status::Ok();
}

Status DestroyDevComm(ccoComm& c, ccoDevComm* dc) {
  const char* op = "ccoDevCommDestroy";
  Status local = dc == nullptr ? InvalidArgument("devComm is NULL") : Status::Ok();
  auto it = local.ok() ? c.devComms.find(dc->ptr) : c.devComms.end();
  if (local.ok() && (dc->magic != CCO_DEV_COMM_MAGIC || it == c.devComms.end()))
    local = InvalidArgument("devComm is not a live device communicator of this communicator (destroyed twice?)");
  CCO_RETURN_IF_ERROR(Agree(c, op, local));
  const ccoWindow_t resource = it->second.resourceWindow;
  c.devComms.erase(it);
  dc->magic = 0;  // a stale copy is recognisably dead
  return DeregisterWindow(c, resource).Prefixed(op);
}

}  // namespace cco
