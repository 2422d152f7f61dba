// SPDX-License-Identifier: MIT
//===-- device/lsa.hpp - LSA: peers' memory by load/store -------*- C++ -*-===//
//
// Every LSA rank maps its peers' slices of the communicator's flat virtual range, so a
// peer's copy of a window is plain arithmetic on the window descriptor (abi/window.h).
// CCO moves no data here: the kernel loads and stores through the returned pointer.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_LSA_HPP_
#define CCO_DEVICE_LSA_HPP_

#include <stddef.h>
#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/handles.hpp"

namespace cco {

/// Address of byte `offset` of LSA rank `peer`'s copy of the window, or 0 where `peer` is
/// not an LSA rank (0 <= peer < lsaSize), the handle names no live window, or `offset` lies
/// past the window's end (the end itself is allowed: one-past-the-end pointers stay
/// expressible).
CCO_DEVICE_API uint64_t lsa_peer_address(const WindowFields& w, int32_t peer, uint64_t offset) {
  if (!all_hold(window_live(w, offset), static_cast<uint32_t>(peer) < static_cast<uint32_t>(w.lsaSize))) return 0;
  return cco_slice_address(w.flatBase, w.stride, static_cast<uint64_t>(peer), w.offset) + offset;
}
CCO_DEVICE_API uint64_t lsa_peer_address(const ccoWindowDevice* win, int32_t peer, uint64_t offset) {
  return lsa_peer_address(window_fields(win), peer, offset);
}

/// The same for a peer named by its world rank: 0 where that rank is not in this rank's
/// LSA team (another node), or is not a rank at all.
CCO_DEVICE_API uint64_t lsa_world_peer_address(const ccoWindowDevice* win, int32_t worldPeer, uint64_t offset) {
  const WindowFields w = window_fields(win);
  const int64_t peer = static_cast<int64_t>(worldPeer) - w.lsaWorldBase;  // no int32 overflow
  if (peer < 0 || peer >= w.lsaSize) return 0;                            // (a null handle: size 0)
  return lsa_peer_address(w, static_cast<int32_t>(peer), offset);
}

/// This rank's own copy of the window (0 as for lsa_peer_address).
CCO_DEVICE_API uint64_t lsa_local_address(const ccoWindowDevice* win, uint64_t offset) {
  const WindowFields w = window_fields(win);
  if (!window_live(w, offset)) return 0;
  return cco_slice_address(w.flatBase, w.stride, static_cast<uint64_t>(w.lsaRank), w.offset) + offset;
}

template <class T> CCO_DEVICE_API T* lsa_peer_ptr(const ccoWindowDevice* win, int32_t peer, uint64_t offset) {
  return reinterpret_cast<T*>(lsa_peer_address(win, peer, offset));
}

/// `bytes` from `offset` lie inside the window (wrap-safe), and the window is a live one of the
/// communicator whose flat range starts at `flatBase`: a window of another communicator has
/// other addresses, and a deregistered one's descriptor is zeroed.
CCO_DEVICE_API bool window_holds(const WindowFields& w, uint64_t flatBase, uint64_t stride, uint64_t offset,
                                 uint64_t bytes) {
  return all_hold(window_live(w, offset), w.flatBase == flatBase, w.stride == stride, bytes <= w.size - offset);
}
CCO_DEVICE_API bool window_holds(uint64_t flatBase, uint64_t stride, ccoWindow_t handle, uint64_t offset,
                                 uint64_t bytes) {
  return window_holds(window_fields(window_descriptor(handle)), flatBase, stride, offset, bytes);
}

}  // namespace cco

/// The guide's spelling, for host code and kernels alike (cco/cco.hpp, device/cco_device.hpp):
/// the load/store address of byte `offset` of LSA rank `peerLsaRank`'s copy of window `win`,
/// or NULL where that rank is not an LSA peer, or `offset` lies past the window's end.
CCO_DEVICE_API void* ccoGetLsaPeerPtr(ccoWindow_t win, int peerLsaRank, size_t offset) {
  return reinterpret_cast<void*>(cco::lsa_peer_address(cco::window_descriptor(win), peerLsaRank, offset));
}

#endif  // CCO_DEVICE_LSA_HPP_
