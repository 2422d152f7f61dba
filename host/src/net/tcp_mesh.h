// The tcp backend's connections: for every ordered pair of ranks that the network serves,
// one TCP connection from the first (the initiator of that pair's requests) to the second.
// Each is authenticated with the communicator's secret (the handshake of auth/handshake.h,
// purpose "gda-tcp"), and then introduces itself with its rank; a connection from anyone
// else, or one the target does not expect, is dropped.
//
// Listeners are on CCO_SOCKET_IFNAME's interface (alias MORI_SOCKET_IFNAME), as the
// bootstrap's; the addresses travel through the bootstrap, checked before use.
#ifndef CCO_HOST_NET_TCP_MESH_H_
#define CCO_HOST_NET_TCP_MESH_H_

#include <vector>

#include "bootstrap/socket.h"

struct ccoComm;

namespace cco {

// Collective over the communicator. remote[q]: whether the pair (this rank, q) uses the
// network; every rank must pass the same relation. Fills, for each such q, outgoing[q] (this
// rank's requests to q) and incoming[q] (q's requests to this rank), blocking sockets.
Status ConnectTcpMesh(ccoComm& c, const std::vector<bool>& remote, std::vector<Fd>* outgoing, std::vector<Fd>* incoming);

}  // namespace cco

#endif  // CCO_HOST_NET_TCP_MESH_H_
