// SPDX-License-Identifier: MIT
// The 128-byte unique id: where the rendezvous root listens and the communicator's secret,
// a 256-bit random key. Every connection of the communicator proves knowledge of the secret
// (auth/handshake.h); it never appears in a socket name, a file name or on the wire. A
// checksum makes a truncated, corrupted or foreign id an error at ccoCommCreate rather than
// a connection to the wrong place.
#ifndef CCO_HOST_BOOTSTRAP_UNIQUE_ID_H_
#define CCO_HOST_BOOTSTRAP_UNIQUE_ID_H_

#include <stdint.h>

#include <string>

#include "auth/crypto.h"
#include "bootstrap/socket.h"
#include "cco/cco.h"

namespace cco {

struct UniqueIdContents {
  Key secret;
  SockAddr root;
};

// A fresh secret from the kernel's CSPRNG.
Status NewSecret(Key* secret);
void EncodeUniqueId(const UniqueIdContents& contents, ccoUniqueId* id);
Status DecodeUniqueId(const ccoUniqueId& id, UniqueIdContents* contents);

// A public name of the communicator an id makes (hex, 16 digits), derived one way from the
// secret: for process-local bookkeeping and messages. It reveals nothing of the secret.
Status IdTag(const Key& secret, std::string* tag);

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_UNIQUE_ID_H_
