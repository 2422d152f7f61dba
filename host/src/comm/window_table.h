// SPDX-License-Identifier: MIT
// The windows of one communicator: the one table that registration fills, deregistration
// empties, the C API reads, and the proxy asks about (WindowLookup) from its own thread.
//
// Locking: only the communicator's own calls change the table, and they run one at a time
// (ccoComm::mu), so they read it without a lock. They change it under `mu_`, which every
// question of the proxy's takes: the proxy never sees a window half added or half removed.
#ifndef CCO_HOST_COMM_WINDOW_TABLE_H_
#define CCO_HOST_COMM_WINDOW_TABLE_H_

#include <stddef.h>
#include <stdint.h>

#include <map>
#include <mutex>

#include "cco/cco.h"
#include "proxy/proxy_context.h"

namespace cco {

struct WindowRecord {
  ccoWindow_t handle = 0;
  uint32_t id = 0;    // ccoWindowDevice.id
  size_t offset = 0;  // window start inside the slice
  size_t size = 0;
  size_t allocOffset = 0;       // the allocation it lies in
  bool ownsAllocation = false;  // made by ccoWindowAllocRegister: deregistration frees it
  bool internal = false;        // the communicator's own (resources): users cannot deregister it,
                                // and no request may name it (Resolve, Covers)
};

class WindowTable final : public WindowLookup {
 public:
  // The communicator's calls (under ccoComm::mu).
  void Add(const WindowRecord& w);
  // False where no window has that handle.
  bool Remove(ccoWindow_t handle);
  void Clear();
  // Null where no window has that handle.
  const WindowRecord* Find(ccoWindow_t handle) const;
  const std::map<ccoWindow_t, WindowRecord>& records() const { return byHandle_; }

  // WindowLookup: from any thread.
  Status Resolve(uint32_t id, uint64_t offset, uint64_t bytes, uint64_t* inSlice) const override;
  bool Covers(uint64_t inSlice, uint64_t bytes) const override;

 private:
  mutable std::mutex mu_;
  std::map<ccoWindow_t, WindowRecord> byHandle_;
  std::map<uint32_t, ccoWindow_t> byId_;  // the proxy's key: descriptors name windows by id
};

}  // namespace cco

#endif  // CCO_HOST_COMM_WINDOW_TABLE_H_
