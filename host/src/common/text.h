// SPDX-License-Identifier: MIT
// Sentences about ranks for error messages, the same wording everywhere.
#ifndef CCO_HOST_COMMON_TEXT_H_
#define CCO_HOST_COMMON_TEXT_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace cco {

// "0, 1, 5" (at most 16 listed, then the count).
inline std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) s += Fmt(", ... (", ranks.size(), " in all)");
  return s;
}

// "rank 3" or "ranks 1, 2".
inline std::string RanksPhrase(const std::vector<int>& ranks) {
  return (ranks.size() > 1 ? "ranks " : "rank ") + RankList(ranks);
}

}  // namespace cco

#endif  // CCO_HOST_COMMON_TEXT_H_
