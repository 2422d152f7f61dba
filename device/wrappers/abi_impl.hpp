//===-- device/wrappers/abi_impl.hpp - bodies of the ABI wrappers -*- C++ -*-===//
//
// One function per IMPL named in abi/functions.list, taking the ABI's scalar arguments
// (handles as uint64). The generated extern "C" wrappers forward here; keep these thin:
// the logic lives in the header-only device API that C++ kernels use directly.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_WRAPPERS_ABI_IMPL_HPP_
#define CCO_DEVICE_WRAPPERS_ABI_IMPL_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/lsa.hpp"
#include "device/lsa_barrier.hpp"
#include "device/team.hpp"

namespace cco {
namespace abi {

CCO_DEVICE_API const ccoDevComm* devcomm(uint64_t dc) { return reinterpret_cast<const ccoDevComm*>(dc); }
CCO_DEVICE_API const ccoWindowDevice* window(uint64_t win) { return reinterpret_cast<const ccoWindowDevice*>(win); }

CCO_DEVICE_API int32_t abi_version() { return CCO_ABI_VERSION; }

CCO_DEVICE_API uint64_t lsa_ptr(uint64_t win, int32_t peer, uint64_t offset) {
  return lsa_peer_address(window(win), peer, offset);
}

CCO_DEVICE_API int32_t devcomm_rank(uint64_t dc) { return devcomm(dc)->rank; }
CCO_DEVICE_API int32_t devcomm_world_size(uint64_t dc) { return devcomm(dc)->worldSize; }
CCO_DEVICE_API int32_t devcomm_lsa_rank(uint64_t dc) { return devcomm(dc)->lsaRank; }
CCO_DEVICE_API int32_t devcomm_lsa_size(uint64_t dc) { return devcomm(dc)->lsaSize; }

/// A system-scope acq_rel fence: this thread's earlier writes (peers' memory included)
/// are ordered before its later ones for every observer. With leaderOnly, only thread 0
/// of the block fences (the caller synchronises the block around it).
CCO_DEVICE_API int32_t system_fence(int32_t leaderOnly) {
  if (!leaderOnly || arch::thread_id() == 0) arch::fence<scope::System>();
  return 0;
}

CCO_DEVICE_API uint64_t lsa_ptr_world(uint64_t win, int32_t worldPeer, uint64_t offset) {
  return lsa_world_peer_address(window(win), worldPeer, offset);
}
CCO_DEVICE_API uint64_t lsa_local_ptr(uint64_t win, uint64_t offset) { return lsa_local_address(window(win), offset); }

CCO_DEVICE_API int32_t devcomm_aborted(uint64_t dc) { return lsa_barrier_detail::aborted(*devcomm(dc)) ? 1 : 0; }

CCO_DEVICE_API int32_t team_size(uint64_t dc, int32_t team) { return cco::team_size(*devcomm(dc), team); }
CCO_DEVICE_API int32_t team_rank(uint64_t dc, int32_t team) { return cco::team_rank(*devcomm(dc), team); }
CCO_DEVICE_API int32_t team_world_rank(uint64_t dc, int32_t team, int32_t index) {
  return cco::team_world_rank(*devcomm(dc), team, index);
}

// Barrier calls check the index (a bad one touches no memory) and run one session.
CCO_DEVICE_API bool barrier_index_ok(uint64_t dc, int32_t index) {
  return static_cast<uint32_t>(index) < devcomm(dc)->lsaBarrierCount;
}
template <class Coop> CCO_DEVICE_API int32_t lsa_barrier_arrive(uint64_t dc, int32_t index) {
  if (!barrier_index_ok(dc, index)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  ccoLsaBarrierSession<Coop>(Coop(), *devcomm(dc), static_cast<uint32_t>(index)).arrive();
  return CCO_DEVICE_STATUS_OK;
}
template <class Coop> CCO_DEVICE_API int32_t lsa_barrier_wait(uint64_t dc, int32_t index, uint64_t timeoutNs = 0) {
  if (!barrier_index_ok(dc, index)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  return ccoLsaBarrierSession<Coop>(Coop(), *devcomm(dc), static_cast<uint32_t>(index)).wait(timeoutNs);
}
template <class Coop> CCO_DEVICE_API int32_t lsa_barrier_sync(uint64_t dc, int32_t index, uint64_t timeoutNs = 0) {
  if (!barrier_index_ok(dc, index)) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
  return ccoLsaBarrierSession<Coop>(Coop(), *devcomm(dc), static_cast<uint32_t>(index)).sync(timeoutNs);
}

}  // namespace abi
}  // namespace cco

#endif  // CCO_DEVICE_WRAPPERS_ABI_IMPL_HPP_
