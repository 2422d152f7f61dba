// SPDX-License-Identifier: MIT
#include "memory/local_handles.h"

#include <tuple>

#include "common/process_registry.h"

namespace cco {
namespace local_handles {
namespace {

struct Entry {
  MemHandle handle;
  size_t size;
};

ProcessRegistry<Key, Entry>& Table() {
  static auto* table = new ProcessRegistry<Key, Entry>();  // never destroyed
  return *table;
}

}  // namespace

bool Key::operator<(const Key& o) const {
  return std::tie(comm, registration, rank) < std::tie(o.comm, o.registration, o.rank);
}

void Publish(const Key& key, MemHandle handle, size_t size) { Table().Publish(key, Entry{handle, size}); }

bool Find(const Key& key, MemHandle* handle, size_t* size) {
  Entry entry;
  if (!Table().Find(key, &entry)) return false;
  *handle = entry.handle;
  *size = entry.size;
  return true;
}

void Withdraw(const Key& key) { Table().Withdraw(key); }

}  // namespace local_handles
}  // namespace cco
