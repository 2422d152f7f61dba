/* SPDX-License-Identifier: MIT */
/* CCO ABI: the device view of a registered window.
 *
 * A window handle (ccoWindow_t) is the device address of one ccoWindowDevice, filled by
 * ccoWindowRegister. Every LSA rank maps its peers' slices into one flat virtual range,
 * so a peer's address is arithmetic, not a table lookup:
 *
 *   peer address = flatBase + lsaPeer * stride + offset + byteOffset   (cco_slice_address)
 */
#ifndef CCO_ABI_WINDOW_H_
#define CCO_ABI_WINDOW_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/version.h"

typedef uint64_t ccoWindow_t;

typedef struct ccoWindowDevice {
  uint32_t magic;       /* CCO_WINDOW_MAGIC */
  uint32_t abiVersion;  /* CCO_ABI_VERSION */
  uint64_t flatBase;    /* this process's address of LSA rank 0's slice */
  uint64_t stride;      /* bytes between consecutive LSA ranks' slices */
  uint64_t offset;      /* where the window starts inside every slice */
  uint64_t size;        /* window size in bytes */
  int32_t lsaRank;      /* this rank's index in the LSA team */
  int32_t lsaSize;      /* ranks in the LSA team */
  int32_t rank;         /* this rank's world rank */
  int32_t lsaWorldBase; /* world rank of LSA rank 0 (an LSA team is contiguous) */
  uint32_t id;          /* the window's number in its communicator, the same on every rank:
                         * GDA descriptors name windows by it */
  uint32_t reserved0;
  uint64_t reserved[8]; /* zero; room for RDMA keys without a size change */
} ccoWindowDevice;

CCO_STATIC_ASSERT(sizeof(ccoWindowDevice) == 128, "ccoWindowDevice size");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, flatBase) == 8, "ccoWindowDevice.flatBase");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, stride) == 16, "ccoWindowDevice.stride");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, offset) == 24, "ccoWindowDevice.offset");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, size) == 32, "ccoWindowDevice.size");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, lsaRank) == 40, "ccoWindowDevice.lsaRank");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, lsaSize) == 44, "ccoWindowDevice.lsaSize");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, rank) == 48, "ccoWindowDevice.rank");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, lsaWorldBase) == 52, "ccoWindowDevice.lsaWorldBase");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, id) == 56, "ccoWindowDevice.id");
CCO_STATIC_ASSERT(offsetof(ccoWindowDevice, reserved) == 64, "ccoWindowDevice.reserved");

/* Byte `offset` of slice `slice` of a flat range: `slice` is an LSA rank (a host rank on the
 * host, whose LSA ranks are consecutive host ranks), `offset` counts from the slice's start
 * (a window's offset plus the byte offset in it, a device communicator's resource offset plus
 * a word's). Host and device compute every slice address with this one function. */
CCO_ABI_INLINE uint64_t cco_slice_address(uint64_t flatBase, uint64_t stride, uint64_t slice, uint64_t offset) {
  return flatBase + slice * stride + offset;
}

#endif /* CCO_ABI_WINDOW_H_ */
