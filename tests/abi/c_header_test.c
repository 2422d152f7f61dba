/* SPDX-License-Identifier: MIT */
/* C callers: the ABI headers and the generated device-function prototypes compile as
 * strict C11 (-Wall -Wextra -Werror -pedantic) and agree with the C++ view of the ABI. */
#include <stdio.h>

#include "abi/cco_abi.h"
#include "device/wrappers/cco_device_abi.h"

/* Each prototype has the ABI's type (_Generic does not evaluate, so nothing is linked). */
#define HAS_TYPE(fn, type) _Generic(&(fn), type: 1, default: 0)
_Static_assert(HAS_TYPE(cco_lsa_ptr, uint64_t (*)(uint64_t, int32_t, uint64_t)), "cco_lsa_ptr");
_Static_assert(HAS_TYPE(cco_devcomm_rank, int32_t (*)(uint64_t)), "cco_devcomm_rank");
_Static_assert(HAS_TYPE(cco_system_fence, int32_t (*)(int32_t)), "cco_system_fence");
_Static_assert(HAS_TYPE(cco_abi_version, int32_t (*)(void)), "cco_abi_version");

int main(void) {
  int bad = 0;
  bad |= sizeof(ccoDevComm) != 328;
  bad |= sizeof(ccoWindowDevice) != 128;
  bad |= CCO_DEVICE_ABI_VERSION != CCO_ABI_VERSION;
  bad |= CCO_COOP_BLOCK != 2 || CCO_GDA_CONNECTION_RAIL != 3;
  if (bad) printf("C view of the ABI disagrees\n");
  return bad;
}
