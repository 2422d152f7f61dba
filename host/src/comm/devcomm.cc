// ccoDevCommCreate / ccoDevCommDestroy: the resource window and the device copy of
// ccoDevComm at its start, and the GDA rings, signal words and proxy attachment.
#include <stdio.h>

#include "comm/agree.h"
#include "common/env.h"
#include "comm/communicator.h"
#include "comm/devcomm_layout.h"
#include "net/select.h"
#include "proxy/gda_resources.h"
#include "proxy/proxy.h"
#include "proxy/sdma_resources.h"

namespace cco {
namespace {

// Requirements this process cannot meet are errors, never silently ignored.
Status CheckSupported(const ccoDevCommRequirements& reqs) {
  NetChoice net = NetChoice::kAuto;
  CCO_RETURN_IF_ERROR(NetChoiceFromEnv(&net));
  if (reqs.sdmaQueueCount > 0 && !SdmaEnabled())
    return InvalidUsage(Fmt("reqs->sdmaQueueCount=", reqs.sdmaQueueCount,
                            " but SDMA is off in this process: set CCO_ENABLE_SDMA=1 (or MORI_ENABLE_SDMA=1)"));
  return Status::Ok();
}

// SDMA queues this device communicator gets: none unless SDMA is enabled here.
int SdmaQueuesInUse(const ccoDevCommRequirements& reqs) { return SdmaEnabled() ? SdmaQueues(reqs) : 0; }

// The fields of ccoDevCommRequirements every rank must give alike, and what each process's
// environment makes of them.
constexpr int kCounts = 9;
struct RequirementCounts {
  int32_t values[kCounts];
};
constexpr const char* kRequirementNames[kCounts] = {
    "gdaConnectionType", "gdaContextCount", "gdaSignalCount",  "gdaCounterCount",
    "lsaBarrierCount",   "sdmaQueueCount",  "gdaBarrierCount", "SDMA queues in use (CCO_ENABLE_SDMA)",
    "the network backend (CCO_NET)"};

RequirementCounts CountsOf(const ccoDevCommRequirements& r) {
  NetChoice net = NetChoice::kAuto;
  (void)NetChoiceFromEnv(&net);  // malformed: refused in CheckSupported, before this is agreed
  return RequirementCounts{{r.gdaConnectionType, r.gdaContextCount, r.gdaSignalCount, r.gdaCounterCount,
                            r.lsaBarrierCount, r.sdmaQueueCount, r.gdaBarrierCount, SdmaQueuesInUse(r),
                            static_cast<int32_t>(net)}};
}

Status SameCounts(const char* op, const RequirementCounts& zero, const RequirementCounts& theirs, int rank) {
  for (int i = 0; i < kCounts; ++i) {
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
  std::shared_ptr<SdmaResources> sdma;
  const int sdmaQueues = SdmaQueuesInUse(*reqs);
  if (sdmaQueues > 0) {
    Status made = CreateSdmaResources(c, *reqs, &sdma);
    if (!made.ok()) {
      if (gda) DestroyGdaResources(c, *gda);
      return made;
    }
  }
  const ResourceLayout layout =
      LayoutResources(*reqs, c.topo.nRanks, c.topo.lsaSize, gda ? gda->peerCount : 0, sdmaQueues);
  auto undoGda = [&] {
    if (gda) DestroyGdaResources(c, *gda);
    if (sdma) DestroySdmaResources(c, *sdma);
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
  dc.sdmaQueueCount = static_cast<uint32_t>(sdmaQueues);
  if (sdma) {
    dc.sdmaRingSlots = sdma->rings.slotsAddress();
    dc.sdmaRingHost = sdma->rings.hostWordsAddress();
    dc.sdmaRingDevice = sdma->rings.device;
    dc.sdmaSignals = reinterpret_cast<uint64_t>(base) + layout.sdmaSignals;
    dc.sdmaLocal = reinterpret_cast<uint64_t>(base) + layout.sdmaLocal;
    dc.sdmaRingDepth = sdma->rings.depth;
    dc.sdmaShadowOffset = static_cast<uint32_t>(layout.sdmaShadows);
    sdma->signalOffset = dc.resourceOffset + layout.sdmaSignals;
    sdma->localOffset = dc.resourceOffset + layout.sdmaLocal;
  }
  if (gda) {
    dc.gdaRingSlots = gda->rings.slotsAddress();
    dc.gdaRingHost = gda->rings.hostWordsAddress();
    dc.gdaRingDevice = gda->rings.device;
    dc.gdaSignals = reinterpret_cast<uint64_t>(base) + layout.gdaSignals;
    dc.gdaCounters = reinterpret_cast<uint64_t>(base) + layout.gdaCounters;
    gda->signalOffset = dc.resourceOffset + layout.gdaSignals;
    gda->signalWindowOffset = layout.gdaSignals;
    gda->counterOffset = dc.resourceOffset + layout.gdaCounters;
    dc.gdaRingDepth = gda->rings.depth;
    dc.gdaPeerCount = gda->peerCount;
    dc.gdaUniformNodes = gda->topo.uniform;
  }

  // Zero every counter and inbox before any peer can write one: the closing agreement
  // is a barrier, and peers' kernels only start after their create returned.
  s = c.platform->Memset(c.device, reinterpret_cast<uint64_t>(base), 0, layout.bytes);
  if (s.ok()) s = c.platform->CopyToDevice(c.device, dc.ptr, &dc, sizeof(dc));
  if (gda) gda->id = c.windows[resource].id;  // alike on every rank: names it on the wire
  if (s.ok() && gda) s = c.proxy->Attach(gda);
  if (s.ok() && sdma) s = c.proxy->Attach(sdma);
  if (gda && env::Flag("CCO_GDA_TRACE"))
    fprintf(stderr, "cco rank %d: GDA rings %u x %u at 0x%llx, signals at 0x%llx, peers %d\n", c.topo.rank, gda->rings.count,
            gda->rings.depth, static_cast<unsigned long long>(dc.gdaRingSlots), static_cast<unsigned long long>(dc.gdaSignals),
            gda->peerCount);
  s = Agree(c, "ccoDevCommCreate (ready)", s);
  if (!s.ok()) {
    if (gda) c.proxy->Detach(gda.get());
    if (sdma) c.proxy->Detach(sdma.get());
    DeregisterWindow(c, resource);
    undoGda();
    return s;
  }
  c.devComms[dc.ptr] = DevCommRecord{resource, gda, sdma};
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
  if (record.gda || record.sdma) {
    // No proxy of the host may write this rank's signal words once they are freed: each
    // lets go of its own rings (its streams' writes done), then all agree, then each frees.
    if (record.gda) c.proxy->Detach(record.gda.get());
    if (record.sdma) c.proxy->Detach(record.sdma.get());
    Status s = Agree(c, "ccoDevCommDestroy (proxies idle)", Status::Ok());
    if (record.gda) DestroyGdaResources(c, *record.gda);
    if (record.sdma) DestroySdmaResources(c, *record.sdma);
    if (!s.ok()) return s.Prefixed(op);
  }
  return DeregisterWindow(c, record.resourceWindow).Prefixed(op);
}

}  // namespace cco
