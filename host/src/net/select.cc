#include "net/select.h"

#include "comm/communicator.h"
#include "common/env.h"
#include "net/tcp_backend.h"
#include "net/tcp_mesh.h"

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

Status EnsureNetBackend(ccoComm& c, NetChoice choice) {
  if (c.proxy->HasNet()) return Status::Ok();
  if (choice == NetChoice::kVerbs)
    return Agree(c, "GDA network backend",
                 Unsupported("CCO_NET=verbs: the verbs backend cannot run in this build (no rdma-core device support "
                             "yet); unset CCO_NET to use tcp"));
  const std::vector<bool> remote = NetPeers(c, choice);
  std::vector<Fd> outgoing, incoming;
  CCO_RETURN_IF_ERROR(ConnectTcpMesh(c, remote, &outgoing, &incoming));
  std::unique_ptr<TcpBackend> tcp;
  Status local = TcpBackend::Create(c.platform, c.device, TcpOptionsFromEnv(c.timeoutMs), std::move(outgoing),
                                    std::move(incoming), &tcp);
  CCO_RETURN_IF_ERROR(Agree(c, "GDA tcp backend", local));
  c.proxy->SetNet(std::shared_ptr<NetBackend>(std::move(tcp)));
  return Status::Ok();
}

}  // namespace cco
