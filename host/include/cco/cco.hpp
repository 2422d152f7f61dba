/* SPDX-License-Identifier: MIT */
/* cco/cco.hpp: the guide's C++ entry header for host code and LSA kernels (its
 * "mori/cco/cco.hpp"): the host API (cco/cco.h) and the header-only device API (peer
 * pointers, the LSA barrier, teams, coop scopes; GDA and SDMA come along, and
 * cco/cco_scale_out.hpp, the guide's header for those, names them again).
 *
 *   nvcc -std=c++17 -I<cco>/_data/include kernel.cu -L<cco>/_data -lcco
 */
#ifndef CCO_CCO_HPP_
#define CCO_CCO_HPP_

#include <stddef.h>

#include "cco/cco.h"
#include "device/arch/arch.h"
#include "device/coop.hpp"
#include "device/lsa.hpp"  // ccoGetLsaPeerPtr
#include "device/lsa_barrier.hpp"
#include "device/team.hpp"

/* The size-only form of ccoWindowRegister (the guide's C++ overload, its argument order: the
 * window, then this rank's pointer): allocates `size` bytes of symmetric memory and registers
 * them as one window, which ccoWindowDeregister frees. */
inline ccoResult_t ccoWindowRegister(ccoComm* comm, size_t size, ccoWindow_t* win, void** localPtr) {
  return ccoWindowAllocRegister(comm, size, localPtr, win);
}

#endif /* CCO_CCO_HPP_ */
