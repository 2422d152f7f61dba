#include "net/tcp_mesh.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <thread>

#include "bootstrap/acceptor.h"
#include "bootstrap/interface.h"
#include "bootstrap/wire.h"
#include "comm/agree.h"
#include "comm/communicator.h"

namespace cco {
namespace {

constexpr const char* kPurpose = "gda-tcp";
constexpr uint32_t kJoinMagic = 0x4a4e4343;  // "CCNJ"
constexpr size_t kMaxJoinBytes = 64;

// A listener's address as every rank sees it.
struct ListenAddress {
  sockaddr_storage storage;
  uint32_t length;
  uint32_t reserved;
};

// A peer's address, checked: an IPv4 or IPv6 address with a port, nothing else.
Status CheckAddress(const ListenAddress& a, int rank, SockAddr* out) {
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
Status AcceptAll(ccoComm& c, const std::vector<bool>& remote, int listener, Deadline deadline, int64_t handshakeMs,
                 std::vector<Fd>* accepted) {
  size_t expected = 0;
  for (bool r : remote) expected += r ? 1 : 0;
  Acceptor acceptor(listener, c.secret, AcceptorOptions{kPurpose, handshakeMs, 64, kMaxJoinBytes, false});
  for (size_t joined = 0; joined < expected;) {
    Arrival a;
    CCO_RETURN_IF_ERROR(acceptor.Next(deadline, &a).Prefixed(Fmt("rank ", c.topo.rank, " waiting for its GDA tcp peers")));
    int32_t q = -1;
    if (!ParseJoin(a.firstFrame, &q) || q < 0 || q >= c.topo.nRanks || !remote[q] || (*accepted)[q].valid()) continue;
    (*accepted)[q] = a.channel.TakeFd();
    ++joined;
  }
  return Status::Ok();
}

}  // namespace

Status ConnectTcpMesh(ccoComm& c, const std::vector<bool>& remote, std::vector<Fd>* outgoing, std::vector<Fd>* incoming) {
  const int n = c.topo.nRanks;
  InterfaceAddress iface;
  Fd listener;
  SockAddr bound;
  Status local = BootstrapAddress(&iface);
  if (local.ok()) local = ListenTcp(iface.address, &listener, &bound).Prefixed(Fmt("the GDA tcp listener on ", iface.name));
  ListenAddress mine;
  memset(&mine, 0, sizeof(mine));
  if (local.ok()) {
    memcpy(&mine.storage, &bound.storage, bound.length);
    mine.length = bound.length;
  }
  std::vector<ListenAddress> all;
  CCO_RETURN_IF_ERROR(AgreeOn(c, "GDA tcp listeners", local, mine, &all));  // and every rank's address
  std::vector<SockAddr> addresses(n);
  for (int q = 0; q < n; ++q)
    if (remote[q]) CCO_RETURN_IF_ERROR(CheckAddress(all[q], q, &addresses[q]));

  outgoing->clear();
  incoming->clear();
  outgoing->resize(n);
  incoming->resize(n);
  // Accepting on a thread of its own while connecting: no order of connects can deadlock.
  const Deadline deadline = DeadlineIn(c.timeoutMs);
  const int64_t handshakeMs = std::min<int64_t>(c.timeoutMs, 10000);
  Status accepted;
  std::thread acceptor(
      [&] { accepted = AcceptAll(c, remote, listener.get(), deadline, handshakeMs, incoming); });
  local = Status::Ok();
  for (int q = 0; q < n && local.ok(); ++q) {
    if (!remote[q]) continue;
    Channel channel;
    const std::string where = Fmt("connecting to rank ", q, " at ", addresses[q].ToString(), " for GDA over tcp");
    local = ConnectChannel(addresses[q], c.secret, kPurpose, handshakeMs, deadline, &channel).Prefixed(where);
    if (local.ok()) local = channel.Send(JoinFrame(c.topo.rank), deadline).Prefixed(where);
    if (local.ok()) (*outgoing)[q] = channel.TakeFd();
  }
  if (!local.ok()) shutdown(listener.get(), SHUT_RDWR);  // the acceptor gives up at once
  acceptor.join();
  if (local.ok()) local = accepted;
  return Agree(c, "GDA tcp connections", local);
}

}  // namespace cco
