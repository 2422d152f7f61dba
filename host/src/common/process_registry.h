// SPDX-License-Identifier: MIT
// What ranks that share this process publish for one another before an agreement round, and
// find after it: a window's physical memory (memory/local_handles.h), the host words' mapping
// (comm/host_words.h). Ranks in one process then share one object (a handle, a mapping) where
// ranks in other processes pass a descriptor over the mesh. One mutex; the table lives as long
// as the process (a static of the user, never destroyed: ranks may leave after exit starts).
#ifndef CCO_HOST_COMMON_PROCESS_REGISTRY_H_
#define CCO_HOST_COMMON_PROCESS_REGISTRY_H_

#include <map>
#include <mutex>
#include <utility>

namespace cco {

template <class Key, class Value> class ProcessRegistry {
 public:
  // Publishes `value` under `key`, replacing what was there.
  void Publish(const Key& key, Value value) {
    std::lock_guard<std::mutex> lock(mu_);
    table_[key] = std::move(value);
  }
  // Copies what was published under `key` into *value; false where nothing was.
  bool Find(const Key& key, Value* value) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = table_.find(key);
    if (it == table_.end()) return false;
    *value = it->second;
    return true;
  }
  void Withdraw(const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    table_.erase(key);
  }

 private:
  mutable std::mutex mu_;
  std::map<Key, Value> table_;
};

}  // namespace cco

#endif  // CCO_HOST_COMMON_PROCESS_REGISTRY_H_
