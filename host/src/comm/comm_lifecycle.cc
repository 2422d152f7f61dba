// SPDX-License-Identifier: MIT
// Creation, agreement, abort and destruction of a communicator.
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <unistd.h>

#include "bootstrap/messages.h"
#include "bootstrap/root.h"
#include "comm/agree.h"
#include "comm/communicator.h"
#include "comm/gda_setup.h"
#include "comm/host_words.h"
#include "comm/rank_exchange.h"
#include "comm/resource_pool.h"
#include "comm/sdma_setup.h"
#include "common/env.h"
#include "common/fd_table.h"
#include "common/hash.h"
#include "common/phase_trace.h"
#include "topology/cpu_affinity.h"

namespace cco {
namespace {

// This rank's host identity: the machine's, or with CCO_TEST_RANKS_PER_HOST=k (a test knob)
// the machine's combined with rank / k, so that ranks running as threads of one process
// make hosts of k ranks each, as a cluster's hosts would (CCO_HOSTID, the same for every
// thread of a process, cannot).
uint64_t RankHostHash(int rank) {
  const int64_t perHost = env::Int("CCO_TEST_RANKS_PER_HOST", 0);
  const uint64_t machine = HostHash();
  if (perHost <= 0) return machine;
  const uint64_t parts[2] = {machine, static_cast<uint64_t>(rank / perHost)};
  return Fnv1a(parts, sizeof(parts));
}

RankInfo LocalRankInfo(const ccoComm& c, int rank, size_t perRankVmmSize, const DeviceInfo& dev) {
  RankInfo info;
  memset(&info, 0, sizeof(info));
  info.hostHash = RankHostHash(rank);
  info.processToken = ProcessToken();
  info.pidNamespace = PidNamespace();
  info.perRankVmmSize = perRankVmmSize;
  info.granularity = dev.granularity;
  info.totalMemory = dev.totalMemory;
  info.pid = getpid();
  info.platform = c.platform->kind();
  info.device = c.device;
  strncpy(info.busId, dev.pciBusId.c_str(), sizeof(info.busId) - 1);
  strncpy(info.meshName, c.mesh->name().c_str(), sizeof(info.meshName) - 1);
  return info;
}

// Pins the calling thread near its GPU before any thread is started (GPU platforms only).
Status BindCpus(ccoComm& c) {
  if (c.platform->kind() == ccoPlatformCpu) return Status::Ok();
  int count = 0;
  CCO_RETURN_IF_ERROR(c.platform->DeviceCount(&count));
  std::vector<std::string> buses(count);
  // Bus ids only: a query that needs a context would create one on every GPU.
  for (int d = 0; d < count; ++d) CCO_RETURN_IF_ERROR(c.platform->BusId(d, &buses[d]));
  const std::string mine = buses[c.device];
  std::string description;
  Status s = ApplyCpuAffinity(mine, buses, &description);
  // Placement is an optimisation: a sysfs the kernel filled oddly must not stop the job.
  if (!s.ok()) fprintf(stderr, "cco: warning: CPU affinity left unchanged: %s\n", s.message().c_str());
  return Status::Ok();
}

// Descriptors a step of ccoCommCreate may open beside the ones counted (a connection to the
// root, the resource pool's memory, an epoll set). Small: ranks as threads of one process
// each ask for it, and the requests add up (common/fd_table.h).
constexpr int kFdSlack = 16;

// The largest slice a rank may ask for: 64 TiB, half of what a 47-bit user address space
// holds, so that rounding and lsaSize x stride never overflow.
constexpr uint64_t kMaxPerRankVmm = uint64_t{1} << 46;

// Checks that every rank asked for the same slice size, then resolves it.
Status ResolveStride(const std::vector<RankSummary>& infos, size_t* stride, size_t* granularity) {
  size_t g = 0;
  for (size_t r = 0; r < infos.size(); ++r) {
    if (infos[r].perRankVmmSize != infos[0].perRankVmmSize)
      return InvalidUsage(Fmt("ccoCommCreate: rank ", r, " asked for perRankVmmSize=", infos[r].perRankVmmSize,
                              " but rank 0 for ", infos[0].perRankVmmSize));
    g = std::max<size_t>(g, infos[r].granularity);
  }
  size_t want = infos[0].perRankVmmSize;
  if (want > kMaxPerRankVmm)
    return InvalidArgument(Fmt("ccoCommCreate: perRankVmmSize=", want, " is more than any address space holds (limit ",
                               kMaxPerRankVmm, ")"));
  if (want == 0) {  // the default: the smallest device memory among the ranks
    want = infos[0].totalMemory;
    for (const auto& i : infos) want = std::min<size_t>(want, i.totalMemory);
    want = std::min<size_t>(want, kMaxPerRankVmm);
  }
  *granularity = g;
  // The resource pool sits at the slice's start, beside the heap the caller asked for.
  *stride = (want + g - 1) / g * g + ResourcePoolBytes(g);
  return Status::Ok();
}

// Each rank's liveness word (proxy/liveness.h) to the host peers in other processes, and
// theirs mapped here; collective over the host (a rank whose word could not be made takes
// part without one, so that its peers fail at once).
constexpr uint64_t kLivenessTag = ~uint64_t{0};  // (windows' exchanges count from 1)
Status ExchangeLiveness(ccoComm& c) {
  const Status own = OwnLiveness::Create(&c.liveness);
  c.peerLiveness.clear();
  c.peerLiveness.resize(c.HostSize());
  const Status s = c.mesh->AllExchange(own.ok() ? c.liveness->fd() : -1, kLivenessTag, [&](int member, int fd) {
    return PeerLiveness::Map(fd, &c.peerLiveness[member])
        .Prefixed(Fmt("rank ", c.topo.hostMembers[member], "'s liveness word"));
  });
  return own.ok() ? s : own;
}

// What the proxy uses of the communicator (proxy/proxy_context.h): once the flat range is
// reserved and the host mesh connected, none of it changes but the windows, which the proxy
// asks their table about.
ProxyContext ProxyContextOf(const ccoComm& c) {
  ProxyContext x;
  x.platform = c.platform;
  x.device = c.device;
  x.timeoutMs = c.timeoutMs;
  x.topo = c.topo;
  for (int h = 0; h < c.HostSize(); ++h) x.hostSlices.push_back(c.HostSlice(h));
  x.stride = c.stride;
  x.peerSockets = c.mesh->PeerSockets();
  x.liveness = c.liveness.get();
  for (const auto& peer : c.peerLiveness) x.peerLiveness.push_back(peer.get());
  x.windows = &c.windows;
  x.abortWord = c.abortHost;
  x.aborted = &c.aborted;
  x.statusOffset = c.pool.statusOffset;
  x.statusWords = true;  // the pool exists before the proxy (CreateComm)
  x.bells = c.platform->kind() == ccoPlatformCpu;
  if (c.hostWords.usable)
    for (int h = 0; h < c.HostSize(); ++h) {
      x.hostWordsCpu.push_back(static_cast<char*>(c.hostWords.byHost[h]->host));
      x.hostWordsDevice.push_back(c.hostWords.byHost[h]->device);
    }
  return x;
}

}  // namespace

Status Agree(ccoComm& c, const std::string& op, const Status& local) {
  Verdict v;
  CCO_RETURN_IF_ERROR(c.bootstrap->Agree(op, local, std::string(), &v));
  if (!local.ok()) return local;
  if (v.failedRank >= 0) return PeerFailed(op, v.failedRank, v.failure);
  return Status::Ok();
}

Status CreateComm(const ccoUniqueId& id, int nRanks, int rank, size_t perRankVmmSize, std::shared_ptr<ccoComm>* out) {
  if (nRanks < 1 || nRanks > kMaxRanks)
    return InvalidArgument(Fmt("nRanks=", nRanks, " (must be in [1, ", kMaxRanks, "])"));
  if (rank < 0 || rank >= nRanks) return InvalidArgument(Fmt("rank=", rank, " is not in [0, nRanks=", nRanks, ")"));
  UniqueIdContents uid;
  CCO_RETURN_IF_ERROR(DecodeUniqueId(id, &uid));
  CCO_RETURN_IF_ERROR(env::CheckValues());

  PhaseTrace trace(rank, "ccoCommCreate");
  auto c = std::make_shared<ccoComm>();
  c->secret = uid.secret;
  CCO_RETURN_IF_ERROR(IdTag(c->secret, &c->idTag));
  c->timeoutMs = env::TimeoutMs();
  CCO_RETURN_IF_ERROR(GetPlatform(&c->platform));
  CCO_RETURN_IF_ERROR(c->platform->CurrentDevice(&c->device));
  DeviceInfo dev;
  CCO_RETURN_IF_ERROR(c->platform->GetDeviceInfo(c->device, &dev));
  CCO_RETURN_IF_ERROR(BindCpus(*c));
  trace.Mark("device");

  // Room for what the bootstrap opens (rank 0: a connection from every rank): a table that
  // grew inside a collective step would stall every peer. The host's steps reserve theirs
  // once the host is known, the network backend its own.
  CCO_RETURN_IF_ERROR(
      ReserveFdHeadroom((rank == 0 ? nRanks : 0) + kFdSlack,
                        rank == 0 ? "ccoCommCreate (rank 0: a connection from every rank)" : "ccoCommCreate")
          .Prefixed(Fmt("rank ", rank)));
  trace.Mark("descriptor table");
  CCO_RETURN_IF_ERROR(FdMesh::Listen(&c->mesh));
  trace.Mark("mesh listener");
  CCO_RETURN_IF_ERROR(Bootstrap::Create(uid, nRanks, rank, c->timeoutMs, &c->bootstrap, &trace));

  RankInfo mine = LocalRankInfo(*c, rank, perRankVmmSize, dev);
  std::vector<RankSummary> summaries;
  std::vector<int> hostRanks;
  // Every rank sees the same summaries, so every rank reaches the same verdict on them here.
  CCO_RETURN_IF_ERROR(ExchangeRankInfo(*c->bootstrap, mine, &summaries, &hostRanks, &c->hostInfos));
  trace.Mark("rank exchange");
  std::vector<uint64_t> hostOfRank(nRanks);
  for (int r = 0; r < nRanks; ++r) hostOfRank[r] = summaries[r].hostHash;
  CCO_RETURN_IF_ERROR(
      ComputeTopologyOfHosts(hostOfRank, rank, static_cast<int>(env::Int("CCO_TEST_NODES_PER_HOST", 1)), &c->topo));
  // The host the topology found is the group the whole records came from (both by host hash).
  if (hostRanks != c->topo.hostMembers)
    return InternalError("ccoCommCreate: the host's ranks differ from its records'");
  CCO_RETURN_IF_ERROR(ResolveStride(summaries, &c->stride, &c->granularity));
  trace.Mark("topology");

  // Local resources; then all ranks agree before the host's ranks connect to each other.
  Status local = [&] {
    // The host's steps: a mesh socket and (cpu platform) an imported memory descriptor per
    // host peer in another process (a peer in this one needs neither).
    int elsewhere = 0;
    for (int i = 0; i < c->HostSize(); ++i) elsewhere += c->InThisProcess(i) ? 0 : 1;
    CCO_RETURN_IF_ERROR(ReserveFdHeadroom(
        2 * elsewhere + kFdSlack,
        "the descriptor mesh (a socket and a memory descriptor per rank of this host in another process)"));
    c->reserved = c->stride * static_cast<size_t>(c->HostSize());
    if (c->reserved / c->HostSize() != c->stride)
      return InvalidArgument("perRankVmmSize x ranks on this host overflows");
    CCO_RETURN_IF_ERROR(c->platform->Reserve(c->device, c->reserved, c->granularity, &c->flatBase)
                            .Prefixed(Fmt("reserving ", c->HostSize(), " x ", c->stride, " bytes of address space")));
    trace.Mark("reserve");
    c->slots = SlotAllocator(c->stride, c->granularity);
    c->descriptors.reset(new DescriptorPool(c->platform, c->device));
    c->devCommCopies.reset(new DescriptorPool(c->platform, c->device, sizeof(ccoDevComm)));
    void* host = nullptr;
    CCO_RETURN_IF_ERROR(
        c->platform->HostMappedAlloc(c->device, sizeof(uint32_t), &host, &c->abortDevice).Prefixed("abort flag"));
    c->abortHost = static_cast<uint32_t*>(host);
    return AllocateResourcePool(*c);
  }();
  trace.Mark("pool");
  Status agreed = Agree(*c, "ccoCommCreate (resources)", local);
  trace.Mark("agree resources");
  if (agreed.ok()) {
    std::vector<FdMesh::Member> team(c->HostSize());
    for (int i = 0; i < c->HostSize(); ++i) {
      const RankInfo& info = c->hostInfos[i];
      team[i] = FdMesh::Member{info.meshName, info.pid, info.pidNamespace, c->InThisProcess(i)};
    }
    const Status connected = c->mesh->Connect(c->secret, team, c->topo.hostRank, c->timeoutMs);
    trace.Mark("mesh connect");
    agreed = Agree(*c, "ccoCommCreate (host mesh)", connected);
    trace.Mark("agree mesh");
  }
  if (agreed.ok()) {
    const Status liveness = ExchangeLiveness(*c);
    PrepareHostWords(*c);  // before the round: in-process peers find its words after it
    agreed = Agree(*c, "ccoCommCreate (liveness words)", liveness);
  }
  trace.Mark("liveness and host words");
  if (agreed.ok()) FinishHostWords(*c);
  trace.Mark("host words mapped");
  if (agreed.ok()) c->proxy.reset(new Proxy(ProxyContextOf(*c)));  // its thread starts with the first rings
  trace.Mark("proxy");
  if (agreed.ok()) agreed = RegisterResourcePool(*c);
  trace.Mark("pool window");
  if (!agreed.ok()) {
    (void)DestroyComm(*c);  // the failure that came first is the one to report
    return agreed;
  }
  *out = std::move(c);
  return Status::Ok();
}

void AbortComm(ccoComm& c) {
  std::lock_guard<std::mutex> lock(c.abortMu);
  c.aborted = true;
  if (c.abortHost != nullptr) __atomic_store_n(c.abortHost, kAbortWordAborted, __ATOMIC_RELEASE);
  if (c.proxy) c.proxy->RingOwnBell();  // the cpu platform: waits asleep on it look now
  if (c.bootstrap) c.bootstrap->Abort();
  if (c.mesh) c.mesh->Abort();
}

Status DestroyComm(ccoComm& c) {
  // Local teardown, in reverse: the traces of device communicators still alive (while the
  // proxy can still finish their stamps), the proxy, GDA resources, descriptors, peers'
  // mappings, own memory, the range. A driver call that fails does not stop the others, and
  // is reported: memory the driver would not let go of is not lost silently.
  Failures failures;
  for (auto& entry : c.devComms) WriteTraceAtEnd(c, entry.second);
  std::unique_ptr<Proxy> proxy;
  {
    std::lock_guard<std::mutex> lock(c.abortMu);  // ccoCommGetAsyncError reads it under this lock
    proxy = std::move(c.proxy);
  }
  if (proxy) proxy->Leaving();  // host peers that see this process end know it left
  proxy.reset();                // joins its thread: outside the lock, which an abort may need meanwhile
  for (auto& entry : c.devComms) {
    if (entry.second.gda) failures.Note(DestroyGdaResources(c, *entry.second.gda));
    if (entry.second.sdma) failures.Note(DestroySdmaResources(c, *entry.second.sdma));
  }
  c.devComms.clear();
  failures.Note(DestroyHostWords(c));  // (no proxy writes them any more)
  c.windows.Clear();
  c.descriptors.reset();
  c.devCommCopies.reset();
  for (auto& entry : c.allocations) {
    Allocation& a = entry.second;
    failures.Note(ReleasePeers(c, a));
    failures.Note(c.platform->Unmap(c.device, c.MySlice() + a.offset, a.size).Prefixed("unmapping this rank's memory"));
    failures.Note(c.platform->Destroy(c.device, a.handle).Prefixed("freeing this rank's memory"));
  }
  c.allocations.clear();
  if (c.flatBase != 0) failures.Note(c.platform->Release(c.device, c.flatBase, c.reserved).Prefixed("the flat range"));
  c.flatBase = 0;
  // Under the lock to the end: an abort from another thread reaches into the abort flag, the
  // mesh and the bootstrap.
  std::lock_guard<std::mutex> lock(c.abortMu);
  if (c.abortHost != nullptr)
    failures.Note(c.platform->HostMappedFree(c.device, c.abortHost).Prefixed("the abort flag"));
  c.abortHost = nullptr;
  c.peerLiveness.clear();  // (the proxy, which read them, is gone)
  c.liveness.reset();
  c.mesh.reset();
  c.bootstrap.reset();
  return failures.Summary("ccoCommDestroy (every resource was let go of, but the driver refused)");
}

}  // namespace cco

bool ccoComm::InThisProcess(int hostIndex) const {
  const cco::RankInfo& peer = hostInfos[hostIndex];
  const cco::RankInfo& me = hostInfos[topo.hostRank];
  return peer.hostHash == me.hostHash && peer.processToken == me.processToken && peer.pid == me.pid &&
         peer.pidNamespace == me.pidNamespace;
}
