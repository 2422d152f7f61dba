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
#include "device/lsa.hpp"

namespace cco {
namespace abi {

inline const ccoDevComm* devcomm(uint64_t dc) { return reinterpret_cast<const ccoDevComm*>(dc); }
inline const ccoWindowDevice* window(uint64_t win) { return reinterpret_cast<const ccoWindowDevice*>(win); }

inline int32_t abi_version() { return CCO_ABI_VERSION; }

inline uint64_t lsa_ptr(uint64_t win, int32_t peer, uint64_t offset) {
  return lsa_peer_address(window(win), peer, offset);
}

inline int32_t devcomm_rank(uint64_t dc) { return devcomm(dc)->rank; }
inline int32_t devcomm_world_size(uint64_t dc) { return devcomm(dc)->worldSize; }
inline int32_t devcomm_lsa_rank(uint64_t dc) { return devcomm(dc)->lsaRank; }
inline int32_t devcomm_lsa_size(uint64_t dc) { return devcomm(dc)->lsaSize; }

/// A system-scope acq_rel fence: this thread's earlier writes (peers' memory included)
/// are ordered before its later ones for every observer. With leaderOnly, only thread 0
/// of the block fences (the caller synchronises the block around it).
inline int32_t system_fence(int32_t leaderOnly) {
  if (!leaderOnly || arch::thread_id() == 0) arch::fence<scope::System>();
  return 0;
}

}  // namespace abi
}  // namespace cco

#endif  // CCO_DEVICE_WRAPPERS_ABI_IMPL_HPP_
