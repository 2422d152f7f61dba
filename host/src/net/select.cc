#include "net/select.h"

#include <string.h>

#include <algorithm>

#include "bootstrap/messages.h"
#include "comm/agree.h"
#include "comm/communicator.h"
#include "common/env.h"
#include "net/tcp_backend.h"
#include "net/tcp_mesh.h"
#include "net/verbs_backend.h"

namespace cco {

Status NetChoiceFromEnv(NetChoice* choice) {
  const std::string value = env::Get("CCO_NET");
  if (value.empty()) *choice = NetChoice::kAuto;
  else if (value == "tcp") *choice = NetChoice::kTcp;
  else if (value == "verbs") *choice = NetChoice::kVerbs;
  else return InvalidArgument(Fmt("CCO_NET=", value, " (expected tcp or verbs, or unset)"));
  return Status::Ok();
}

std::vector<bool> NetPeers(const ccoComm& c, NetChoice choice) {
  const Topology& t = c.topo;
  std::vector<bool> remote(t.nRanks, false);
  std::vector<bool> onThisHost(t.nRanks, false);
  for (int r : t.hostMembers) onThisHost[r] = true;
  for (int q = 0; q < t.nRanks; ++q) {
    if (q == t.rank) continue;
    remote[q] = !onThisHost[q] || (choice != NetChoice::kAuto && t.nodeOfRank[q] != t.node);
  }
  return remote;
}

namespace {

// Whether this process can use verbs: the library, the options and an active port. On
// success *device is open (the caller owns it).
Status ProbeVerbs(const VerbsApi** api, VerbsOptions* options, VerbsDevice* device) {
  CCO_RETURN_IF_ERROR(LoadVerbs(api));
  CCO_RETURN_IF_ERROR(VerbsOptionsFromEnv(options));
  return OpenVerbsDevice(**api, *options, device);
}

Status CreateTcp(ccoComm& c, const std::vector<bool>& remote) {
  std::vector<Fd> outgoing, incoming;
  CCO_RETURN_IF_ERROR(ConnectTcpMesh(c, remote, &outgoing, &incoming));
  std::unique_ptr<TcpBackend> tcp;
  Status local = TcpBackend::Create(c.platform, c.device, TcpOptionsFromEnv(c.timeoutMs), std::move(outgoing),
                                    std::move(incoming), &tcp);
  CCO_RETURN_IF_ERROR(Agree(c, "GDA tcp backend", local));
  c.proxy->SetNet(std::shared_ptr<NetBackend>(std::move(tcp)));
  return Status::Ok();
}

// Every window registered so far, registered with the NIC and its keys exchanged.
Status RegisterExistingWindows(ccoComm& c) {
  for (const auto& w : c.windows)
    CCO_RETURN_IF_ERROR(ExchangeWindowKeys(c, w.second.id, c.MySlice() + w.second.offset, w.second.size));
  return Status::Ok();
}

Status CreateVerbs(ccoComm& c, const std::vector<bool>& remote, const VerbsApi* api, const VerbsOptions& options,
                   VerbsDevice device) {
  std::unique_ptr<VerbsBackend> made;
  Platform* platform = c.platform;
  const int gpu = c.device;
  DmaBufExporter exporter = [platform, gpu](uint64_t va, size_t size, int* fd, uint64_t* offset) {
    return platform->ExportDmaBuf(gpu, va, size, fd, offset);
  };
  // Create owns the device from here on (its backend closes it, also when Create fails).
  Status local = VerbsBackend::Create(api, options, device, c.topo.rank, remote, TcpOptionsFromEnv(c.timeoutMs).timeoutMs,
                                      exporter, &made);
  CCO_RETURN_IF_ERROR(Agree(c, "GDA verbs backend", local));
  std::shared_ptr<VerbsBackend> verbs(std::move(made));
  // This rank's end of every queue pair, [peer][lane]; each connects to the peers' ends for it.
  const int n = c.topo.nRanks, lanes = options.lanes;
  std::vector<VerbsEndpoint> mine(static_cast<size_t>(n) * lanes), theirs;
  memset(mine.data(), 0, mine.size() * sizeof(VerbsEndpoint));
  for (int q = 0; q < n; ++q)
    if (remote[q])
      for (int l = 0; l < lanes; ++l) mine[static_cast<size_t>(q) * lanes + l] = verbs->Endpoint(q, l);
  CCO_RETURN_IF_ERROR(ExchangeEndpoints(
      n, c.topo.rank, lanes, mine, kMaxContribution,
      [&](const std::string& name, const void* data, size_t bytes, void* out) {
        return c.bootstrap->AllGather(name, data, bytes, out);
      },
      &theirs));
  local = Status::Ok();
  for (int q = 0; q < n && local.ok(); ++q)
    if (remote[q])
      for (int l = 0; l < lanes && local.ok(); ++l) local = verbs->Connect(q, l, theirs[static_cast<size_t>(q) * lanes + l]);
  CCO_RETURN_IF_ERROR(Agree(c, "GDA verbs connections", local));
  c.verbs = verbs;
  Status windows = RegisterExistingWindows(c);
  if (!windows.ok()) {
    c.verbs.reset();
    return windows;
  }
  c.proxy->SetNet(verbs);
  return Status::Ok();
}

}  // namespace

Status ExchangeEndpoints(int nRanks, int me, int lanes, const std::vector<VerbsEndpoint>& mine, size_t maxBytes,
                         const AllGatherFn& gather, std::vector<VerbsEndpoint>* theirs) {
  const size_t perPeer = static_cast<size_t>(lanes) * sizeof(VerbsEndpoint);
  const int chunk = static_cast<int>(std::max<size_t>(1, maxBytes / perPeer));  // peers a round covers
  theirs->assign(static_cast<size_t>(nRanks) * lanes, VerbsEndpoint{});
  std::vector<VerbsEndpoint> round;
  for (int first = 0; first < nRanks; first += chunk) {
    const int count = std::min(chunk, nRanks - first);
    round.resize(static_cast<size_t>(nRanks) * count * lanes);  // [rank][peer - first][lane]
    CCO_RETURN_IF_ERROR(gather(Fmt("GDA verbs endpoints for ranks ", first, "+"), mine.data() + static_cast<size_t>(first) * lanes,
                               count * perPeer, round.data()));
    if (me < first || me >= first + count) continue;
    for (int q = 0; q < nRanks; ++q)
      for (int l = 0; l < lanes; ++l)
        (*theirs)[static_cast<size_t>(q) * lanes + l] = round[(static_cast<size_t>(q) * count + (me - first)) * lanes + l];
  }
  return Status::Ok();
}

Status EnsureNetBackend(ccoComm& c, NetChoice choice) {
  if (c.proxy->HasNet()) return Status::Ok();
  const std::vector<bool> remote = NetPeers(c, choice);
  if (choice == NetChoice::kTcp) return CreateTcp(c, remote);
  // Verbs only where every rank can: each says whether it can, all decide alike.
  const VerbsApi* api = nullptr;
  VerbsOptions options;
  VerbsDevice device;
  const Status probe = ProbeVerbs(&api, &options, &device);
  const int32_t usable = probe.ok() ? 1 : 0;
  std::vector<int32_t> all(c.topo.nRanks);
  CCO_RETURN_IF_ERROR(c.bootstrap->AllGather("GDA network probe", &usable, sizeof(usable), all.data()));
  std::string without;
  for (int r = 0; r < c.topo.nRanks; ++r)
    if (all[r] != 1) without += (without.empty() ? "" : ", ") + std::to_string(r);
  if (without.empty()) return CreateVerbs(c, remote, api, options, device);
  if (device.context != nullptr) api->closeDevice(device.context);
  if (choice == NetChoice::kVerbs)
    return Agree(c, "GDA network backend",
                 Unsupported(Fmt("CCO_NET=verbs, but rank(s) ", without, " have no usable RDMA device",
                                 probe.ok() ? "" : Fmt(" (here: ", probe.message(), ")"))));
  return CreateTcp(c, remote);
}

Status ExchangeWindowKeys(ccoComm& c, uint32_t id, uint64_t address, uint64_t size) {
  if (!c.verbs) return Status::Ok();
  VerbsWindowKey mine;
  memset(&mine, 0, sizeof(mine));
  Status local = c.verbs->RegisterWindow(id, address, size, &mine);
  std::vector<VerbsWindowKey> all;
  Status s = AgreeOn(c, Fmt("GDA verbs keys of window ", id), local, mine, &all);
  for (int q = 0; q < c.topo.nRanks && s.ok(); ++q)
    if (q != c.topo.rank && c.verbs->Reaches(q)) s = c.verbs->SetPeerWindow(q, id, all[q]);
  s = Agree(c, Fmt("GDA verbs peers' keys of window ", id), s);
  if (!s.ok()) c.verbs->DeregisterWindow(id);  // the window fails to register: nothing of it stays
  return s;
}

}  // namespace cco
