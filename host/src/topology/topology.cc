// SPDX-License-Identifier: MIT
#include "topology/topology.h"

#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/env.h"
#include "common/hash.h"

namespace cco {

uint64_t HostHash() {
  std::string id = env::Get("CCO_HOSTID");
  if (id.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::stringstream boot_id;
    boot_id << boot.rdbuf();
    id = std::string(host) + "/" + boot_id.str();
  }
  return Fnv1a(id.data(), id.size());
}

uint64_t ProcessToken() {
  static const uint64_t token = [] {
    uint64_t t = 0;
    if (getrandom(&t, sizeof(t), 0) != static_cast<ssize_t>(sizeof(t))) t = Fnv1a(&t, sizeof(t)) ^ getpid();
    return t;
  }();
  return token;
}

namespace {

// The text of a fixed-size field: it must end with a NUL inside the field and hold only
// `allowed` characters (a peer's bytes are never read past the field).
bool FieldText(const char* field, size_t size, const char* allowed, std::string* text) {
  const void* nul = memchr(field, '\0', size);
  if (nul == nullptr) return false;
  text->assign(field, static_cast<const char*>(nul) - field);
  return text->find_first_not_of(allowed) == std::string::npos;
}

}  // namespace

Status ValidateRankInfo(const RankInfo& info, int rank) {
  std::string text;
  if (!FieldText(info.busId, sizeof(info.busId), "0123456789abcdefABCDEF:.", &text))
    return RemoteError(Fmt("rank ", rank, " announced a malformed PCI bus id"));
  if (!FieldText(info.meshName, sizeof(info.meshName), "abcdefghijklmnopqrstuvwxyz0123456789-", &text) ||
      text.compare(0, 9, "cco-mesh-") != 0)
    return RemoteError(Fmt("rank ", rank, " announced a malformed socket name"));
  if (info.platform < ccoPlatformCpu || info.platform > ccoPlatformHip)
    return RemoteError(Fmt("rank ", rank, " announced an unknown platform ", info.platform));
  if (info.device < 0 || info.pid <= 0)
    return RemoteError(Fmt("rank ", rank, " announced device ", info.device, ", pid ", info.pid));
  const uint64_t g = info.granularity;
  if (g < 4096 || g > (uint64_t{1} << 30) || (g & (g - 1)) != 0 || info.totalMemory == 0)
    return RemoteError(Fmt("rank ", rank, " announced granularity ", g, " and memory ", info.totalMemory));
  return Status::Ok();
}

namespace {

// Host hashes to host indices: open addressing in two flat arrays, since every rank indexes
// every rank's host (a node-per-entry map costs an allocation per rank, per rank).
class HostIndex {
 public:
  explicit HostIndex(int n) {
    size_t capacity = 16;
    while (capacity < 2 * static_cast<size_t>(n)) capacity *= 2;
    keys_.assign(capacity, 0);
    values_.assign(capacity, -1);
  }
  // The index of `hash`; a new hash gets `next` (-1: none is added).
  int Find(uint64_t hash, int next) {
    const size_t mask = keys_.size() - 1;
    for (size_t i = Mix(hash) & mask;; i = (i + 1) & mask) {
      if (values_[i] >= 0 && keys_[i] == hash) return values_[i];
      if (values_[i] < 0) {
        if (next >= 0) {
          keys_[i] = hash;
          values_[i] = next;
        }
        return next;
      }
    }
  }

