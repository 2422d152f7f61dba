// SPDX-License-Identifier: MIT
//===-- device/handles.hpp - what makes a handle valid ----------*- C++ -*-===//
//
// A kernel is handed a device communicator and windows as plain addresses (abi/devcomm.h,
// abi/window.h). Before a call trusts their fields it checks that they are what they claim:
// this ABI's magic and version (a deregistered window's descriptor is zeroed, a destroyed
// device communicator's magic cleared). One predicate per kind, so every transport refuses
// the same handles.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_HANDLES_HPP_
#define CCO_DEVICE_HANDLES_HPP_

#include <stddef.h>
#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"

namespace cco {

/// Whether every test holds, all evaluated, with no branch between them (unlike &&): a chain
/// of && whose tests each load a field of a handle makes every load wait for the test before
/// it, an L2 trip apiece on nvptx once an acquire or a fence has emptied L1 (every post and
/// wait has one), on the critical path of each post. Fields loaded together and tested with
/// all_hold cost one trip.
template <class... Tests> CCO_DEVICE_API bool all_hold(Tests... tests) {
  return (static_cast<unsigned>(tests) & ...) != 0;
}

/// Computes every value here (arch::compute_here): the loads of a handle's fields go out
/// together where it is made, none left to a first use behind a test.
template <class... Values> CCO_DEVICE_API void compute_all_here(Values&... values) {
  (arch::compute_here(values), ...);
}

/// How a handle reads its device communicator's fields when it is made: as they are (a C++
/// kernel's copy, often a parameter), or, where it lies in global memory (the bitcode's `dc`),
/// by invariant loads of their words: nothing writes a device communicator while a kernel
/// runs, so a kernel that makes many calls may load its fields once, and no acquire or fence
/// of one call makes the next load them again.
struct ReadAsIs {
  template <class T> CCO_DEVICE_API T operator()(const T& field) const { return field; }
};
template <int Bytes> struct WordOf {
  using Type = uint64_t;
};
template <> struct WordOf<4> {
  using Type = uint32_t;
};
struct ReadInvariant {
  template <class T> CCO_DEVICE_API T operator()(const T& field) const {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "a field of 4 or 8 bytes");
    using Word = typename WordOf<sizeof(T)>::Type;
    const Word bits = arch::load_invariant(reinterpret_cast<const Word*>(&field));
    T value;
    __builtin_memcpy(&value, &bits, sizeof(T));
    return value;
  }
};

/// A device communicator of this ABI (magic, version and size).
template <class Read = ReadAsIs> CCO_DEVICE_API bool devcomm_valid(const ccoDevComm& d, Read read = Read()) {
  return all_hold(read(d.magic) == CCO_DEV_COMM_MAGIC, read(d.abiVersion) == CCO_ABI_VERSION,
                  read(d.size) == sizeof(ccoDevComm));
}

/// This rank's copy of the device communicator's resources: its own slice of the flat range,
/// at resourceOffset (the shadows, barrier words and flags the handles keep there).
template <class Read = ReadAsIs> CCO_DEVICE_API uint64_t own_resources(const ccoDevComm& dc, Read read = Read()) {
  return cco_slice_address(read(dc.lsaFlatBase), read(dc.lsaStride), static_cast<uint64_t>(read(dc.lsaRank)),
                           read(dc.resourceOffset));
}

/// The descriptor a window handle names (a handle is its descriptor's device address).
CCO_DEVICE_API const ccoWindowDevice* window_descriptor(ccoWindow_t win) {
  return reinterpret_cast<const ccoWindowDevice*>(win);
}

/// A window descriptor's fields that calls test and use, loaded together before any test
/// (all_hold), by invariant loads: a window must stay registered while a kernel uses it, so
/// nothing writes its descriptor meanwhile, and a kernel that makes many calls on one window
/// may load it once. A null or misaligned handle reads as all zeros: not live, id 0, which no
/// window has.
struct WindowFields {
  uint32_t magic, abiVersion, id;
  int32_t lsaRank, lsaSize, lsaWorldBase;
  uint64_t flatBase, stride, offset, size;
};
CCO_DEVICE_API WindowFields window_fields(const ccoWindowDevice* win) {
  const uint64_t at = reinterpret_cast<uint64_t>(win);
  if (at == 0 || at % alignof(ccoWindowDevice) != 0) return WindowFields{};
  const uint64_t* words = reinterpret_cast<const uint64_t*>(win);
  const auto low = [](uint64_t w) { return static_cast<uint32_t>(w); };
  const auto high = [](uint64_t w) { return static_cast<uint32_t>(w >> 32); };
  // The words of abi/window.h: magic | abiVersion, flatBase, stride, offset, size,
  // lsaRank | lsaSize, rank | lsaWorldBase, id | reserved0 (little-endian, as every target is).
  static_assert(offsetof(ccoWindowDevice, abiVersion) == 4 && offsetof(ccoWindowDevice, lsaSize) == 44 &&
                    offsetof(ccoWindowDevice, lsaWorldBase) == 52 && offsetof(ccoWindowDevice, id) == 56,
                "window_fields reads ccoWindowDevice as words");
  const uint64_t head = arch::load_invariant(words), ranks = arch::load_invariant(words + 5),
                 world = arch::load_invariant(words + 6), id = arch::load_invariant(words + 7);
  return WindowFields{low(head),
                      high(head),
                      low(id),
                      static_cast<int32_t>(low(ranks)),
                      static_cast<int32_t>(high(ranks)),
                      static_cast<int32_t>(high(world)),
                      arch::load_invariant(words + 1),
                      arch::load_invariant(words + 2),
                      arch::load_invariant(words + 3),
                      arch::load_invariant(words + 4)};
}

/// A live window descriptor of this ABI, and `offset` at most its size.
CCO_DEVICE_API bool window_live(const WindowFields& w, uint64_t offset) {
  return all_hold(w.magic == CCO_WINDOW_MAGIC, w.abiVersion == CCO_ABI_VERSION, offset <= w.size);
}
CCO_DEVICE_API bool lsa_window_offset_ok(const ccoWindowDevice* win, uint64_t offset) {
  return window_live(window_fields(win), offset);
}

}  // namespace cco

#endif  // CCO_DEVICE_HANDLES_HPP_
