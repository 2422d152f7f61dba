// SPDX-License-Identifier: MIT
// Template bodies of common/status.h.
#ifndef CCO_HOST_COMMON_STATUS_INL_H_
#define CCO_HOST_COMMON_STATUS_INL_H_

#include <sstream>

namespace cco {

template <class... Parts> std::string Fmt(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

}  // namespace cco

#endif  // CCO_HOST_COMMON_STATUS_INL_H_
