// ccoDevCommCreate / ccoDevCommDestroy: the resource window and the device copy of
// ccoDevComm at its start, and the GDA rings, signal words and proxy attachment.
#include <stdio.h>

#include "comm/agree.h"
#include "common/env.h"
#include "comm/communicator.h"
#include "comm/devcomm_layout.h"
#include "proxy/gda_resources.h"
#include "proxy/proxy.h"

namespace cco {
namespace {

// Requirements this build cannot meet are errors, never silently ignored.
Status CheckSupported(const ccoDevCommRequirements& reqs) {
  if (reqs.sdmaQueueCount > 0)
    return Unsupported(Fmt("reqs->sdmaQueueCount=", reqs.sdmaQueueCount, ": this build has no SDMA transport yet"));
  return Status::Ok();
}

// The fields of ccoDevCommRequirements every rank must give alike.
struct RequirementCounts {
  int32_t values[7];
};
constexpr const char* kRequirementNames[7] = {"gdaConnectionType", "gdaContextCount", "gdaSignalCount",
                                              "gdaCounterCount",   "lsaBarrierCount", "sdmaQueueCount",
                                              "gdaBarrierCount"};

RequirementCounts CountsOf(const ccoDevCommRequirements& r) {
  return RequirementCounts{{r.gdaConnectionType, r.gdaContextCount, r.gdaSignalCount, r.gdaCounterCount,
                            r.lsaBarrierCount, r.sdmaQueueCount, r.gdaBarrierCount}};
}

Status SameCounts(const char* op, const RequirementCounts& zero, const RequirementCounts& theirs, int rank) {
  for (int i = 0; i < 7; ++i) {
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
  if (local.ok()) local = CheckSupported(*reqs);
  // Ranks agree on the requirements first, exactly (not only on the sizes they round to),
  // so all take the same path below and lay their resources out alike.
  const RequirementCounts mine = local.ok() ? CountsOf(*reqs) : RequirementCounts{};
  std::vector<RequirementCounts> all;
  CCO_RETURN_IF_ERROR(AgreeOn(c, op, local, mine, &all));
  for (size_t r = 1; r < all.size(); ++r) CCO_RETURN_IF_ERROR(SameCounts(op, all[0], all[r], static_cast<int>(r)));

  // GDA first: its peer count sizes the flush targets in the resource window.
  std::shared_ptr<GdaResources> gda;
  if (WantsGda(c, *reqs)) CCO_RETURN_IF_ERROR(CreateGdaResources(c, *reqs, &gda));
  const ResourceLayout layout = LayoutResources(*reqs, c.topo.nRanks, c.topo.lsaSize, gda ? gda->peerCount : 0);
  auto undoGda = [&] {
    if (gda) DestroyGdaResources(c, *gda);
  };
  void* base = nullptr;
  Status s = Agree(c, "ccoDevCommCreate (resource memory)", AllocMem(c, layout.bytes, &base));
  if (!s.ok()) {
    if (base != nullptr) FreeMem(c, base);
    undoGda();
    return s;
  }
  ccoWindow_t resource = 0;
  s = RegisterWindow(c, base, layout.bytes, /*ownsAllocation=*/true, &resource);
  if (!s.ok()) {
    FreeMem(c, base);
    undoGda();
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
  dc.gdaBarrierCount = static_cast<uint32_t>(reqs->gdaBarrierCount);
  dc.gdaShadowOffset = static_cast<uint32_t>(layout.shadows);
  dc.gdaFlushOffset = static_cast<uint32_t>(layout.flushTargets);
  dc.sdmaQueueCount = static_cast<uint32_t>(reqs->sdmaQueueCount);
  if (gda) {
    dc.gdaRingSlots = gda->ringHostDevice;
    dc.gdaRingHost = gda->ringHostDevice + cco_gda_slots_bytes(gda->rings(), gda->depth);
    dc.gdaRingDevice = gda->ringDevice;
    dc.gdaSignals = reinterpret_cast<uint64_t>(base) + layout.gdaSignals;
    dc.gdaCounters = reinterpret_cast<uint64_t>(base) + layout.gdaCounters;
    gda->signalOffset = dc.resourceOffset + layout.gdaSignals;
    gda->counterOffset = dc.resourceOffset + layout.gdaCounters;
    dc.gdaRingDepth = gda->depth;
    dc.gdaPeerCount = gda->peerCount;
    dc.gdaUniformNodes = gda->topo.uniform;
  }

  // Zero every counter and inbox before any peer can write one: the closing agreement
  // is a barrier, and peers' kernels only start after their create returned.
  s = c.platform->Memset(c.device, reinterpret_cast<uint64_t>(base), 0, layout.bytes);
  if (s.ok()) s = c.platform->CopyToDevice(c.device, dc.ptr, &dc, sizeof(dc));
  if (s.ok() && gda) s = c.proxy->Attach(gda);
  if (gda && env::Flag("CCO_GDA_TRACE"))
    fprintf(stderr, "cco rank %d: GDA rings %u x %u at 0x%llx, signals at 0x%llx, peers %d\n", c.topo.rank, gda->rings(),
            gda->depth, static_cast<unsigned long long>(dc.gdaRingSlots), static_cast<unsigned long long>(dc.gdaSignals),
            gda->peerCount);
  s = Agree(c, "ccoDevCommCreate (ready)", s);
  if (!s.ok()) {
    if (gda) c.proxy->Detach(gda.get());
    DeregisterWindow(c, resource);
    undoGda();
    return s;
  }
  c.devComms[dc.ptr] = DevCommRecord{resource, gda};
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
  const DevCommRecord record = it->second;
  c.devComms.erase(it);
  dc->magic = 0;  // a stale copy is recognisably dead
  if (record.gda) {
    // No proxy of the host may write this rank's signal words once they are freed: each
    // lets go of its own rings (its stream's writes done), then all agree, then each frees.
    c.proxy->Detach(record.gda.get());
    Status s = Agree(c, "ccoDevCommDestroy (GDA proxies idle)", Status::Ok());
    DestroyGdaResources(c, *record.gda);
    if (!s.ok()) return s.Prefixed(op);
  }
  return DeregisterWindow(c, record.resourceWindow).Prefixed(op);
}

}  // namespace cco
