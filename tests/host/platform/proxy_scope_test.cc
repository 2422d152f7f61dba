// SPDX-License-Identifier: MIT
// ProxyWorkScope: which threads' platform calls go to the proxy's own context.
#include "platform/proxy_scope.h"

#include <stdlib.h>

#include <thread>

#include <gtest/gtest.h>

namespace cco {
namespace {

TEST(ProxyWorkScopeTest, HoldsForItsThreadWhileAnyScopeLives) {
  EXPECT_FALSE(ProxyWorkScope::Active());
  {
    ProxyWorkScope outer;
    EXPECT_TRUE(ProxyWorkScope::Active());
    {
      ProxyWorkScope inner;  // Attach inside another proxy call
      EXPECT_TRUE(ProxyWorkScope::Active());
    }
    EXPECT_TRUE(ProxyWorkScope::Active()) << "an inner scope's end must not end the outer one";
    bool otherThread = true;
    std::thread([&] { otherThread = ProxyWorkScope::Active(); }).join();
    EXPECT_FALSE(otherThread) << "a scope is the thread's own";
  }
  EXPECT_FALSE(ProxyWorkScope::Active());
}

TEST(ProxyWorkScopeTest, OwnContextIsOnUnlessSwitchedOff) {
  if (getenv("CCO_PROXY_CONTEXT") != nullptr) GTEST_SKIP() << "CCO_PROXY_CONTEXT is set here";
  EXPECT_TRUE(ProxyWorkScope::OwnContext());
}

}  // namespace
}  // namespace cco
