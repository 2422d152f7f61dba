// SPDX-License-Identifier: MIT
// Mutual challenge-response authentication of one connection under a communicator's
// secret, as pure message logic (no I/O: the blocking and the non-blocking callers, and the
// fuzzer, drive it alike).
//
//   server -> client  hello  (40 B): "CCAH", version, Ns (32 random bytes)
//   client -> server  proof  (72 B): "CCAP", version, Nc (32 random bytes),
//                                    HMAC(K, "cco/1 client" | purpose | Ns | Nc)
//   server -> client  proof  (32 B): HMAC(K, "cco/1 server" | purpose | Ns | Nc)
//                     or the rejection (32 B, "CCAR" and zeros) when the client's proof was
//                     wrong, so an honest rank with a stale id learns it at once
//
// K is the secret of the unique id; `purpose` names the service ("root", "hub", "mesh"),
// so a proof made for one cannot be replayed to another, and the fresh nonces make every
// proof good for one connection only. Neither the secret nor anything that reveals it goes
// on the wire. Both sides then derive one key per direction from K, the purpose and the
// nonces, which authenticate every later frame of the connection (channel.h).
#ifndef CCO_HOST_AUTH_HANDSHAKE_H_
#define CCO_HOST_AUTH_HANDSHAKE_H_

#include <string>

#include "auth/crypto.h"

namespace cco {

constexpr size_t kServerHelloBytes = 40;
constexpr size_t kClientProofBytes = 72;
constexpr size_t kServerProofBytes = 32;

// What a server answers to a wrong proof instead of its own.
std::string RejectionReply();

// The keys of one authenticated connection, seen from one side.
struct SessionKeys {
  Key send;
  Key receive;
};

class ServerHandshake {
 public:
  ServerHandshake(const Key& secret, const char* purpose) : secret_(secret), purpose_(purpose) {}
  // The hello to send first.
  Status Begin(std::string* hello);
  // Checks the client's proof (exactly kClientProofBytes); on success `reply` is this
  // side's proof and `keys` the session keys. A wrong proof is ccoRemoteError.
  Status Answer(const std::string& clientProof, std::string* reply, SessionKeys* keys);

 private:
  Key secret_;
  const char* purpose_;
  Mac serverNonce_{};
};

class ClientHandshake {
 public:
  ClientHandshake(const Key& secret, const char* purpose) : secret_(secret), purpose_(purpose) {}
  // Answers the server's hello (exactly kServerHelloBytes) with this side's proof.
  Status Respond(const std::string& serverHello, std::string* proof);
  // Checks the server's proof (exactly kServerProofBytes); on success, the session keys. A
  // rejection is ccoInvalidUsage: this side holds another id than the server.
  Status Finish(const std::string& serverProof, SessionKeys* keys);

 private:
  Key secret_;
  const char* purpose_;
  Mac serverNonce_{};
  Mac clientNonce_{};
};

}  // namespace cco

#endif  // CCO_HOST_AUTH_HANDSHAKE_H_
