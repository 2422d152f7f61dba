#include "bootstrap/unique_id.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/random.h>

#include <chrono>
#include <random>

#include "common/hash.h"

namespace cco {
namespace {

constexpr uint32_t kMagic = 0x49434343;  // "CCCI"
constexpr uint32_t kVersion = 1;

// Layout inside ccoUniqueId::internal.
struct Layout {
  uint32_t magic;
  uint32_t version;
  Nonce nonce;
  uint16_t family;
  uint16_t port;      // network order, as in sockaddr
  uint32_t scope;     // IPv6 scope id
  uint8_t address[16];
  uint8_t reserved[72];
  uint64_t checksum;  // FNV-1a of everything before it
};
static_assert(sizeof(Layout) == CCO_UNIQUE_ID_BYTES, "the id is 128 bytes");

}  // namespace

std::string Nonce::Hex() const { return Fmt(std::hex, words[0], words[1]); }

Nonce RandomNonce() {
  Nonce n;
  if (getrandom(n.words, sizeof(n.words), 0) != static_cast<ssize_t>(sizeof(n.words))) {
    // Entropy pool unavailable: a time- and address-seeded generator still makes
    // collisions between concurrent ids negligible.
    std::mt19937_64 gen(std::chrono::high_resolution_clock::now().time_since_epoch().count() ^
                        reinterpret_cast<uintptr_t>(&n));
    n.words[0] = gen();
    n.words[1] = gen();
  }
  return n;
}

void EncodeUniqueId(const UniqueIdContents& contents, ccoUniqueId* id) {
  Layout l;
  memset(&l, 0, sizeof(l));
  l.magic = kMagic;
  l.version = kVersion;
  l.nonce = contents.nonce;
  l.family = contents.root.storage.ss_family;
  if (l.family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&contents.root.storage);
    l.port = a->sin_port;
    memcpy(l.address, &a->sin_addr, 4);
  } else {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&contents.root.storage);
    l.port = a->sin6_port;
    l.scope = a->sin6_scope_id;
    memcpy(l.address, &a->sin6_addr, 16);
  }
  l.checksum = Fnv1a(&l, offsetof(Layout, checksum));
  memcpy(id->internal, &l, sizeof(l));
}

Status DecodeUniqueId(const ccoUniqueId& id, UniqueIdContents* contents) {
  Layout l;
  memcpy(&l, id.internal, sizeof(l));
  if (l.magic != kMagic)
    return InvalidArgument("the unique id is not a CCO id (bad magic): pass the bytes ccoGetUniqueId made, unchanged");
  if (l.version != kVersion) return InvalidArgument(Fmt("the unique id has format version ", l.version, ", this CCO reads ", kVersion));
  if (l.checksum != Fnv1a(&l, offsetof(Layout, checksum)))
    return InvalidArgument("the unique id is corrupted (checksum mismatch)");
  contents->nonce = l.nonce;
  memset(&contents->root, 0, sizeof(contents->root));
  if (l.family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&contents->root.storage);
    a->sin_family = AF_INET;
    a->sin_port = l.port;
    memcpy(&a->sin_addr, l.address, 4);
    contents->root.length = sizeof(sockaddr_in);
  } else if (l.family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&contents->root.storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = l.port;
    a->sin6_scope_id = l.scope;
    memcpy(&a->sin6_addr, l.address, 16);
    contents->root.length = sizeof(sockaddr_in6);
  } else {
    return InvalidArgument(Fmt("the unique id names address family ", l.family));
  }
  return Status::Ok();
}

}  // namespace cco
