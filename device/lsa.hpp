//===-- device/lsa.hpp - LSA: peers' memory by load/store -------*- C++ -*-===//
//
// Every LSA rank maps its peers' slices of the communicator's flat virtual range, so a
// peer's copy of a window is plain arithmetic on the window descriptor (abi/window.h).
// CCO moves no data here: the kernel loads and stores through the returned pointer.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_LSA_HPP_
#define CCO_DEVICE_LSA_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"

namespace cco {

/// Address of byte `offset` of LSA rank `peer`'s copy of the window, or 0 where `peer` is
/// not an LSA rank (0 <= peer < lsaSize). `offset` is not checked against the window size,
/// so one-past-the-end pointers stay expressible.
CCO_DEVICE_API uint64_t lsa_peer_address(const ccoWindowDevice* win, int32_t peer, uint64_t offset) {
  if (static_cast<uint32_t>(peer) >= static_cast<uint32_t>(win->lsaSize)) return 0;
  return win->flatBase + static_cast<uint64_t>(peer) * win->stride + win->offset + offset;
}

/// The same for a peer named by its world rank: 0 where that rank is not in this rank's
/// LSA team (another node), or is not a rank at all.
CCO_DEVICE_API uint64_t lsa_world_peer_address(const ccoWindowDevice* win, int32_t worldPeer, uint64_t offset) {
  return lsa_peer_address(win, worldPeer - win->lsaWorldBase, offset);
}

/// This rank's own copy of the window.
CCO_DEVICE_API uint64_t lsa_local_address(const ccoWindowDevice* win, uint64_t offset) {
  return win->flatBase + static_cast<uint64_t>(win->lsaRank) * win->stride + win->offset + offset;
}

template <class T> CCO_DEVICE_API T* lsa_peer_ptr(const ccoWindowDevice* win, int32_t peer, uint64_t offset) {
  return reinterpret_cast<T*>(lsa_peer_address(win, peer, offset));
}

}  // namespace cco

#endif  // CCO_DEVICE_LSA_HPP_
