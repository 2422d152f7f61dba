#include "net/tcp_mesh.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>
#include <thread>

#include "bootstrap/acceptor.h"
#include "bootstrap/interface.h"
#include "bootstrap/wire.h"

namespace cco {
namespace {

constexpr const char* kPurpose = "gda-tcp";
constexpr uint32_t kJoinMagic = 0x4a4e4343;  // "CCNJ"
constexpr size_t kMaxJoinBytes = 64;

std::string JoinFrame(int rank) {
  WireWriter w;
  w.Put(kJoinMagic).Put(static_cast<int32_t>(rank));
  return w.bytes();
}

// Who a connection says it is.
bool ParseJoin(const std::string& frame, int32_t* rank) {
  WireReader r(frame);
  uint32_t magic = 0;
  return r.Get(&magic).ok() && r.Get(rank).ok() && r.AtEnd() && magic == kJoinMagic;
}

// Takes the connection of every remote rank, each once; anything else is dropped.
Status AcceptAll(const Key& secret, int rank, const std::vector<bool>& remote, int listener, Deadline deadline,
                 int64_t handshakeMs, std::vector<Fd>* accepted) {
  const int n = static_cast<int>(remote.size());
  size_t expected = 0;
  for (bool r : remote) expected += r ? 1 : 0;
  Acceptor acceptor(listener, secret, AcceptorOptions{kPurpose, handshakeMs, 64, kMaxJoinBytes, false});
  for (size_t joined = 0; joined < expected;) {
    Arrival a;
    CCO_RETURN_IF_ERROR(acceptor.Next(deadline, &a).Prefixed(Fmt("rank ", rank, " waiting for its GDA tcp peers")));
    int32_t q = -1;
    if (!ParseJoin(a.firstFrame, &q) || q < 0 || q >= n || !remote[q] || (*accepted)[q].valid()) continue;
    (*accepted)[q] = a.channel.TakeFd();
    ++joined;
  }
  return Status::Ok();
}

}  // namespace

Status ListenForTcpMesh(Fd* listener, TcpListenAddress* address) {
  memset(address, 0, sizeof(*address));
  InterfaceAddress iface;
  SockAddr bound;
  CCO_RETURN_IF_ERROR(BootstrapAddress(&iface));
  CCO_RETURN_IF_ERROR(ListenTcp(iface.address, listener, &bound).Prefixed(Fmt("the GDA tcp listener on ", iface.name)));
  memcpy(&address->storage, &bound.storage, bound.length);
  address->length = bound.length;
  return Status::Ok();
}

Status CheckListenAddress(const TcpListenAddress& a, int rank, SockAddr* out) {
  const int family = a.storage.ss_family;
  const uint32_t expected = family == AF_INET ? sizeof(sockaddr_in) : family == AF_INET6 ? sizeof(sockaddr_in6) : 0;
  if (expected == 0 || a.length != expected) return RemoteError(Fmt("rank ", rank, " announced a malformed listener address"));
  const uint16_t port = family == AF_INET ? reinterpret_cast<const sockaddr_in&>(a.storage).sin_port
                                          : reinterpret_cast<const sockaddr_in6&>(a.storage).sin6_port;
  if (port == 0) return RemoteError(Fmt("rank ", rank, " announced a listener without a port"));
  memset(out, 0, sizeof(*out));
  memcpy(&out->storage, &a.storage, expected);
  out->length = expected;
  return Status::Ok();
}

Status ConnectTcpPeers(const Key& secret, int rank, const std::vector<bool>& remote,
                       const std::vector<SockAddr>& addresses, int listener, int64_t timeoutMs,
                       std::vector<Fd>* outgoing, std::vector<Fd>* incoming) {
  const int n = static_cast<int>(remote.size());
  outgoing->clear();
  incoming->clear();
  outgoing->resize(n);
  incoming->resize(n);
  // Accepting on a thread of its own while connecting: no order of connects can deadlock.
  const Deadline deadline = DeadlineIn(timeoutMs);
  const int64_t handshakeMs = std::min<int64_t>(timeoutMs, 10000);
  Status accepted;
  std::thread acceptor(
      [&] { accepted = AcceptAll(secret, rank, remote, listener, deadline, handshakeMs, incoming); });
  Status local;
  for (int q = 0; q < n && local.ok(); ++q) {
    if (!remote[q]) continue;
    Channel channel;
    const std::string where = Fmt("connecting to rank ", q, " at ", addresses[q].ToString(), " for GDA over tcp");
    local = ConnectChannel(addresses[q], secret, kPurpose, handshakeMs, deadline, &channel).Prefixed(where);
    if (local.ok()) local = channel.Send(JoinFrame(rank), deadline).Prefixed(where);
    if (local.ok()) (*outgoing)[q] = channel.TakeFd();
  }
  if (!local.ok()) shutdown(listener, SHUT_RDWR);  // the acceptor gives up at once
  acceptor.join();
  return local.ok() ? accepted : local;
}

}  // namespace cco
