// SPDX-License-Identifier: MIT
// One exported function per arch-layer operation x order x scope x width, so the code
// generated for each can be found by name in the target's assembly and checked
// (tests/arch/arch_codegen_test.py).
#include <stdint.h>

#include "device/arch/arch.h"

#define PROBE extern "C" __attribute__((visibility("default")))

#define O_relaxed cco::order::Relaxed
#define O_acquire cco::order::Acquire
#define O_release cco::order::Release
#define O_acq_rel cco::order::AcqRel
#define S_block cco::scope::Block
#define S_device cco::scope::Device
#define S_system cco::scope::System

#define FOR_SCOPES(M, o) M(o, block) M(o, device) M(o, system)
#define FOR_RMW_ORDERS(M) FOR_SCOPES(M, relaxed) FOR_SCOPES(M, acquire) FOR_SCOPES(M, release) FOR_SCOPES(M, acq_rel)

#define LOAD(o, s)                                                                                          \
  PROBE uint32_t probe_load_##o##_##s##_u32(const uint32_t* p) { return cco::arch::load<O_##o, S_##s>(p); } \
  PROBE uint64_t probe_load_##o##_##s##_u64(const uint64_t* p) { return cco::arch::load<O_##o, S_##s>(p); }
#define STORE(o, s)                                                                                         \
  PROBE void probe_store_##o##_##s##_u32(uint32_t* p, uint32_t v) { cco::arch::store<O_##o, S_##s>(p, v); } \
  PROBE void probe_store_##o##_##s##_u64(uint64_t* p, uint64_t v) { cco::arch::store<O_##o, S_##s>(p, v); }
#define RMW(op, o, s)                                                                                                \
  PROBE uint32_t probe_##op##_##o##_##s##_u32(uint32_t* p, uint32_t v) { return cco::arch::op<O_##o, S_##s>(p, v); } \
  PROBE uint64_t probe_##op##_##o##_##s##_u64(uint64_t* p, uint64_t v) { return cco::arch::op<O_##o, S_##s>(p, v); }
#define ADD(o, s) RMW(fetch_add, o, s)
#define EXCH(o, s) RMW(exchange, o, s)
#define MAX(o, s) RMW(fetch_max, o, s)
#define CAS(o, s)                                                                              \
  PROBE uint32_t probe_compare_exchange_##o##_##s##_u32(uint32_t* p, uint32_t e, uint32_t d) { \
    return cco::arch::compare_exchange<O_##o, S_##s>(p, e, d);                                 \
  }                                                                                            \
  PROBE uint64_t probe_compare_exchange_##o##_##s##_u64(uint64_t* p, uint64_t e, uint64_t d) { \
    return cco::arch::compare_exchange<O_##o, S_##s>(p, e, d);                                 \
  }
#define RED(o, s)                                                                                       \
  PROBE void probe_add_##o##_##s##_u32(uint32_t* p, uint32_t v) { cco::arch::add<O_##o, S_##s>(p, v); } \
  PROBE void probe_add_##o##_##s##_u64(uint64_t* p, uint64_t v) { cco::arch::add<O_##o, S_##s>(p, v); }
#define FENCE(o, s) \
  PROBE void probe_fence_##s() { cco::arch::fence<S_##s>(); }

FOR_SCOPES(LOAD, relaxed)
FOR_SCOPES(LOAD, acquire)
FOR_SCOPES(STORE, relaxed)
FOR_SCOPES(STORE, release)
FOR_RMW_ORDERS(ADD)
FOR_RMW_ORDERS(EXCH)
FOR_RMW_ORDERS(MAX)
FOR_RMW_ORDERS(CAS)
FOR_SCOPES(RED, relaxed)
FOR_SCOPES(RED, release)
FOR_SCOPES(FENCE, acq_rel)

PROBE uint32_t probe_lane_id() { return cco::arch::lane_id(); }
PROBE uint32_t probe_warp_size() { return cco::arch::warp_size(); }
PROBE uint32_t probe_thread_id() { return cco::arch::thread_id(); }
PROBE uint32_t probe_block_size() { return cco::arch::block_size(); }
PROBE uint32_t probe_block_id() { return cco::arch::block_id(); }
PROBE uint32_t probe_grid_size() { return cco::arch::grid_size(); }
PROBE uint64_t probe_active_mask() { return cco::arch::active_mask(); }
PROBE uint64_t probe_ballot(int predicate) { return cco::arch::ballot(predicate != 0); }
PROBE void probe_warp_sync() { cco::arch::warp_sync(); }
PROBE void probe_warp_sync_all() { cco::arch::warp_sync_all(); }
PROBE void probe_block_sync() { cco::arch::block_sync(); }
PROBE int probe_block_sync_or(int predicate) { return cco::arch::block_sync_or(predicate != 0); }
PROBE void probe_nanosleep(uint32_t ns) { cco::arch::nanosleep(ns); }
PROBE uint64_t probe_cycles() { return cco::arch::cycles(); }
PROBE uint64_t probe_timer_ns() { return cco::arch::timer_ns(); }
