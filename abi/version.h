/* SPDX-License-Identifier: MIT */
/* CCO ABI: version and magic numbers shared by the host SDK and the device library.
 *
 * Plain C, freestanding: compiled for the host, nvptx and amdgcn alike.
 * Bump CCO_ABI_VERSION whenever a struct in abi/ or a function in abi/functions.list
 * changes shape or meaning; a host library and a bitcode of different versions refuse
 * to work together. This line is the only place the number is written: the ABI table,
 * the bitcode's stamp and the Python package read it from here (//tests/abi checks). */
#ifndef CCO_ABI_VERSION_H_
#define CCO_ABI_VERSION_H_

#define CCO_ABI_VERSION 9

/* Magic numbers open every struct that crosses the kernel boundary, so a device
 * function handed a wrong pointer, or a struct from another ABI, can be told apart.
 * Each reads as four ASCII letters in memory (little-endian). */
#define CCO_DEV_COMM_MAGIC 0x444F4343u              /* "CCOD" */
#define CCO_WINDOW_MAGIC 0x574F4343u                /* "CCOW" */
#define CCO_DEV_COMM_REQUIREMENTS_MAGIC 0x524F4343u /* "CCOR" */

#if defined(__cplusplus)
#define CCO_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define CCO_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* The arithmetic in abi/ is compiled by every side: host, freestanding device builds, and
 * nvcc / hipcc kernels (which need it on both of their passes). */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define CCO_ABI_INLINE static inline __host__ __device__ __attribute__((always_inline))
#elif defined(__cplusplus)
#define CCO_ABI_INLINE static inline __attribute__((always_inline))
#else
#define CCO_ABI_INLINE static inline
#endif

#endif /* CCO_ABI_VERSION_H_ */
