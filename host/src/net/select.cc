// SPDX-License-Identifier: MIT
#include "net/select.h"

#include <algorithm>

#include "common/env.h"

namespace cco {

Status NetChoiceFromEnv(NetChoice* choice) {
  const std::string value = env::Get("CCO_NET");
  if (value.empty()) *choice = NetChoice::kAuto;
  else if (value == "tcp") *choice = NetChoice::kTcp;
  else if (value == "verbs") *choice = NetChoice::kVerbs;
  else return InvalidArgument(Fmt("CCO_NET=", value, " (expected tcp or verbs, or unset)"));
  return Status::Ok();
}

std::vector<bool> NetPeers(const Topology& t, NetChoice choice) {
  std::vector<bool> remote(t.nRanks, false);
  std::vector<bool> onThisHost(t.nRanks, false);
  for (int r : t.hostMembers) onThisHost[r] = true;
  for (int q = 0; q < t.nRanks; ++q) {
    if (q == t.rank) continue;
    remote[q] = !onThisHost[q] || (choice != NetChoice::kAuto && t.nodeOfRank[q] != t.node);
  }
  return remote;
}

Status ProbeVerbs(const VerbsApi** api, VerbsOptions* options, VerbsDevice* device) {
  CCO_RETURN_IF_ERROR(LoadVerbs(api));
  CCO_RETURN_IF_ERROR(VerbsOptionsFromEnv(options));
  return OpenVerbsDevice(**api, *options, device);
}

Status ExchangeEndpoints(int nRanks, int me, int lanes, const std::vector<VerbsEndpoint>& mine, size_t maxBytes,
                         const AllGatherFn& gather, std::vector<VerbsEndpoint>* theirs) {
  const size_t perPeer = static_cast<size_t>(lanes) * sizeof(VerbsEndpoint);
  const int chunk = static_cast<int>(std::max<size_t>(1, maxBytes / perPeer));  // peers a round covers
  theirs->assign(static_cast<size_t>(nRanks) * lanes, VerbsEndpoint{});
  std::vector<VerbsEndpoint> round;
  for (int first = 0; first < nRanks; first += chunk) {
    const int count = std::min(chunk, nRanks - first);
    round.resize(static_cast<size_t>(nRanks) * count * lanes);  // [rank][peer - first][lane]
    CCO_RETURN_IF_ERROR(gather(Fmt("GDA verbs endpoints for ranks ", first, "+"),
                               mine.data() + static_cast<size_t>(first) * lanes, count * perPeer, round.data()));
    if (me < first || me >= first + count) continue;
    for (int q = 0; q < nRanks; ++q)
      for (int l = 0; l < lanes; ++l)
        (*theirs)[static_cast<size_t>(q) * lanes + l] =
            round[(static_cast<size_t>(q) * count + (me - first)) * lanes + l];
  }
  return Status::Ok();
}

}  // namespace cco
