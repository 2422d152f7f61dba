// SPDX-License-Identifier: MIT
#include "comm/net_setup.h"

#include <string.h>

#include "bootstrap/messages.h"
#include "comm/agree.h"
#include "common/fd_table.h"
#include "net/tcp_backend.h"
#include "net/tcp_mesh.h"
#include "net/verbs_backend.h"

namespace cco {
namespace {

// Collective: every rank's listener address through the bootstrap, then the connections of
// every pair the network serves (net/tcp_mesh.h), all ranks failing together.
Status ConnectTcpMesh(ccoComm& c, const std::vector<bool>& remote, std::vector<Fd>* outgoing,
                      std::vector<Fd>* incoming) {
  const int n = c.topo.nRanks;
  // Two connections per peer the network serves, opened in the collective step below.
  int peers = 0;
  for (bool r : remote) peers += r ? 1 : 0;
  Fd listener;
  TcpMeshAnnouncement mine;
  Status local = ReserveFdHeadroom(2 * peers + 64, "GDA over tcp (two connections per rank on another node)");
  if (local.ok()) local = ListenForTcpMesh(&listener, &mine);
  std::vector<TcpMeshAnnouncement> all;
  CCO_RETURN_IF_ERROR(AgreeOn(c, "GDA tcp listeners", local, mine, &all));  // and every rank's address and key
  std::vector<SockAddr> addresses(n);
  std::vector<Key> joinKeys(n);
  for (int q = 0; q < n; ++q) {
    joinKeys[q] = all[q].joinKey;
    if (remote[q]) CCO_RETURN_IF_ERROR(CheckListenAddress(all[q].address, q, &addresses[q]));
  }
  return Agree(c, "GDA tcp connections",
               ConnectTcpPeers(c.secret, c.topo.rank, remote, addresses, joinKeys, listener.get(), c.timeoutMs,
                               outgoing, incoming));
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
  for (const auto& w : c.windows.records())
    CCO_RETURN_IF_ERROR(
        ExchangeWindowKeys(c, w.second.id, c.MySlice() + w.second.offset, w.second.size, w.second.internal));
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
  Status local = VerbsBackend::Create(api, options, device, c.topo.rank, remote,
                                      TcpOptionsFromEnv(c.timeoutMs).timeoutMs, exporter, &made);
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
      for (int l = 0; l < lanes && local.ok(); ++l)
        local = verbs->Connect(q, l, theirs[static_cast<size_t>(q) * lanes + l]);
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

Status EnsureNetBackend(ccoComm& c, NetChoice choice) {
  if (c.proxy->HasNet()) return Status::Ok();
  const std::vector<bool> remote = NetPeers(c.topo, choice);
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

Status ExchangeWindowKeys(ccoComm& c, uint32_t id, uint64_t address, uint64_t size, bool internal) {
  if (!c.verbs) return Status::Ok();
  VerbsWindowKey mine;
  memset(&mine, 0, sizeof(mine));
  Status local = c.verbs->RegisterWindow(id, address, size, &mine, /*signalsOnly=*/internal);
  std::vector<VerbsWindowKey> all;
  Status s = AgreeOn(c, Fmt("GDA verbs keys of window ", id), local, mine, &all);
  for (int q = 0; q < c.topo.nRanks && s.ok(); ++q)
    if (q != c.topo.rank && c.verbs->Reaches(q)) s = c.verbs->SetPeerWindow(q, id, all[q]);
  s = Agree(c, Fmt("GDA verbs peers' keys of window ", id), s);
  if (!s.ok()) c.verbs->DeregisterWindow(id);  // the window fails to register: nothing of it stays
  return s;
}

}  // namespace cco
