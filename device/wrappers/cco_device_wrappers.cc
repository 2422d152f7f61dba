// SPDX-License-Identifier: MIT
//===-- device/wrappers/cco_device_wrappers.cc - the exported ABI ---------===//
//
// Compiled once per bitcode variant. The extern "C" definitions are generated from
// abi/functions.list (cco_device_wrappers.inc); each forwards to cco::abi. Public
// symbols keep default visibility (amdgcn defaults to hidden) so internalize keeps them.
// Each is also always_inline: a consumer whose pipeline does not force inlining (FlyDSL)
// would otherwise keep big ones as calls once a kernel makes many of them; the definitions
// stay, so callers that link by name (C, the ABI's own checks) still find them.
//
//===----------------------------------------------------------------------===//
#include "device/wrappers/abi_impl.hpp"
#include "device/wrappers/cco_device_abi.h"  // generated C prototypes: the wrappers must match

#define CCO_ABI_EXPORT extern "C" __attribute__((visibility("default"), always_inline))

#include "device/wrappers/cco_device_wrappers.inc"