 private:
  static size_t Mix(uint64_t h) { return static_cast<size_t>((h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull >> 32); }
  std::vector<uint64_t> keys_;
  std::vector<int> values_;
};

}  // namespace

Status ComputeTopology(const std::vector<RankInfo>& infos, int rank, int nodesPerHost, Topology* out) {
  std::vector<uint64_t> hostOfRank(infos.size());
  for (size_t r = 0; r < infos.size(); ++r) {
    if (infos[r].platform != infos[0].platform)
      return InvalidUsage(Fmt("rank ", r, " runs platform ", infos[r].platform, " but rank 0 runs ", infos[0].platform,
                              " (CCO_PLATFORM must agree)"));
    hostOfRank[r] = infos[r].hostHash;
  }
  return ComputeTopologyOfHosts(hostOfRank, rank, nodesPerHost, out);
}

Status ComputeTopologyOfHosts(const std::vector<uint64_t>& hostOfRank, int rank, int nodesPerHost, Topology* out) {
  const int n = static_cast<int>(hostOfRank.size());
  if (nodesPerHost < 1) return InvalidArgument(Fmt("CCO_TEST_NODES_PER_HOST=", nodesPerHost, " must be >= 1"));

  // Hosts in order of their lowest rank; each host's ranks in rank order, one host after
  // another in `byHost` (host h at [hostBegin[h], hostBegin[h + 1])): flat arrays, since every
  // rank computes this for every rank.
  HostIndex host_index(n);
  std::vector<int> hostOf(n);
  int nHosts = 0;
  for (int r = 0; r < n; ++r) {
    hostOf[r] = host_index.Find(hostOfRank[r], nHosts);
    if (hostOf[r] == nHosts) ++nHosts;
  }
  std::vector<int> hostBegin(nHosts + 1, 0);
  for (int r = 0; r < n; ++r) ++hostBegin[hostOf[r] + 1];
  for (int h = 0; h < nHosts; ++h) hostBegin[h + 1] += hostBegin[h];
  std::vector<int> byHost(n);
  {
    std::vector<int> next(hostBegin.begin(), hostBegin.end() - 1);
    for (int r = 0; r < n; ++r) byHost[next[hostOf[r]]++] = r;
  }

  // Split each host into nodesPerHost nodes of contiguous ranks (sizes differ by <= 1):
  // node k is byHost[nodeBegin[k], nodeBegin[k + 1]).
  Topology t;
  t.rank = rank;
  t.nRanks = n;
  t.nodeOfRank.assign(n, -1);
  std::vector<int> nodeBegin;
  for (int h = 0; h < nHosts; ++h) {
    const int count = hostBegin[h + 1] - hostBegin[h];
    if (nodesPerHost > count)
      return InvalidArgument(Fmt("CCO_TEST_NODES_PER_HOST=", nodesPerHost, " but a host has only ", count, " rank(s)"));
    for (int g = 0; g < nodesPerHost; ++g) nodeBegin.push_back(hostBegin[h] + g * count / nodesPerHost);
  }
  nodeBegin.push_back(n);
  const int nNodes = static_cast<int>(nodeBegin.size()) - 1;
  for (int k = 0; k < nNodes; ++k) {
    for (int i = nodeBegin[k]; i < nodeBegin[k + 1]; ++i) {
      if (i > nodeBegin[k] && byHost[i] != byHost[i - 1] + 1)
        return InvalidUsage(Fmt("the ranks of one node must be contiguous, but ranks ", byHost[i - 1], " and ",
                                byHost[i], " share a node while rank ", byHost[i - 1] + 1, " is elsewhere"));
      t.nodeOfRank[byHost[i]] = k;
    }
  }

  t.nNodes = nNodes;
  t.node = t.nodeOfRank[rank];
  const int myHost = hostOf[rank];
  t.hostMembers.assign(byHost.begin() + hostBegin[myHost], byHost.begin() + hostBegin[myHost + 1]);
  const int lsaFirst = byHost[nodeBegin[t.node]];
  for (size_t i = 0; i < t.hostMembers.size(); ++i) {
    if (t.hostMembers[i] == rank) t.hostRank = static_cast<int>(i);
    if (t.hostMembers[i] == lsaFirst) t.lsaHostBase = static_cast<int>(i);
  }
  t.lsaSize = nodeBegin[t.node + 1] - nodeBegin[t.node];
  t.lsaWorldBase = lsaFirst;
  t.lsaRank = rank - lsaFirst;
  t.world = ccoTeam{n, rank, 1, 0};
  t.lsa = ccoTeam{t.lsaSize, t.lsaRank, 1, t.lsaWorldBase};
  bool uniform = true;
  for (int k = 0; k < nNodes; ++k) uniform &= nodeBegin[k + 1] - nodeBegin[k] == t.lsaSize;
  // Rail: the same LSA rank on every node; only defined when nodes are the same size.
  t.rail = uniform ? ccoTeam{t.nNodes, t.node, t.lsaSize, t.lsaRank} : ccoTeam{1, 0, 0, rank};
  *out = t;
  return Status::Ok();
}

}  // namespace cco
