// SPDX-License-Identifier: MIT
// The bootstrap's interface choice (bootstrap/interface.h): CCO_SOCKET_IFNAME's matching, and
// loopback only when asked or when nothing else is up.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include <string>
#include <vector>

#include "bootstrap/interface.h"

namespace cco {
namespace {

InterfaceAddress V4(const char* name, uint32_t addr, bool loopback) {
  InterfaceAddress a;
  a.name = name;
  a.loopback = loopback;
  memset(&a.address, 0, sizeof(a.address));
  auto* in = reinterpret_cast<sockaddr_in*>(&a.address.storage);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(addr);
  a.address.length = sizeof(sockaddr_in);
  return a;
}

TEST(Interface, SpecMatching) {
  EXPECT_TRUE(InterfaceMatches("", "eth0"));
  EXPECT_TRUE(InterfaceMatches("eth", "eth0"));
  EXPECT_FALSE(InterfaceMatches("eth", "ib0"));
  EXPECT_TRUE(InterfaceMatches("eth,ib", "ib0"));
  EXPECT_TRUE(InterfaceMatches("^lo", "eth0"));
  EXPECT_FALSE(InterfaceMatches("^lo", "lo"));
  EXPECT_TRUE(InterfaceMatches("=eth0", "eth0"));
  EXPECT_FALSE(InterfaceMatches("=eth", "eth0"));
}

TEST(Interface, ChoosesNonLoopbackUnlessAsked) {
  std::vector<InterfaceAddress> c = {V4("lo", 0x7f000001, true), V4("eth0", 0x0a000001, false)};
  InterfaceAddress chosen;
  ASSERT_TRUE(ChooseInterface(c, "", &chosen).ok());
  EXPECT_EQ(chosen.name, "eth0");
  ASSERT_TRUE(ChooseInterface(c, "lo", &chosen).ok());
  EXPECT_EQ(chosen.name, "lo");
  Status s = ChooseInterface(c, "ib", &chosen);
  EXPECT_EQ(s.code(), ccoInvalidArgument);
  EXPECT_NE(s.message().find("have: lo, eth0"), std::string::npos) << s.message();
  ASSERT_TRUE(ChooseInterface({c[0]}, "", &chosen).ok());  // loopback as the last resort
  EXPECT_EQ(chosen.name, "lo");
}

}  // namespace
}  // namespace cco
