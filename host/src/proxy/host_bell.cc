// SPDX-License-Identifier: MIT
#include "proxy/host_bell.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "abi/devcomm.h"

namespace cco {

// After the word's store (the pair of orders with a sleeper's is in device/arch/host.h): a
// sleeper that read the count before it finds it moved.
void RingHostBell(uint64_t address) {
  ccoHostBell* bell = reinterpret_cast<ccoHostBell*>(address);
  __atomic_add_fetch(&bell->rings, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&bell->sleepers, __ATOMIC_SEQ_CST) != 0)
    (void)syscall(SYS_futex, &bell->rings, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace cco
