// SPDX-License-Identifier: MIT
// What the single-file probes of tools/perf that use the CUDA driver share (each is built
// alone by nvcc in stage_device.sh):
//   CHECK(call)          a driver call that must succeed, or the probe exits naming it
//   ResultText(r)        how the driver says a result ("ok" for success), for rows it refused
//   UseGpu0()            the driver initialised, GPU 0's primary context current (returned,
//                        for the probe's other threads to make current)
//   PinnedOnGpu0()       the allocation properties of device memory on GPU 0, as a
//                        communicator's windows are made
//   MapFreshAt(at, size) fresh device memory of GPU 0 mapped at `at` (inside a reservation),
//                        readable and writable, as a communicator maps a window
//   VmmAllocOnGpu0(size) the same at an address of its own (size rounded up to the granularity)
#ifndef CCO_TOOLS_PERF_DRIVER_CHECK_H_
#define CCO_TOOLS_PERF_DRIVER_CHECK_H_

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

static inline const char* ResultText(CUresult r) {
  const char* text = "ok";
  if (r != CUDA_SUCCESS && cuGetErrorString(r, &text) != CUDA_SUCCESS) text = "an unknown CUresult";
  return text;
}

#define CHECK(call)                                                                 \
  do {                                                                              \
    CUresult r_ = (call);                                                           \
    if (r_ != CUDA_SUCCESS) {                                                       \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, ResultText(r_)); \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

static inline CUcontext UseGpu0() {
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  return ctx;
}

static inline CUmemAllocationProp PinnedOnGpu0() {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

static inline void MapFreshAt(CUdeviceptr at, size_t size) {
  const CUmemAllocationProp prop = PinnedOnGpu0();
  CUmemGenericAllocationHandle handle;
  CHECK(cuMemCreate(&handle, size, &prop, 0));
  CHECK(cuMemMap(at, size, 0, handle, 0));
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CHECK(cuMemSetAccess(at, size, &access, 1));
}

static inline CUdeviceptr VmmAllocOnGpu0(size_t size) {
  const CUmemAllocationProp prop = PinnedOnGpu0();
  size_t granularity = 0;
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  size = (size + granularity - 1) / granularity * granularity;
  CUdeviceptr va;
  CHECK(cuMemAddressReserve(&va, size, 0, 0, 0));
  MapFreshAt(va, size);
  return va;
}

#endif  // CCO_TOOLS_PERF_DRIVER_CHECK_H_
