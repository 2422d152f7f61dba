// SPDX-License-Identifier: MIT
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
constexpr size_t kMaxJoinBytes = 64;         // magic, rank, proof: 40

// Rank `rank`'s proof, to rank `target`, that it holds its join key.
Status JoinProof(const Key& joinKey, int32_t rank, int32_t target, Mac* proof) {
  return Hmac(joinKey, {Bytes("cco/1 gda-tcp join"), Bytes(&rank, sizeof(rank)), Bytes(&target, sizeof(target))},
              proof);
}

Status JoinFrame(const Key& joinKey, int32_t rank, int32_t target, std::string* frame) {
  Mac proof;
  CCO_RETURN_IF_ERROR(JoinProof(joinKey, rank, target, &proof));
  WireWriter w;
  w.Put(kJoinMagic).Put(rank).Put(proof);
  *frame = w.bytes();
  return Status::Ok();
}

// Who a connection says it is, and whether it proved it (to rank `me`).
bool ParseJoin(const std::string& frame, const std::vector<Key>& joinKeys, int32_t me, int32_t* rank) {
  WireReader r(frame);
  uint32_t magic = 0;
  Mac proof, expected;
  if (!r.Get(&magic).ok() || !r.Get(rank).ok() || !r.Get(&proof).ok() || !r.AtEnd() || magic != kJoinMagic)
    return false;
  if (*rank < 0 || static_cast<size_t>(*rank) >= joinKeys.size()) return false;
  return JoinProof(joinKeys[*rank], *rank, me, &expected).ok() && MacEqual(proof, expected);
}

// Takes the connection of every remote rank, each once; anything else (a claim without its
// rank's proof, a rank not expected, one already joined) is dropped.
Status AcceptAll(const Key& secret, int rank, const std::vector<bool>& remote, const std::vector<Key>& joinKeys,
                 int listener, Deadline deadline, int64_t handshakeMs, std::vector<Fd>* accepted) {
  size_t expected = 0;
  for (bool r : remote) expected += r ? 1 : 0;
  Acceptor acceptor(listener, secret, AcceptorOptions{kPurpose, handshakeMs, 64, kMaxJoinBytes, false});
  for (size_t joined = 0; joined < expected;) {
    Arrival a;
    CCO_RETURN_IF_ERROR(acceptor.Next(deadline, &a).Prefixed(Fmt("rank ", rank, " waiting for its GDA tcp peers")));
    int32_t q = -1;
    if (!ParseJoin(a.firstFrame, joinKeys, rank, &q) || !remote[q] || (*accepted)[q].valid()) continue;
    (*accepted)[q] = a.channel.TakeFd();
    ++joined;
  }
  return Status::Ok();
}

}  // namespace

Status ListenForTcpMesh(Fd* listener, TcpMeshAnnouncement* mine) {
  *mine = TcpMeshAnnouncement{};
  memset(&mine->address, 0, sizeof(mine->address));
  InterfaceAddress iface;
  SockAddr bound;
  CCO_RETURN_IF_ERROR(BootstrapAddress(&iface));
  CCO_RETURN_IF_ERROR(ListenTcp(iface.address, listener, &bound).Prefixed(Fmt("the GDA tcp listener on ", iface.name)));
  Key joinKey;
  CCO_RETURN_IF_ERROR(RandomBytes(joinKey.bytes.data(), joinKey.bytes.size()).Prefixed("the GDA tcp join key"));
  memcpy(&mine->address.storage, &bound.storage, bound.length);
  mine->address.length = bound.length;
  mine->joinKey = joinKey;
  return Status::Ok();
}

Status CheckListenAddress(const TcpListenAddress& a, int rank, SockAddr* out) {
  const int family = a.storage.ss_family;
  const uint32_t expected = family == AF_INET ? sizeof(sockaddr_in) : family == AF_INET6 ? sizeof(sockaddr_in6) : 0;
  if (expected == 0 || a.length != expected)
    return RemoteError(Fmt("rank ", rank, " announced a malformed listener address"));
  const uint16_t port = family == AF_INET ? reinterpret_cast<const sockaddr_in&>(a.storage).sin_port
                                          : reinterpret_cast<const sockaddr_in6&>(a.storage).sin6_port;
  if (port == 0) return RemoteError(Fmt("rank ", rank, " announced a listener without a port"));
  memset(out, 0, sizeof(*out));
  memcpy(&out->storage, &a.storage, expected);
  out->length = expected;
  return Status::Ok();
}

Status ConnectTcpPeers(const Key& secret, int rank, const std::vector<bool>& remote,
                       const std::vector<SockAddr>& addresses, const std::vector<Key>& joinKeys, int listener,
                       int64_t timeoutMs, std::vector<Fd>* outgoing, std::vector<Fd>* incoming) {
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
      [&] { accepted = AcceptAll(secret, rank, remote, joinKeys, listener, deadline, handshakeMs, incoming); });
  Status local;
  for (int q = 0; q < n && local.ok(); ++q) {
    if (!remote[q]) continue;
    Channel channel;
    const std::string where = Fmt("connecting to rank ", q, " at ", addresses[q].ToString(), " for GDA over tcp");
    std::string join;
    local = JoinFrame(joinKeys[rank], rank, q, &join);
    if (local.ok()) local = ConnectChannel(addresses[q], secret, kPurpose, handshakeMs, deadline, &channel);
    if (local.code() == ccoTimeout)  // its listener took the connection, its acceptor never answered
      local = local.Prefixed(Fmt("rank ", q, " did not complete the handshake (it stopped accepting, or never began)"));
    local = local.Prefixed(where);
    if (local.ok()) local = channel.Send(join, deadline).Prefixed(where);
    if (local.ok()) (*outgoing)[q] = channel.TakeFd();
  }
  if (!local.ok()) shutdown(listener, SHUT_RDWR);  // the acceptor gives up at once
  acceptor.join();
  return local.ok() ? accepted : local;
}

}  // namespace cco
