// SPDX-License-Identifier: MIT
#include "api/comm_registry.h"

#include <stdint.h>

#include <map>
#include <mutex>

namespace cco {
namespace {

std::mutex g_mu;
uint64_t g_serial = 0;  // handles issued so far
std::map<uint64_t, std::shared_ptr<ccoComm>>& Live() {
  static auto* live = new std::map<uint64_t, std::shared_ptr<ccoComm>>();
  return *live;
}

// Odd low bits: a handle is never mistaken for (or usable as) an aligned address.
uint64_t HandleOf(uint64_t serial) { return (serial << 4) | 0x5; }
uint64_t HandleValue(const ccoComm* handle) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)); }

}  // namespace

ccoComm* RegisterComm(const std::shared_ptr<ccoComm>& comm) {
  std::lock_guard<std::mutex> lock(g_mu);
  comm->handle = HandleOf(++g_serial);
  Live()[comm->handle] = comm;
  return reinterpret_cast<ccoComm*>(static_cast<uintptr_t>(comm->handle));
}

std::shared_ptr<ccoComm> LookupComm(const ccoComm* handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Live().find(HandleValue(handle));
  return it == Live().end() ? nullptr : it->second;
}

std::shared_ptr<ccoComm> UnregisterComm(const ccoComm* handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Live().find(HandleValue(handle));
  if (it == Live().end()) return nullptr;
  auto comm = it->second;
  Live().erase(it);
  return comm;
}

}  // namespace cco
