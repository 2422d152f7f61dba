// SPDX-License-Identifier: MIT
// Environment variables: CCO_* names, with the guide's MORI_* spellings as aliases.
#ifndef CCO_HOST_COMMON_ENV_H_
#define CCO_HOST_COMMON_ENV_H_

#include <stdint.h>

#include <string>

#include "common/status.h"

namespace cco {
namespace env {

// The value of `name` (a CCO_* variable) or of its MORI_* alias; `fallback` if neither.
std::string Get(const char* name, const std::string& fallback = "");
bool IsSet(const char* name);
// "1", "true", "yes", "on" (any case) are true; unset is `fallback`.
bool Flag(const char* name, bool fallback = false);
// A non-negative integer, or `fallback` when unset or not a number.
int64_t Int(const char* name, int64_t fallback);

// A wait's bound in ms from `name`, clamped to [1, 2^41]: 0 would fail every wait at once,
// and a bound near INT64_MAX ms would overflow the clock (a larger value means "no bound").
int64_t WaitMs(const char* name, int64_t fallback);
// Every blocking wait's bound: CCO_TIMEOUT_MS (default 120000), as WaitMs.
int64_t TimeoutMs();

// The library's numeric and on/off variables that are set hold what they must (a whole
// number; 1/0, true/false, yes/no, on/off): a value like "1500ms" or "2" would otherwise
// read as unset, silently. InvalidArgument names the first that does not (as it was set:
// the CCO_ name or its MORI_ alias). The verbs backend's CCO_RDMA_TC (0-255), CCO_RDMA_SL
// (0-15) and CCO_RDMA_GID_INDEX (0-255) must be in range, whether or not verbs is used.
// ccoCommCreate checks first.
Status CheckValues();

}  // namespace env
}  // namespace cco

#endif  // CCO_HOST_COMMON_ENV_H_
