// SPDX-License-Identifier: MIT
// The unique id's encoding (bootstrap/unique_id.h): a round trip, corruption anywhere refused,
// fresh secrets, and the public tag derived from a secret.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <string>

#include "bootstrap/unique_id.h"

namespace cco {
namespace {

// An IPv4 socket address, as the rendezvous root's address in an id.
SockAddr Ipv4(uint32_t addr, uint16_t port) {
  SockAddr a;
  memset(&a, 0, sizeof(a));
  auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(addr);
  in->sin_port = htons(port);
  a.length = sizeof(sockaddr_in);
  return a;
}

TEST(UniqueId, RoundTripAndCorruption) {
  UniqueIdContents in;
  ASSERT_TRUE(NewSecret(&in.secret).ok());
  in.root = Ipv4(0x0a010203, 4242);
  ccoUniqueId id;
  EncodeUniqueId(in, &id);
  UniqueIdContents out;
  ASSERT_TRUE(DecodeUniqueId(id, &out).ok());
  EXPECT_EQ(out.secret.bytes, in.secret.bytes);
  EXPECT_EQ(out.root.ToString(), "10.1.2.3:4242");
  for (size_t byte : {0u, 9u, 30u, 100u, 127u}) {
    ccoUniqueId bad = id;
    bad.internal[byte] ^= 1;
    EXPECT_EQ(DecodeUniqueId(bad, &out).code(), ccoInvalidArgument) << "byte " << byte;
  }
  UniqueIdContents other;
  ASSERT_TRUE(NewSecret(&other.secret).ok());
  EXPECT_NE(other.secret.bytes, in.secret.bytes);
  // The public tag is stable for one secret, differs between secrets, and is not the secret.
  std::string tag1, tag2, tag3;
  ASSERT_TRUE(IdTag(in.secret, &tag1).ok());
  ASSERT_TRUE(IdTag(in.secret, &tag2).ok());
  ASSERT_TRUE(IdTag(other.secret, &tag3).ok());
  EXPECT_EQ(tag1, tag2);
  EXPECT_NE(tag1, tag3);
  EXPECT_EQ(tag1.size(), 16u);
}

}  // namespace
}  // namespace cco
