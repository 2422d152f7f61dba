// SPDX-License-Identifier: MIT
//===-- device/gda_direct.hpp - GDA's direct path to LSA peers --*- C++ -*-===//
//
// A sender whose target is in its LSA team can reach the target's memory with its own
// stores. For small operations that is much faster than a trip through the proxy (a host
// thread polling a ring, then a copy and a stream write queued on a GPU), so
// ccoGda does signal, put_value, and puts and gets of up to ccoDevComm.gdaDirectMaxBytes
// itself (a get by loads from the peer's memory; gdaDirectGroupMaxBytes where a warp or block
// shares the copy, which it does many times faster than one thread):
//
//   - only when the ring to that peer is idle: every ticket ever reserved on it is consumed,
//     i.e. complete (data and signal landed). Then nothing posted earlier on that context to
//     that peer can still be in flight, and a direct signal cannot pass an earlier payload;
//     a later post through the ring is ordered after the direct stores by its descriptor's
//     release store, which the proxy reads before it acts;
//   - with the bytes checked against both windows here (an operation the device cannot
//     check goes through the proxy, which refuses it with the ring's error);
//   - the signal as a system-scope release add on the sender's own direct word at the
//     target (abi/gda.h), never on the proxy's word, whose running-sum stores would lose it;
//     a reduction, which the sender does not wait on;
//   - a put's or get's copy shared by the coop group where the group can vote on the path (a warp;
//     a block on nvptx), else done by thread 0 alone.
// A direct put is complete when it returns, up to a system-scope fence: a direct signal
// releases, and flush fences (thread 0, after the group's barrier), so "flushed" still means
// "landed".
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_GDA_DIRECT_HPP_
#define CCO_DEVICE_GDA_DIRECT_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/ring.hpp"

namespace cco {
namespace gda {

/// Every ticket reserved on the ring so far is consumed, and the ring has not failed (a
/// failed ring takes the post, whose waits report the error). Reads the proxy's `consumed`
/// (host memory, a bus trip) only when the device-side cache lags the head.
/// The three device words share a cache line and are loaded before any is tested: behind a
/// branch each would wait for the one before it, a memory trip apiece on every direct post.
CCO_DEVICE_API bool RingIdle(const ring::View& r) {
  const uint64_t failed = arch::load<order::Relaxed, scope::System>(&r.dev->failed);
  const uint64_t head = arch::load<order::Relaxed, scope::Device>(&r.dev->head);
  const uint64_t cached = arch::load<order::Acquire, scope::Device>(&r.dev->consumedCache);
  if (failed != 0) return false;
  if (!cco_gda_before(cached, head)) return true;
  return !cco_gda_before(ring::ReadConsumed(r), head);
}

// Units [rank, units) in steps of `size` (the caller's share of a group's copy), with
// kBatch loads in flight before the stores that need them: one thread copying alone would
// otherwise wait a full memory latency per unit (the compiler cannot tell dst from src).
template <class T>
CCO_DEVICE_API void CopyUnits(uint64_t dst, uint64_t src, uint64_t units, uint32_t rank, uint32_t size) {
  constexpr uint32_t kBatch = 8;
  const T* from = reinterpret_cast<const T*>(src);
  T* to = reinterpret_cast<T*>(dst);
  uint64_t i = rank;
  for (; i + static_cast<uint64_t>(kBatch - 1) * size < units; i += static_cast<uint64_t>(kBatch) * size) {
    T v[kBatch];
    CCO_UNROLL
    for (uint32_t k = 0; k < kBatch; ++k) v[k] = from[i + static_cast<uint64_t>(k) * size];
    CCO_UNROLL
    for (uint32_t k = 0; k < kBatch; ++k) to[i + static_cast<uint64_t>(k) * size] = v[k];
  }
  for (; i < units; i += size) to[i] = from[i];
}

/// Thread `rank` of a group of `size`'s share of copying `bytes`, with the widest accesses
/// both addresses allow (the tail shorter than one of them is thread 0's).
CCO_DEVICE_API void CopyShare(uint64_t dst, uint64_t src, uint64_t bytes, uint32_t rank = 0, uint32_t size = 1) {
  // One 16-byte access. A vector type for clang and gcc: clang puts an array of a struct
  // on the stack; nvcc knows no vector types in device code but keeps its struct in registers.
#if defined(__CUDACC__) && !defined(__clang__)
  struct alignas(16) Vec16 {
    uint64_t lo, hi;
  };
#else
  typedef uint64_t Vec16 __attribute__((vector_size(16)));
#endif
  const uint64_t align = (dst | src) & 15;
  const uint64_t unit = align == 0 ? 16 : (align & 7) == 0 ? 8 : (align & 3) == 0 ? 4 : 1;
  const uint64_t units = bytes / unit;
  switch (unit) {
    case 16: CopyUnits<Vec16>(dst, src, units, rank, size); break;
    case 8: CopyUnits<uint64_t>(dst, src, units, rank, size); break;
    case 4: CopyUnits<uint32_t>(dst, src, units, rank, size); break;
    default: CopyUnits<uint8_t>(dst, src, units, rank, size); break;
  }
  if (rank != 0) return;
  // The tail, shorter than a unit: the widest pieces first (they stay aligned).
  uint64_t i = units * unit;
  if (unit > 8 && bytes - i >= 8) {
    *reinterpret_cast<uint64_t*>(dst + i) = *reinterpret_cast<const uint64_t*>(src + i);
    i += 8;
  }
  if (unit > 4 && bytes - i >= 4) {
    *reinterpret_cast<uint32_t*>(dst + i) = *reinterpret_cast<const uint32_t*>(src + i);
    i += 4;
  }
  for (; i < bytes; ++i) *reinterpret_cast<uint8_t*>(dst + i) = *reinterpret_cast<const uint8_t*>(src + i);
}

/// Stores the low `bytes` (1 to 8) bytes of `value`, little-endian, as put_value does.
CCO_DEVICE_API void StoreValue(uint64_t dst, uint64_t value, uint32_t bytes) {
  if (bytes == 8 && dst % 8 == 0) {
    *reinterpret_cast<uint64_t*>(dst) = value;
    return;
  }
  for (uint32_t i = 0; i < bytes; ++i) *reinterpret_cast<uint8_t*>(dst + i) = static_cast<uint8_t>(value >> (8 * i));
}

/// The `bytes` (1 to 8) bytes at `src`, little-endian: the value a put_value of them carries.
CCO_DEVICE_API uint64_t LoadValue(uint64_t src, uint32_t bytes) {
  if (bytes == 8 && src % 8 == 0) return *reinterpret_cast<const uint64_t*>(src);
  uint64_t value = 0;
  for (uint32_t i = 0; i < bytes; ++i) value |= uint64_t{*reinterpret_cast<const uint8_t*>(src + i)} << (8 * i);
  return value;
}

}  // namespace gda
}  // namespace cco

#endif  // CCO_DEVICE_GDA_DIRECT_HPP_
