// SPDX-License-Identifier: MIT
// Which local address the bootstrap listens on: CCO_SOCKET_IFNAME (alias
// MORI_SOCKET_IFNAME), as NCCL spells it: a comma-separated list of interface-name
// prefixes ("eth,ib"), "=name" for an exact name, a leading "^" to exclude instead.
// Unset: the first interface that is up and not loopback, else loopback.
#ifndef CCO_HOST_BOOTSTRAP_INTERFACE_H_
#define CCO_HOST_BOOTSTRAP_INTERFACE_H_

#include <string>
#include <vector>

#include "bootstrap/socket.h"

namespace cco {

struct InterfaceAddress {
  std::string name;
  SockAddr address;  // port 0
  bool loopback;
};

// Whether interface `name` passes the CCO_SOCKET_IFNAME-style `spec` ("" passes all).
bool InterfaceMatches(const std::string& spec, const std::string& name);

// Chooses from `candidates` (in the order the OS lists them) per `spec`.
Status ChooseInterface(const std::vector<InterfaceAddress>& candidates, const std::string& spec,
                       InterfaceAddress* chosen);

// The address for this process's bootstrap sockets.
Status BootstrapAddress(InterfaceAddress* chosen);

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_INTERFACE_H_
