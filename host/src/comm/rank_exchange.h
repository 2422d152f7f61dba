// SPDX-License-Identifier: MIT
// What the ranks tell each other at ccoCommCreate, in one call (Bootstrap::ExchangeGrouped).
// Every rank learns every rank's summary: its host and what the slice size depends on
// (the topology and the slice size need no more of other hosts). Only the ranks of its own
// host send it their whole RankInfo (pid, process, descriptor-mesh name: what the flat range
// and the descriptor mesh need). So a rank receives O(nRanks) small records and a few whole
// ones, where an all-gather of whole records would send every rank every record.
#ifndef CCO_HOST_COMM_RANK_EXCHANGE_H_
#define CCO_HOST_COMM_RANK_EXCHANGE_H_

#include <stdint.h>

#include <vector>

#include "bootstrap/bootstrap.h"
#include "topology/topology.h"

namespace cco {

// The part of a RankInfo every rank gets of every rank.
struct RankSummary {
  uint64_t hostHash;
  uint64_t perRankVmmSize;
  uint64_t granularity;
  uint64_t totalMemory;
  int32_t platform;
  int32_t reserved;
};

// Collective. On success summaries[r] is rank r's summary, for every rank, and `host` the
// whole RankInfo of every rank of this rank's host (same hostHash), in rank order, with
// their ranks in hostRanks. What is used is checked first, naming the rank that sent a bad
// record: every summary (and that every rank runs rank 0's platform), every whole record
// (ValidateRankInfo, and that it says what its summary said).
Status ExchangeRankInfo(Bootstrap& bootstrap, const RankInfo& mine, std::vector<RankSummary>* summaries,
                        std::vector<int>* hostRanks, std::vector<RankInfo>* host);

}  // namespace cco

#endif  // CCO_HOST_COMM_RANK_EXCHANGE_H_
