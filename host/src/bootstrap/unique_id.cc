// SPDX-License-Identifier: MIT
#include "bootstrap/unique_id.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/hash.h"

namespace cco {
namespace {

constexpr uint32_t kMagic = 0x49434343;  // "CCCI"
constexpr uint32_t kVersion = 2;         // 2: a 256-bit secret instead of a public nonce

// Layout inside ccoUniqueId::internal.
struct Layout {
  uint32_t magic;
  uint32_t version;
  uint8_t secret[32];
  uint16_t family;
  uint16_t port;   // network order, as in sockaddr
  uint32_t scope;  // IPv6 scope id
  uint8_t address[16];
  uint8_t reserved[56];
  uint64_t checksum;  // FNV-1a of everything before it (catches accidents, not attacks)
};
static_assert(sizeof(Layout) == CCO_UNIQUE_ID_BYTES, "the id is 128 bytes");

}  // namespace

Status NewSecret(Key* secret) { return RandomBytes(secret->bytes.data(), secret->bytes.size()); }

Status IdTag(const Key& secret, std::string* tag) {
  Mac mac;
  CCO_RETURN_IF_ERROR(Hmac(secret, {Bytes("cco/1 id tag")}, &mac));
  char text[17];
  for (int i = 0; i < 8; ++i) snprintf(text + 2 * i, 3, "%02x", mac[i]);
  *tag = text;
  return Status::Ok();
}

void EncodeUniqueId(const UniqueIdContents& contents, ccoUniqueId* id) {
  Layout l;
  memset(&l, 0, sizeof(l));
  l.magic = kMagic;
  l.version = kVersion;
  memcpy(l.secret, contents.secret.bytes.data(), sizeof(l.secret));
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
  explicit_bzero(&l, sizeof(l));  // no copy of the secret left on this stack frame
}

Status DecodeUniqueId(const ccoUniqueId& id, UniqueIdContents* contents) {
  Layout l;
  memcpy(&l, id.internal, sizeof(l));
  if (l.magic != kMagic)
    return InvalidArgument("the unique id is not a CCO id (bad magic): pass the bytes ccoGetUniqueId made, unchanged");
  if (l.version != kVersion)
    return InvalidArgument(Fmt("the unique id has format version ", l.version, ", this CCO reads ", kVersion));
  if (l.checksum != Fnv1a(&l, offsetof(Layout, checksum)))
    return InvalidArgument("the unique id is corrupted (checksum mismatch)");
  memcpy(contents->secret.bytes.data(), l.secret, sizeof(l.secret));
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
  explicit_bzero(&l, sizeof(l));
  return Status::Ok();
}

}  // namespace cco
