// SPDX-License-Identifier: MIT
#include "memory/local_handles.h"

#include <map>
#include <mutex>
#include <tuple>

namespace cco {
namespace local_handles {
namespace {

struct Entry {
  MemHandle handle;
  size_t size;
};

std::mutex g_mu;
std::map<Key, Entry>& Table() {
  static auto* table = new std::map<Key, Entry>();
  return *table;
}

}  // namespace

bool Key::operator<(const Key& o) const {
  return std::tie(comm, registration, rank) < std::tie(o.comm, o.registration, o.rank);
}

void Publish(const Key& key, MemHandle handle, size_t size) {
  std::lock_guard<std::mutex> lock(g_mu);
  Table()[key] = Entry{handle, size};
}

bool Find(const Key& key, MemHandle* handle, size_t* size) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Table().find(key);
  if (it == Table().end()) return false;
  *handle = it->second.handle;
  *size = it->second.size;
  return true;
}

void Withdraw(const Key& key) {
  std::lock_guard<std::mutex> lock(g_mu);
  Table().erase(key);
}

}  // namespace local_handles
}  // namespace cco
