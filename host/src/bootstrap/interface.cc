// SPDX-License-Identifier: MIT
#include "bootstrap/interface.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>

#include "common/env.h"

namespace cco {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      if (i > start) parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

bool IsLinkLocalV6(const SockAddr& a) {
  if (a.storage.ss_family != AF_INET6) return false;
  auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
  return IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr);
}

}  // namespace

bool InterfaceMatches(const std::string& spec, const std::string& name) {
  if (spec.empty()) return true;
  std::string list = spec;
  const bool exclude = list[0] == '^';
  if (exclude) list.erase(0, 1);
  const bool exact = !list.empty() && list[0] == '=';
  if (exact) list.erase(0, 1);
  bool hit = false;
  for (const std::string& item : Split(list, ',')) {
    if (exact ? name == item : name.compare(0, item.size(), item) == 0) hit = true;
  }
  return exclude ? !hit : hit;
}

Status ChooseInterface(const std::vector<InterfaceAddress>& candidates, const std::string& spec,
                       InterfaceAddress* chosen) {
  // Preference: matches the spec; then (without a spec) not loopback; IPv4 before IPv6;
  // never a link-local IPv6 address (it needs a scope to be reachable).
  const InterfaceAddress* best = nullptr;
  int best_rank = 1 << 30;
  std::string names;
  for (const auto& c : candidates) {
    if (names.find(c.name) == std::string::npos) names += (names.empty() ? "" : ", ") + c.name;
    if (!InterfaceMatches(spec, c.name) || IsLinkLocalV6(c.address)) continue;
    int rank = (c.loopback && spec.empty() ? 2 : 0) + (c.address.storage.ss_family == AF_INET ? 0 : 1);
    if (rank < best_rank) {
      best = &c;
      best_rank = rank;
    }
  }
  if (best == nullptr) {
    if (!spec.empty())
      return InvalidArgument(Fmt("CCO_SOCKET_IFNAME=", spec, " matches no usable interface (have: ", names, ")"));
    return SystemError("no network interface is up, not even loopback");
  }
  *chosen = *best;
  return Status::Ok();
}

Status BootstrapAddress(InterfaceAddress* chosen) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return ErrnoError("getifaddrs", errno);
  std::vector<InterfaceAddress> candidates;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || !(i->ifa_flags & IFF_UP)) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    InterfaceAddress c;
    c.name = i->ifa_name;
    c.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    memset(&c.address, 0, sizeof(c.address));
    c.address.length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    memcpy(&c.address.storage, i->ifa_addr, c.address.length);
    candidates.push_back(c);
  }
  freeifaddrs(list);
  return ChooseInterface(candidates, env::Get("CCO_SOCKET_IFNAME"), chosen);
}

}  // namespace cco
