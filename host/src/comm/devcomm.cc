// SPDX-License-Identifier: MIT
// ccoDevCommCreate / ccoDevCommDestroy: the resources (a carve of the communicator's pool,
// comm/resource_pool.h, or a window of their own), the device copy of ccoDevComm (apart from
// them, in this rank's own descriptor memory: peers write into the resources, and nothing a
// peer writes may become a pointer a kernel follows), and the GDA / SDMA rings, signal words
// and proxy attachment. Creation runs in three
// steps: plan (each rank alone), agree (one round), build (what needs the peers or the proxy).
#include <stdio.h>
#include <string.h>

#include <algorithm>

#include "comm/agree.h"
#include "comm/communicator.h"
#include "comm/devcomm_layout.h"
#include "comm/devcomm_trace.h"
#include "comm/gda_setup.h"
#include "comm/resource_pool.h"
#include "comm/sdma_setup.h"
#include "common/env.h"
#include "common/phase_trace.h"
#include "net/select.h"
#include "proxy/host_bell.h"
#include "proxy/proxy.h"

namespace cco {
namespace {

// The direct path's bounds (ccoDevComm.gdaDirectMaxBytes, gdaDirectGroupMaxBytes), each
// from its requirement, or where that is -1 its variable; gdaDirectMaxBytes 0 turns the path
// off. On by default where a device's stores and system-scope atomics reach its LSA peers'
// memory coherently: the cuda platform (NVLink or PCIe P2P) and the cpu one (shared memory).
// Off by default on hip, where remote atomics on coarse-grained memory over xGMI are not
// promised. Read once per creation. Ranks need not agree: each sender decides alone, a target
// reads both kinds of words.
//
// The group default is where a copy by the caller's own stores still clearly beats the
// proxy's copy engine, whose put+flush costs about the same whatever the size. Larger group
// copies still win on latency but hold the caller's multiprocessor for longer than the proxy
// would. A lone thread's bound is lower: it has 1/32 of a warp's loads in flight.
struct DirectBounds {
  uint32_t single = 0;  // gdaDirectMaxBytes
  uint32_t group = 0;   // gdaDirectGroupMaxBytes
};
constexpr int64_t kDirectMaxBytesDefault = 4096;
constexpr int64_t kDirectGroupMaxBytesDefault = 65536;
Status DirectBound(const ccoComm& c, int requested, const char* name, int64_t fallback, uint32_t* bytes) {
  if (requested >= 0) {  // ReadRequirements bounded it
    *bytes = static_cast<uint32_t>(requested);
    return Status::Ok();
  }
  if (strcmp(c.platform->name(), "hip") == 0) fallback = 0;
  const int64_t v = env::IsSet(name) ? env::Int(name, -1) : fallback;
  if (v < 0 || v > kGdaDirectMaxBytesLimit)
    return InvalidUsage(Fmt(name, "=\"", env::Get(name), "\": a number of bytes from 0 to ", kGdaDirectMaxBytesLimit));
  *bytes = static_cast<uint32_t>(v);
  return Status::Ok();
}

// Requirements this process cannot meet are errors, never silently ignored.
// Also reads the direct path's bounds, once.
Status CheckSupported(const ccoComm& c, const ccoDevCommRequirements& reqs, DirectBounds* direct) {
  NetChoice net = NetChoice::kAuto;
  CCO_RETURN_IF_ERROR(NetChoiceFromEnv(&net));
  CCO_RETURN_IF_ERROR(
      DirectBound(c, reqs.gdaDirectMaxBytes, "CCO_GDA_DIRECT_MAX_BYTES", kDirectMaxBytesDefault, &direct->single));
  CCO_RETURN_IF_ERROR(DirectBound(c, reqs.gdaDirectGroupMaxBytes, "CCO_GDA_DIRECT_GROUP_MAX_BYTES",
                                  kDirectGroupMaxBytesDefault, &direct->group));
  if (reqs.sdmaQueueCount < 0 || reqs.sdmaQueueCount > kMaxSdmaQueues)
    return InvalidArgument(Fmt("reqs->sdmaQueueCount=", reqs.sdmaQueueCount, ": 0 (the default, ",
                               CCO_SDMA_QUEUES_DEFAULT, ") or 1 to ", kMaxSdmaQueues));
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
constexpr const char* kRequirementNames[kCounts] = {"gdaConnectionType",
                                                    "gdaContextCount",
                                                    "gdaSignalCount",
                                                    "gdaCounterCount",
                                                    "lsaBarrierCount",
                                                    "sdmaQueueCount",
                                                    "gdaBarrierCount",
                                                    "SDMA queues in use (CCO_ENABLE_SDMA)",
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
      return InvalidUsage(Fmt(op, ": ranks disagree on the requirements: rank ", rank, " has ", kRequirementNames[i],
                              "=", theirs.values[i], ", rank 0 has ", zero.values[i]));
  }
  return Status::Ok();
}

// Where a device communicator's resources live: a carve of the pool, or (too large for
// what the pool has left) an allocation and window of its own.
struct Placement {
  bool pooled = false;
  uint64_t base = 0;          // this rank's copy
  ccoWindow_t window = 0;     // the window holding them
  uint64_t windowOffset = 0;  // where they start inside that window
};

// An allocation and window of its own, zeroed before any peer can map it.
Status PlaceInOwnWindow(ccoComm& c, size_t bytes, Placement* place) {
  void* base = nullptr;
  Status local = AllocMem(c, bytes, &base);
  if (local.ok()) local = c.platform->Memset(c.device, reinterpret_cast<uint64_t>(base), 0, bytes);
  Status s = Agree(c, "ccoDevCommCreate (resource memory)", local);
  if (s.ok()) s = RegisterWindow(c, base, bytes, /*ownsAllocation=*/true, &place->window, /*internal=*/true);
  if (!s.ok()) {
    if (base != nullptr) FreeMem(c, base);
    return s.Prefixed("the resource window");
  }
  place->base = reinterpret_cast<uint64_t>(base);
  place->windowOffset = 0;
  return Status::Ok();
}

// Undoes a placement of a device communicator that was not created. A carve goes back to the
// pool only once zeroed (peers may have written into it); one that cannot be zeroed stays
// taken, and the next creations see the pools differ (SameCarve).
void ReleasePlacement(ccoComm& c, const Placement& place) {
  if (place.pooled) {
    const size_t offset = place.base - c.MySlice();
    if (ZeroResources(c, offset).ok()) ReleaseResources(c, offset);
  } else if (place.window != 0) {
    DeregisterWindow(c, place.window, /*internal=*/true);
  }
}

// Gives back the slot of a device copy that was not handed out (zeroed on the way).
void ReleaseCopy(ccoComm& c, uint64_t* copy) {
  if (*copy != 0) c.devCommCopies->Remove(*copy);
  *copy = 0;
}

// copy: the device copy's address (a slot of ccoComm::devCommCopies).
// direct: the direct path's bounds (DirectBound), which only a GDA device communicator carries.
ccoDevComm FillDevComm(const ccoComm& c, const ccoDevCommRequirements& reqs, const ResourceLayout& layout,
                       const Placement& place, uint64_t copy, int sdmaQueues, const GdaResources* gda,
                       SdmaResources* sdma, DirectBounds direct, uint64_t trace) {
  ccoDevComm dc = {};
  dc.magic = CCO_DEV_COMM_MAGIC;
  dc.abiVersion = CCO_ABI_VERSION;
  dc.size = sizeof(ccoDevComm);
  dc.ptr = copy;
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
  dc.resourceWindow = place.window;
  dc.resourceOffset = place.base - c.MySlice();
  dc.resourceSize = layout.bytes;
  dc.abortFlag = c.abortDevice;
  // Every device wait's bound unless its call gives one: the communicator's, as its host calls'.
  dc.waitTimeoutMs = static_cast<uint32_t>(std::min<int64_t>(c.timeoutMs, UINT32_MAX));
  dc.lsaBarrierCount = static_cast<uint32_t>(reqs.lsaBarrierCount);
  dc.lsaBarrierEpochOffset = static_cast<uint32_t>(layout.barrierEpochs);
  dc.lsaBarrierInboxOffset = static_cast<uint32_t>(layout.barrierInboxes);
  dc.gdaConnectionType = static_cast<uint32_t>(reqs.gdaConnectionType);
  dc.gdaContextCount = static_cast<uint32_t>(reqs.gdaContextCount);
  dc.gdaSignalCount = static_cast<uint32_t>(reqs.gdaSignalCount);
  dc.gdaCounterCount = static_cast<uint32_t>(reqs.gdaCounterCount);
  dc.gdaBarrierCount = static_cast<uint32_t>(reqs.gdaBarrierCount);
  dc.gdaShadowOffset = static_cast<uint32_t>(layout.shadows);
  dc.gdaFlushOffset = static_cast<uint32_t>(layout.flushTargets);
  dc.sdmaQueueCount = static_cast<uint32_t>(sdmaQueues);
  dc.trace = trace;
  // The cpu platform's waits sleep on this rank's bell (proxy/host_bell.h); GPUs have none.
  dc.hostBell = c.platform->kind() == ccoPlatformCpu ? BellAddress(c.MySlice(), c.pool.statusOffset) : 0;
  if (sdma) {
    dc.sdmaRingSlots = sdma->rings.slotsAddress();
    dc.sdmaRingHost = sdma->rings.hostWordsAddress();
    dc.sdmaRingDevice = sdma->rings.device;
    dc.sdmaSignals = place.base + layout.sdmaSignals;
    dc.sdmaLocal = place.base + layout.sdmaLocal;
    dc.sdmaRingDepth = sdma->rings.depth;
    dc.sdmaShadowOffset = static_cast<uint32_t>(layout.sdmaShadows);
  }
  if (gda) {
    dc.gdaRingSlots = gda->rings.slotsAddress();
    dc.gdaRingHost = gda->rings.hostWordsAddress();
    dc.gdaRingDevice = gda->rings.device;
    dc.gdaSignals = place.base + layout.gdaSignals;
    dc.gdaCounters = place.base + layout.gdaCounters;
    dc.gdaRingDepth = gda->rings.depth;
    dc.gdaPeerCount = gda->peerCount;
    dc.gdaUniformNodes = gda->topo.uniform;
    dc.gdaDirectMaxBytes = direct.single;
    dc.gdaDirectGroupMaxBytes = direct.group;
  }
  return dc;
}

// What the proxy needs to find the resources: offsets in the slice and in their window.
void LocateForProxy(const ccoComm& c, const ResourceLayout& layout, const Placement& place, uint32_t id,
                    GdaResources* gda, SdmaResources* sdma) {
  const uint64_t inSlice = place.base - c.MySlice();
  if (sdma) {
    sdma->signalOffset = inSlice + layout.sdmaSignals;
    sdma->localOffset = inSlice + layout.sdmaLocal;
  }
  if (gda) {
    gda->id = id;
    gda->signalWindow = c.windows.Find(place.window)->id;
    gda->signalOffset = inSlice + layout.gdaSignals;
    gda->signalWindowOffset = place.windowOffset + layout.gdaSignals;
    gda->counterOffset = inSlice + layout.gdaCounters;
  }
}

// What each rank proposes in the one agreement round: its requirements and the carve it
// got (kOwnWindow: the pool had no room).
constexpr uint64_t kOwnWindow = ~uint64_t{0};
constexpr uint64_t kNoHostWords = ~uint64_t{0};
struct Proposal {
  RequirementCounts counts;
  uint32_t id;  // this rank's count of ccoDevCommCreate calls (rank 0's names the new one)
  uint64_t carve;
  uint64_t bytes;
  uint64_t hostCarve;  // its carve of the host words (comm/host_words.h), kNoHostWords: none
};
static_assert(sizeof(Proposal) == sizeof(RequirementCounts) + 4 + 24, "Proposal has no padding on the wire");

// Whether every rank got the same carve of its pool. They do while every carve given back was
// zeroed everywhere; if one rank could not zero one (ReleasePlacement keeps it then), the
// pools differ and device communicators get windows of their own instead.
bool SameCarve(const std::vector<Proposal>& all) {
  for (const Proposal& p : all)
    if (p.carve == kOwnWindow || p.carve != all[0].carve || p.bytes != all[0].bytes) return false;
  return true;
}

// Whether every rank carved the same host words: only then does any use them (a peer's proxy
// writes at this rank's offset in this rank's words).
bool SameHostCarve(const std::vector<Proposal>& all) {
  for (const Proposal& p : all)
    if (p.hostCarve == kNoHostWords || p.hostCarve != all[0].hostCarve) return false;
  return true;
}

// Bytes of host signal words a device communicator with `reqs` carves: one word per (signal
// id, LSA sender), where CCO_GDA_HOST_SIGNALS asks for them (opt-in: on an H100 they speed a
// signal alone up and slow a put's down, docs/gda.md), it has GDA peers and LSA peers, and its
// direct path is off (0: none). With the direct path on, the signals host words speed up (alone, on an
// idle ring) go direct anyway, and every wait would poll host memory besides its device words.
size_t HostSignalBytes(const ccoComm& c, const ccoDevCommRequirements& reqs, int gdaPeers, DirectBounds direct) {
  if (gdaPeers == 0 || c.topo.lsaSize <= 1 || direct.single != 0 || !env::Flag("CCO_GDA_HOST_SIGNALS", false)) return 0;
  return static_cast<size_t>(reqs.gdaSignalCount + reqs.gdaBarrierCount) * c.topo.lsaSize * sizeof(uint64_t);
}

// What one rank makes of a ccoDevCommCreate call before it talks to the others.
struct DevCommPlan {
  ccoDevCommRequirements reqs;  // the caller's, completed where its cco.h was older
  DirectBounds direct;
  ResourceLayout layout;
  Placement place;
  std::shared_ptr<DevCommTrace> trace;  // CCO_TRACE: this rank's own, not agreed
  uint64_t copy = 0;                    // the device copy of ccoDevComm (0: none taken yet)
  int sdmaQueues = 0;
  int gdaPeers = 0;     // peers GDA connects (0: no GDA)
  uint32_t serial = 0;  // ccoDevComm.hostSerial: tells a stale copy from a live one
  // A pooled device communicator without rings is complete before the round: its ccoDevComm
  // is uploaded (its words read zero already: the pool's promise), and the round then tells
  // every rank whether all got that far.
  bool early = false;
  ccoDevComm dc = {};       // the early one's
  bool hostCarved = false;  // its host signal words: carved at hostCarve (comm/host_words.h)
  size_t hostCarve = 0;
  Proposal mine;
};

// Gives the host words' carve back (never used: it is still zero).
void ReleaseHostCarve(ccoComm& c, DevCommPlan* plan) {
  if (plan->hostCarved) (void)ReleaseHostWords(c, plan->hostCarve);
  plan->hostCarved = false;
}

// Plan, local: reads the requirements, lays the resources out and carves them from the pool.
// The layout needs only the requirements and the topology, so each rank carves before the
// round where all agree on the requirements (exactly, not only on the sizes they round to)
// and on the carve. Returns this rank's verdict for that round.
Status PlanDevComm(ccoComm& c, const ccoDevCommRequirements* userReqs, const ccoDevComm* out, DevCommPlan* plan) {
  ++c.devCommCalls;                  // every rank counts every call; the round makes rank 0's count everyone's
  plan->serial = ++c.devCommSerial;  // this rank's own count
  memset(&plan->mine, 0, sizeof(plan->mine));
  plan->mine.id = c.devCommCalls;
  plan->mine.carve = kOwnWindow;
  Status local = out == nullptr ? InvalidArgument("devComm (the output pointer) is NULL")
                                : ReadRequirements(userReqs, &plan->reqs);
  if (local.ok()) local = CheckSupported(c, plan->reqs, &plan->direct);
  if (local.ok()) local = DevCommTrace::Create(c.platform, c.device, &plan->trace);
  if (!local.ok()) return local;
  const ccoDevCommRequirements& reqs = plan->reqs;
  plan->sdmaQueues = SdmaQueuesInUse(reqs);
  plan->gdaPeers = GdaPeerCount(c, reqs);
  plan->layout = LayoutResources(reqs, c.topo.nRanks, c.topo.lsaSize, plan->gdaPeers, plan->sdmaQueues);
  Placement& place = plan->place;
  size_t carve = 0;
  place.pooled = CarveResources(c, plan->layout.bytes, &carve);
  if (place.pooled) {
    place.base = c.MySlice() + carve;
    place.window = c.pool.window;
    place.windowOffset = carve - c.pool.offset;
  }
  plan->mine.counts = CountsOf(reqs);
  plan->mine.carve = place.pooled ? carve : kOwnWindow;
  plan->mine.bytes = plan->layout.bytes;
  plan->hostCarved = CarveHostWords(c, HostSignalBytes(c, reqs, plan->gdaPeers, plan->direct), &plan->hostCarve);
  plan->mine.hostCarve = plan->hostCarved ? plan->hostCarve : kNoHostWords;
  const bool proxied = plan->gdaPeers > 0 || plan->sdmaQueues > 0;  // rings and a proxy, set up after the round
  plan->early = place.pooled && !proxied;
  const ccoDevComm none = {};
  CCO_RETURN_IF_ERROR(c.devCommCopies->Add(&none, &plan->copy).Prefixed("the device copy of ccoDevComm"));
  if (!plan->early) return Status::Ok();
  plan->dc = FillDevComm(c, reqs, plan->layout, place, plan->copy, 0, nullptr, nullptr, DirectBounds(),
                         plan->trace ? plan->trace->buffer() : 0);
  plan->dc.hostSerial = plan->serial;
  return c.devCommCopies->Write(plan->copy, &plan->dc);
}

// Agree, collective: the one round. Fails on every rank where one failed to plan or the
// requirements differ; else *all holds every rank's proposal.
Status AgreeOnPlan(ccoComm& c, const char* op, const Status& local, const DevCommPlan& plan,
                   std::vector<Proposal>* all) {
  CCO_RETURN_IF_ERROR(AgreeOn(c, op, local, plan.mine, all));
  for (size_t r = 1; r < all->size(); ++r)
    CCO_RETURN_IF_ERROR(SameCounts(op, (*all)[0].counts, (*all)[r].counts, static_cast<int>(r)));
  return Status::Ok();
}

// Build, collective: the GDA and SDMA resources and, where the pool had no room, a window of
// their own; then the device copy of ccoDevComm and the proxy's attachment, which every rank
// finishes before any goes on.
Status BuildDevComm(ccoComm& c, DevCommPlan& plan, uint32_t id, PhaseTrace& trace, ccoDevComm* out) {
  const ccoDevCommRequirements& reqs = plan.reqs;
  Placement& place = plan.place;
  std::shared_ptr<GdaResources> gda;
  std::shared_ptr<SdmaResources> sdma;
  auto undo = [&] {  // (the failure that came first is the one to report)
    if (gda) (void)DestroyGdaResources(c, *gda);
    if (sdma) (void)DestroySdmaResources(c, *sdma);
    ReleasePlacement(c, place);
    ReleaseCopy(c, &plan.copy);
    ReleaseHostCarve(c, &plan);
  };
  Status s;
  if (plan.gdaPeers > 0) s = CreateGdaResources(c, reqs, &gda);
  if (s.ok() && plan.sdmaQueues > 0) s = CreateSdmaResources(c, reqs, &sdma);
  if (s.ok() && !place.pooled) s = PlaceInOwnWindow(c, plan.layout.bytes, &place);
  if (!s.ok()) {
    undo();
    return s;
  }
  trace.Mark("resources");

  ccoDevComm dc = FillDevComm(c, reqs, plan.layout, place, plan.copy, plan.sdmaQueues, gda.get(), sdma.get(),
                              plan.direct, plan.trace ? plan.trace->buffer() : 0);
  dc.hostSerial = plan.serial;
  if (gda && plan.hostCarved) {
    dc.gdaHostSignals = c.hostWords.DeviceAt(c.topo.hostRank, plan.hostCarve);
    gda->hostSignals = true;
    gda->hostSignalOffset = plan.hostCarve;
  }
  if (plan.trace && gda) gda->rings.trace = plan.trace->ForRings(gda->rings.count);  // before the proxy sees them
  if (plan.trace && sdma) sdma->rings.trace = plan.trace->ForRings(sdma->rings.count);
  LocateForProxy(c, plan.layout, place, id, gda.get(), sdma.get());
  s = c.devCommCopies->Write(plan.copy, &dc);
  // Peers' proxies may act for this rank as soon as their create returns: every proxy holds
  // its rings, and every rank its ccoDevComm, before any rank goes on.
  if (s.ok() && gda) s = c.proxy->Attach(gda);
  if (s.ok() && sdma) s = c.proxy->Attach(sdma);
  if (gda && env::Flag("CCO_GDA_TRACE"))
    fprintf(stderr, "cco rank %d: GDA rings %u x %u at 0x%llx, signals at 0x%llx, peers %d\n", c.topo.rank,
            gda->rings.count, gda->rings.depth, static_cast<unsigned long long>(dc.gdaRingSlots),
            static_cast<unsigned long long>(dc.gdaSignals), gda->peerCount);
  s = Agree(c, "ccoDevCommCreate (ready)", s);
  trace.Mark("attach");
  if (!s.ok()) {
    if (gda) c.proxy->Detach(gda.get());
    if (sdma) c.proxy->Detach(sdma.get());
    undo();
    return s;
  }
  c.devComms[dc.ptr] = DevCommRecord{place.window, place.pooled, place.base - c.MySlice(), plan.serial,   gda,
                                     sdma,         plan.trace,   plan.hostCarved,          plan.hostCarve};
  *out = dc;
  return Status::Ok();
}

}  // namespace

void WriteTraceAtEnd(ccoComm& c, const DevCommRecord& record) {
  // The trace is each rank's own: a file it cannot write is said, and the collective call
  // goes on as on every other rank.
  const Status s = FlushDevCommTrace(c, record, "", /*always=*/false);
  if (!s.ok()) fprintf(stderr, "cco rank %d: the device-side trace: %s\n", c.topo.rank, s.message().c_str());
}

Status CreateDevComm(ccoComm& c, const ccoDevCommRequirements* userReqs, ccoDevComm* out) {
  // Its waits end when a rank of the host ends: the proxy watches from the first one on.
  CCO_RETURN_IF_ERROR(c.proxy->Watch().Prefixed("ccoDevCommCreate"));
  const char* op = "ccoDevCommCreate";
  PhaseTrace trace(c.topo.rank, op);
  DevCommPlan plan;
  const Status local = PlanDevComm(c, userReqs, out, &plan);
  trace.Mark("carve+upload");
  std::vector<Proposal> all;
  Status s = AgreeOnPlan(c, op, local, plan, &all);
  trace.Mark("agree");
  if (!s.ok()) {
    ReleasePlacement(c, plan.place);
    ReleaseCopy(c, &plan.copy);
    ReleaseHostCarve(c, &plan);
    return s;
  }
  if (!SameHostCarve(all)) ReleaseHostCarve(c, &plan);
  // GDA names a device communicator on the wire by this number: alike on every rank even if
  // one rank's count fell behind (a call refused before it reached the communicator).
  const uint32_t id = all[0].id;
  c.devCommCalls = id;
  if (plan.place.pooled && !SameCarve(all)) {
    ReleasePlacement(c, plan.place);
    plan.place = Placement{};
  } else if (plan.early) {
    c.devComms[plan.dc.ptr] = DevCommRecord{
        plan.place.window, true, plan.place.base - c.MySlice(), plan.serial, nullptr, nullptr, plan.trace};
    *out = plan.dc;
    return Status::Ok();
  }
  return BuildDevComm(c, plan, id, trace, out);
}

Status DestroyDevComm(ccoComm& c, ccoDevComm* dc) {
  const char* op = "ccoDevCommDestroy";
  Status local = dc == nullptr ? InvalidArgument("devComm is NULL") : Status::Ok();
  auto it = local.ok() ? c.devComms.find(dc->ptr) : c.devComms.end();
  if (local.ok() && (dc->magic != CCO_DEV_COMM_MAGIC || it == c.devComms.end() || it->second.serial != dc->hostSerial))
    local = InvalidArgument("devComm is not a live device communicator of this communicator (destroyed twice?)");
  // Every rank must name the same device communicator: where its resources are (alike on
  // every rank) says which.
  const uint64_t mine = local.ok() ? it->second.resourceOffset : 0;
  Difference<uint64_t> d;
  CCO_RETURN_IF_ERROR(AgreeOnSame(c, op, local, mine, &d));
  if (d.rank >= 0)
    return InvalidUsage(Fmt(op, ": ranks name different device communicators: rank ", d.rank, "'s resources are at ",
                            d.theirs, ", rank 0's at ", d.zero, " (destroy them in the same order on every rank)"));
  const DevCommRecord record = it->second;
  c.devComms.erase(it);
  dc->magic = 0;  // a stale copy is recognisably dead, on the host and (zeroed) on the device
  c.devCommCopies->Remove(dc->ptr);
  WriteTraceAtEnd(c, record);
  if (record.gda || record.sdma) {
    // No proxy of the host may write this rank's signal words once they are freed: each
    // lets go of its own rings (its streams' writes done), then all agree, then each frees.
    if (record.gda) c.proxy->Detach(record.gda.get());
    if (record.sdma) c.proxy->Detach(record.sdma.get());
    Status s = Agree(c, "ccoDevCommDestroy (proxies idle)", Status::Ok());
    Failures freed;
    if (record.gda) freed.Note(DestroyGdaResources(c, *record.gda));
    if (record.sdma) freed.Note(DestroySdmaResources(c, *record.sdma));
    // No proxy writes its host signal words either: zeroed, they go back on every rank.
    if (record.hostWords) freed.Note(ReleaseHostWords(c, record.hostWordsOffset));
    if (s.ok()) s = freed.Summary("freeing its proxy resources");
    if (!s.ok()) return s.Prefixed(op);
  }
  if (!record.pooled) return DeregisterWindow(c, record.resourceWindow, /*internal=*/true).Prefixed(op);
  // Every rank has destroyed it (the agreement above), so no peer writes these words any
  // more. Zeroed, they go back to the pool, on every rank or (one could not zero its copy)
  // on none, so that the pools stay alike.
  Status zeroed = ZeroResources(c, record.resourceOffset);
  Status s = Agree(c, "ccoDevCommDestroy (resources zeroed)", zeroed);
  if (s.ok()) s = ReleaseResources(c, record.resourceOffset);
  return s.Prefixed(op);
}

}  // namespace cco
