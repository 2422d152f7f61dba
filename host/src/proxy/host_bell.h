// SPDX-License-Identifier: MIT
// The cpu platform's bells (abi/devcomm.h: ccoHostBell), where the "device" code runs on host
// threads. Each rank's lies in its resource pool beside its status word, where its host peers
// map it: the rank's device waits sleep on it (device/arch/host.h), and whoever writes a word
// they may watch rings it (the proxies after a pass that did work, an abort).
#ifndef CCO_HOST_PROXY_HOST_BELL_H_
#define CCO_HOST_PROXY_HOST_BELL_H_

#include <stdint.h>

namespace cco {

// From a rank's status word (ProxyContext::statusOffset) to its bell: a cache line of its own
// in the status word's carve (256 bytes, comm/resource_pool.cc).
constexpr uint64_t kBellAfterStatusWord = 64;
// The bell of the rank whose slice starts at `slice` (the address this process maps it at).
inline uint64_t BellAddress(uint64_t slice, uint64_t statusOffset) {
  return slice + statusOffset + kBellAfterStatusWord;
}

// Rings the bell at `address`: its count moves, and its sleepers wake (a shared futex: they may
// be threads of another process of this host). No system call when none sleeps.
void RingHostBell(uint64_t address);

}  // namespace cco

#endif  // CCO_HOST_PROXY_HOST_BELL_H_
