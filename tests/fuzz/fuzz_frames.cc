// SPDX-License-Identifier: MIT
// libFuzzer target: what an unauthenticated or authenticated peer can put on a CCO
// connection: the three handshake messages in both roles, a frame header, and a whole
// frame checked under a session key. Nothing may be accepted without the right key.
#include <stddef.h>
#include <stdint.h>

#include <cstdlib>
#include <string>

#include "auth/handshake.h"
#include "bootstrap/channel.h"

using namespace cco;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  Key secret;
  secret.bytes.fill(0x42);
  std::string out;
  SessionKeys keys;
  // The server's view: the client's proof (it cannot be right: the nonce is fresh).
  ServerHandshake server(secret, "root");
  if (!server.Begin(&out).ok()) abort();
  if (server.Answer(input.substr(0, kClientProofBytes), &out, &keys).ok()) abort();
  // The client's view: any hello, then any proof (a forged proof must fail).
  ClientHandshake client(secret, "root");
  if (client.Respond(input.substr(0, kServerHelloBytes), &out).ok()) {
    const std::string rest = input.size() > kServerHelloBytes ? input.substr(kServerHelloBytes) : "";
    if (client.Finish(rest.substr(0, kServerProofBytes), &keys).ok()) abort();
  }
  // A frame header and a whole frame under a key the input does not know.
  uint64_t length = 0;
  if (input.size() >= kFrameHeaderBytes && ParseFrameHeader(input.data(), 4096, &length).ok() && length > 4096) abort();
  Channel reader(Fd(), SessionKeys{secret, secret});
  std::string payload;
  if (reader.Open(input, 4096, &payload).ok()) abort();
  return 0;
}
