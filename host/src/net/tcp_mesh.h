// SPDX-License-Identifier: MIT
// The tcp backend's connections: for every ordered pair of ranks that the network serves,
// one TCP connection from the first (the initiator of that pair's requests) to the second.
// Each is authenticated with the communicator's secret (the handshake of auth/handshake.h,
// purpose "gda-tcp"), and then introduces itself with its rank and a proof made with that
// rank's join key: a random key each rank announces through the bootstrap, which only the
// communicator's ranks learn. Whoever holds the unique id but is no rank of it can complete
// the handshake, but cannot prove a rank: its claim is dropped, and cannot take the honest
// rank's place (which would stall every rank until the timeout). A connection the target does
// not expect is dropped too.
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

// What a rank announces through the bootstrap (plain data: it travels as bytes): where it
// listens, and the key its connections prove themselves with.
struct TcpMeshAnnouncement {
  TcpListenAddress address;
  Key joinKey;
};

// Opens this rank's listener and draws its join key; *mine (zeroed where this fails) is what
// it announces.
Status ListenForTcpMesh(Fd* listener, TcpMeshAnnouncement* mine);

// Rank `rank`'s announced address, checked: an IPv4 or IPv6 address with a port, nothing else.
Status CheckListenAddress(const TcpListenAddress& a, int rank, SockAddr* out);

// This rank's part once every rank listens. remote[q]: whether the pair (this rank, q) uses
// the network; every rank must pass the same relation. Connects to each such q at
// addresses[q] while accepting q's connection on `listener`, and fills outgoing[q] (this
// rank's requests to q) and incoming[q] (q's requests to this rank), blocking sockets.
// joinKeys[r]: rank r's join key, this rank's own included.
Status ConnectTcpPeers(const Key& secret, int rank, const std::vector<bool>& remote,
                       const std::vector<SockAddr>& addresses, const std::vector<Key>& joinKeys, int listener,
                       int64_t timeoutMs, std::vector<Fd>* outgoing, std::vector<Fd>* incoming);

}  // namespace cco

#endif  // CCO_HOST_NET_TCP_MESH_H_
