// The tcp backend's connections: for every ordered pair of ranks that the network serves,
// one TCP connection from the first (the initiator of that pair's requests) to the second.
// Each is authenticated with the communicator's secret (the handshake of auth/handshake.h,
// purpose "gda-tcp"), and then introduces itself with its rank; a connection from anyone
// else, or one the target does not expect, is dropped.
//
// Listeners are on CCO_SOCKET_IFNAME's interface (alias MORI_SOCKET_IFNAME), as the
// bootstrap's; the addresses travel through the bootstrap, checked before use. Handing them
// round and agreeing on the outcome is the communicator's (comm/net_setup.cc); these are the
// sockets: listen, check a peer's address, connect and accept.
#ifndef CCO_HOST_NET_TCP_MESH_H_
#define CCO_HOST_NET_TCP_MESH_H_

#include <stdint.h>

#include <vector>

#include "auth/crypto.h"
#include "bootstrap/socket.h"

namespace cco {

// A listener's address as every rank sees it (plain data: it travels as bytes).
struct TcpListenAddress {
  sockaddr_storage storage;
  uint32_t length;
  uint32_t reserved;
};

// Opens this rank's listener; *address (zeroed where this fails) is what peers connect to.
Status ListenForTcpMesh(Fd* listener, TcpListenAddress* address);

// Rank `rank`'s announced address, checked: an IPv4 or IPv6 address with a port, nothing else.
Status CheckListenAddress(const TcpListenAddress& a, int rank, SockAddr* out);

// This rank's part once every rank listens. remote[q]: whether the pair (this rank, q) uses
// the network; every rank must pass the same relation. Connects to each such q at
// addresses[q] while accepting q's connection on `listener`, and fills outgoing[q] (this
// rank's requests to q) and incoming[q] (q's requests to this rank), blocking sockets.
Status ConnectTcpPeers(const Key& secret, int rank, const std::vector<bool>& remote,
                       const std::vector<SockAddr>& addresses, int listener, int64_t timeoutMs,
                       std::vector<Fd>* outgoing, std::vector<Fd>* incoming);

}  // namespace cco

#endif  // CCO_HOST_NET_TCP_MESH_H_
