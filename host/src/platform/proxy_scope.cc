// SPDX-License-Identifier: MIT
#include "platform/proxy_scope.h"

#include "common/env.h"

namespace cco {
namespace {

thread_local int scopeDepth = 0;  // scopes nest: Attach may run inside another proxy call

}  // namespace

ProxyWorkScope::ProxyWorkScope() { ++scopeDepth; }
ProxyWorkScope::~ProxyWorkScope() { --scopeDepth; }

bool ProxyWorkScope::Active() { return scopeDepth > 0; }

bool ProxyWorkScope::OwnContext() {
  static const bool own = env::Flag("CCO_PROXY_CONTEXT", true);
  return own;
}

}  // namespace cco
