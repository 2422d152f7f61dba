// SPDX-License-Identifier: MIT
//===-- device/cco_device.hpp - the header-only device API ------*- C++ -*-===//
//
// What a CUDA / HIP C++ kernel includes to talk to other GPUs by itself (the same code
// the bitcode's extern "C" wrappers call). The kernel takes ccoDevComm by value and
// ccoWindow_t handles; nothing else, no module-global state.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_CCO_DEVICE_HPP_
#define CCO_DEVICE_CCO_DEVICE_HPP_

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/gda.hpp"
#include "device/lsa.hpp"
#include "device/lsa_barrier.hpp"
#include "device/sdma.hpp"
#include "device/team.hpp"
#include "device/trace.hpp"

#endif  // CCO_DEVICE_CCO_DEVICE_HPP_
