#include "api/comm_registry.h"

#include <map>
#include <mutex>

namespace cco {
namespace {

std::mutex g_mu;
std::map<const ccoComm*, std::shared_ptr<ccoComm>>& Live() {
  static auto* live = new std::map<const ccoComm*, std::shared_ptr<ccoComm>>();
  return *live;
}

}  // namespace

void RegisterComm(const std::shared_ptr<ccoComm>& comm) {
  std::lock_guard<std::mutex> lock(g_mu);
  Live()[comm.get()] = comm;
}

std::shared_ptr<ccoComm> LookupComm(const ccoComm* handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Live().find(handle);
  return it == Live().end() ? nullptr : it->second;
}

std::shared_ptr<ccoComm> UnregisterComm(const ccoComm* handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Live().find(handle);
  if (it == Live().end()) return nullptr;
  auto comm = it->second;
  Live().erase(it);
  return comm;
}

}  // namespace cco
