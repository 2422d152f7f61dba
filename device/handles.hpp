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

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"

namespace cco {

/// A device communicator of this ABI (magic, version and size).
CCO_DEVICE_API bool devcomm_valid(const ccoDevComm& d) {
  return d.magic == CCO_DEV_COMM_MAGIC && d.abiVersion == CCO_ABI_VERSION && d.size == sizeof(ccoDevComm);
}

/// A live window descriptor of this ABI, and `offset` at most its size. A window must stay
/// registered while a kernel uses it: each thread of a group reads its descriptor.
CCO_DEVICE_API bool lsa_window_offset_ok(const ccoWindowDevice* win, uint64_t offset) {
  return win != nullptr && win->magic == CCO_WINDOW_MAGIC && win->abiVersion == CCO_ABI_VERSION && offset <= win->size;
}

}  // namespace cco

#endif  // CCO_DEVICE_HANDLES_HPP_
