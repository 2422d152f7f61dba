// The 128-byte unique id: where the rendezvous root listens and a random nonce that
// names the communicator-to-be. A checksum makes a truncated, corrupted or foreign id an
// error at ccoCommCreate rather than a connection to the wrong place.
#ifndef CCO_HOST_BOOTSTRAP_UNIQUE_ID_H_
#define CCO_HOST_BOOTSTRAP_UNIQUE_ID_H_

#include <stdint.h>

#include <string>

#include "bootstrap/socket.h"
#include "cco/cco.h"

namespace cco {

struct Nonce {
  uint64_t words[2];
  bool operator==(const Nonce& o) const { return words[0] == o.words[0] && words[1] == o.words[1]; }
  std::string Hex() const;
};

struct UniqueIdContents {
  Nonce nonce;
  SockAddr root;
};

Nonce RandomNonce();
void EncodeUniqueId(const UniqueIdContents& contents, ccoUniqueId* id);
Status DecodeUniqueId(const ccoUniqueId& id, UniqueIdContents* contents);

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_UNIQUE_ID_H_
