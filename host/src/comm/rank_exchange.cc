// SPDX-License-Identifier: MIT
#include "comm/rank_exchange.h"

#include <string.h>

#include <type_traits>

namespace cco {
namespace {

static_assert(std::is_trivially_copyable<RankSummary>::value && sizeof(RankSummary) <= kMaxSharedPart,
              "a summary travels as a shared part");
static_assert(sizeof(RankInfo) <= kMaxGroupedPart, "a whole record travels as a grouped part");

RankSummary SummaryOf(const RankInfo& info) {
  RankSummary s;
  memset(&s, 0, sizeof(s));
  s.hostHash = info.hostHash;
  s.perRankVmmSize = info.perRankVmmSize;
  s.granularity = info.granularity;
  s.totalMemory = info.totalMemory;
  s.platform = info.platform;
  return s;
}

// The checks of ValidateRankInfo that apply to a summary, and the platform every rank must share.
Status ValidateSummary(const RankSummary& s, int rank, int32_t platform) {
  if (s.platform < ccoPlatformCpu || s.platform > ccoPlatformHip)
    return RemoteError(Fmt("rank ", rank, " announced an unknown platform ", s.platform));
  if (s.platform != platform)
    return InvalidUsage(
        Fmt("rank ", rank, " runs platform ", s.platform, " but rank 0 runs ", platform, " (CCO_PLATFORM must agree)"));
  const uint64_t g = s.granularity;
  if (g < 4096 || g > (uint64_t{1} << 30) || (g & (g - 1)) != 0 || s.totalMemory == 0)
    return RemoteError(Fmt("rank ", rank, " announced granularity ", g, " and memory ", s.totalMemory));
  return Status::Ok();
}

}  // namespace

Status ExchangeRankInfo(Bootstrap& bootstrap, const RankInfo& mine, std::vector<RankSummary>* summaries,
                        std::vector<int>* hostRanks, std::vector<RankInfo>* host) {
  const RankSummary summary = SummaryOf(mine);
  std::string shared;
  std::vector<GroupMember> members;
  CCO_RETURN_IF_ERROR(bootstrap.ExchangeGrouped(
      "ccoCommCreate", mine.hostHash, std::string(reinterpret_cast<const char*>(&summary), sizeof(summary)),
      std::string(reinterpret_cast<const char*>(&mine), sizeof(mine)), &shared, &members));
  const int n = bootstrap.nRanks();
  summaries->resize(n);
  memcpy(summaries->data(), shared.data(), static_cast<size_t>(n) * sizeof(RankSummary));
  for (int r = 0; r < n; ++r) {
    const Status valid = ValidateSummary((*summaries)[r], r, (*summaries)[0].platform);
    if (!valid.ok()) return valid.Prefixed("ccoCommCreate");
  }
  hostRanks->clear();
  host->clear();
  for (const GroupMember& m : members) {
    RankInfo whole;
    if (m.grouped.size() != sizeof(whole))
      return RemoteError(Fmt("ccoCommCreate: rank ", m.rank, " sent a ", m.grouped.size(), "-byte record (expected ",
                             sizeof(whole), ")"));
    memcpy(&whole, m.grouped.data(), sizeof(whole));
    CCO_RETURN_IF_ERROR(ValidateRankInfo(whole, m.rank).Prefixed("ccoCommCreate"));
    // The whole record must say what the summary said: the host (the group it came in) above all.
    const RankSummary told = SummaryOf(whole);
    if (memcmp(&told, &(*summaries)[m.rank], sizeof(told)) != 0 || whole.hostHash != mine.hostHash)
      return RemoteError(Fmt("ccoCommCreate: rank ", m.rank, " announced two different records"));
    hostRanks->push_back(m.rank);
    host->push_back(whole);
  }
  return Status::Ok();
}

}  // namespace cco
