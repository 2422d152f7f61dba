/* CCO ABI: version and magic numbers shared by the host SDK and the device library.
 *
 * Plain C, freestanding: compiled for the host, nvptx and amdgcn alike.
 * Bump CCO_ABI_VERSION whenever a struct in abi/ or a function in abi/functions.list
 * changes shape or meaning; a host library and a bitcode of different versions refuse
 * to work together. */
#ifndef CCO_ABI_VERSION_H_
#define CCO_ABI_VERSION_H_

#define CCO_ABI_VERSION 6

/* Magic numbers open every struct that crosses the kernel boundary, so a device
 * function handed a wrong pointer, or a struct from another ABI, can be told apart.
 * Each reads as four ASCII letters in memory (little-endian). */
#define CCO_DEV_COMM_MAGIC 0x444F4343u            /* "CCOD" */
#define CCO_WINDOW_MAGIC 0x574F4343u              /* "CCOW" */
#define CCO_DEV_COMM_REQUIREMENTS_MAGIC 0x524F4343u /* "CCOR" */

#if defined(__cplusplus)
#define CCO_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define CCO_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#endif /* CCO_ABI_VERSION_H_ */
