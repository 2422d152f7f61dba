// SPDX-License-Identifier: MIT
//===-- device/coop.hpp - cooperation scopes --------------------*- C++ -*-===//
//
// Which threads take part in one device call, and how they split its work:
//   ccoCoopThread  one thread alone
//   ccoCoopWarp    every thread of one warp / wavefront, all of which must make the call;
//                  the warp must be whole (a block whose size is a multiple of the warp's:
//                  its barrier and vote name every lane, and a lane that does not exist
//                  never arrives)
//   ccoCoopBlock   every thread of the block, all of which must make the call
// thread_rank() / size() place the caller in the group, sync() is the group's barrier;
// any(p) is a barrier that also tells every thread whether any passed true, exactly where
// kVotes (a block has no such barrier on amdgcn: there any() is sync() and the caller's own p).
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_COOP_HPP_
#define CCO_DEVICE_COOP_HPP_

#include <stdint.h>

#include "abi/enums.h"
#include "device/arch/arch.h"

struct ccoCoopThread {
  static constexpr ccoCoopScope kScope = CCO_COOP_THREAD;
  CCO_DEVICE_API uint32_t thread_rank() const { return 0; }
  CCO_DEVICE_API uint32_t size() const { return 1; }
  CCO_DEVICE_API void sync() const {}
  static constexpr bool kVotes = true;
  CCO_DEVICE_API bool any(bool p) const { return p; }
};

struct ccoCoopWarp {
  static constexpr ccoCoopScope kScope = CCO_COOP_WARP;
  CCO_DEVICE_API uint32_t thread_rank() const { return cco::arch::lane_id(); }
  CCO_DEVICE_API uint32_t size() const { return cco::arch::warp_size(); }
  CCO_DEVICE_API void sync() const { cco::arch::warp_sync_all(); }
  static constexpr bool kVotes = true;
  CCO_DEVICE_API bool any(bool p) const {
    cco::arch::warp_sync_all();  // memory ordering among the lanes
    return cco::arch::ballot_all(p) != 0;
  }
};

struct ccoCoopBlock {
  static constexpr ccoCoopScope kScope = CCO_COOP_BLOCK;
  CCO_DEVICE_API uint32_t thread_rank() const { return cco::arch::thread_id(); }
  CCO_DEVICE_API uint32_t size() const { return cco::arch::block_size(); }
  CCO_DEVICE_API void sync() const { cco::arch::block_sync(); }
  static constexpr bool kVotes = cco::arch::kHasBlockVote;
  CCO_DEVICE_API bool any(bool p) const { return cco::arch::block_sync_or(p); }
};

namespace cco {

/// The worst (largest) ccoDeviceStatus the group's threads pass (0 to 3, as every call
/// returns), given to every thread: a call that failed in one thread fails in all, so a DSL
/// that reports thread 0's value (as Triton does for a scalar) reports it too. A barrier of
/// the group: one vote where every thread passed OK, one more per status value when one did
/// not. A group that cannot vote (an amdgcn block) gets the caller's own status back.
template <class Coop> CCO_DEVICE_API int32_t worst_status(const Coop& coop, int32_t mine) {
  if (!coop.any(mine != CCO_DEVICE_STATUS_OK)) return CCO_DEVICE_STATUS_OK;
  if (!Coop::kVotes) return mine;
  int32_t worst = CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  while (worst > CCO_DEVICE_STATUS_TIMEOUT && !coop.any(mine >= worst)) --worst;
  return worst;  // TIMEOUT when no thread passed more: one passed something other than OK
}

}  // namespace cco

#endif  // CCO_DEVICE_COOP_HPP_
