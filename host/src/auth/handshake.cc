// SPDX-License-Identifier: MIT
#include "auth/handshake.h"

#include <string.h>

namespace cco {
namespace {

constexpr uint32_t kHelloMagic = 0x48414343;  // "CCAH"
constexpr uint32_t kProofMagic = 0x50414343;  // "CCAP"
constexpr uint32_t kVersion = 1;

using Nonce = Mac;  // 32 random bytes

// The proof one side ("client" or "server") gives for a connection.
Status Proof(const Key& secret, const char* side, const char* purpose, const Nonce& ns, const Nonce& nc, Mac* out) {
  return Hmac(secret, {Bytes("cco/1 "), Bytes(side), Bytes("\0", 1), Bytes(purpose), Bytes("\0", 1), ns, nc}, out);
}

Status Keys(const Key& secret, const char* purpose, const Nonce& ns, const Nonce& nc, bool server, SessionKeys* keys) {
  Key c2s, s2c;
  CCO_RETURN_IF_ERROR(DeriveKey(secret, "cco/1 client to server", {Bytes(purpose), ns, nc}, &c2s));
  CCO_RETURN_IF_ERROR(DeriveKey(secret, "cco/1 server to client", {Bytes(purpose), ns, nc}, &s2c));
  keys->send = server ? s2c : c2s;
  keys->receive = server ? c2s : s2c;
  return Status::Ok();
}

void PutWord(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }

uint32_t WordAt(const std::string& s, size_t at) {
  uint32_t v;
  memcpy(&v, s.data() + at, 4);
  return v;
}

void BytesAt(const std::string& s, size_t at, Mac* out) { memcpy(out->data(), s.data() + at, out->size()); }

}  // namespace

std::string RejectionReply() {
  std::string reply(kServerProofBytes, '\0');
  const uint32_t magic = 0x52414343;  // "CCAR"
  memcpy(&reply[0], &magic, 4);
  return reply;
}

Status ServerHandshake::Begin(std::string* hello) {
  CCO_RETURN_IF_ERROR(RandomBytes(serverNonce_.data(), serverNonce_.size()));
  hello->clear();
  PutWord(hello, kHelloMagic);
  PutWord(hello, kVersion);
  hello->append(reinterpret_cast<const char*>(serverNonce_.data()), serverNonce_.size());
  return Status::Ok();
}

Status ServerHandshake::Answer(const std::string& clientProof, std::string* reply, SessionKeys* keys) {
  if (clientProof.size() != kClientProofBytes || WordAt(clientProof, 0) != kProofMagic)
    return RemoteError("a connection did not answer the CCO authentication challenge");
  if (WordAt(clientProof, 4) != kVersion)
    return RemoteError(
        Fmt("a connection speaks CCO authentication version ", WordAt(clientProof, 4), ", not ", kVersion));
  Nonce clientNonce;
  Mac given, expected;
  BytesAt(clientProof, 8, &clientNonce);
  BytesAt(clientProof, 40, &given);
  CCO_RETURN_IF_ERROR(Proof(secret_, "client", purpose_, serverNonce_, clientNonce, &expected));
  if (!MacEqual(given, expected))
    return RemoteError("a connection failed authentication (it does not hold this communicator's unique id)");
  Mac mine;
  CCO_RETURN_IF_ERROR(Proof(secret_, "server", purpose_, serverNonce_, clientNonce, &mine));
  reply->assign(reinterpret_cast<const char*>(mine.data()), mine.size());
  return Keys(secret_, purpose_, serverNonce_, clientNonce, /*server=*/true, keys);
}

Status ClientHandshake::Respond(const std::string& serverHello, std::string* proof) {
  if (serverHello.size() != kServerHelloBytes || WordAt(serverHello, 0) != kHelloMagic)
    return RemoteError("the peer is not a CCO service (no authentication challenge)");
  if (WordAt(serverHello, 4) != kVersion)
    return RemoteError(Fmt("the peer speaks CCO authentication version ", WordAt(serverHello, 4), ", not ", kVersion));
  BytesAt(serverHello, 8, &serverNonce_);
  CCO_RETURN_IF_ERROR(RandomBytes(clientNonce_.data(), clientNonce_.size()));
  Mac mine;
  CCO_RETURN_IF_ERROR(Proof(secret_, "client", purpose_, serverNonce_, clientNonce_, &mine));
  proof->clear();
  PutWord(proof, kProofMagic);
  PutWord(proof, kVersion);
  proof->append(reinterpret_cast<const char*>(clientNonce_.data()), clientNonce_.size());
  proof->append(reinterpret_cast<const char*>(mine.data()), mine.size());
  return Status::Ok();
}

Status ClientHandshake::Finish(const std::string& serverProof, SessionKeys* keys) {
  if (serverProof.size() != kServerProofBytes) return RemoteError("the peer's authentication reply is truncated");
  if (serverProof == RejectionReply())
    return InvalidUsage(
        "the server rejected this rank's proof: the unique id this rank holds is not the one the "
        "server was made with (a stale or foreign id?)");
  Mac given, expected;
  BytesAt(serverProof, 0, &given);
  CCO_RETURN_IF_ERROR(Proof(secret_, "server", purpose_, serverNonce_, clientNonce_, &expected));
  if (!MacEqual(given, expected))
    return RemoteError("the peer failed authentication (it does not hold this communicator's unique id)");
  return Keys(secret_, purpose_, serverNonce_, clientNonce_, /*server=*/false, keys);
}

}  // namespace cco
