// SPDX-License-Identifier: MIT
// The GPU runtime the examples call, from either vendor: CUDA's runtime under nvcc or
// clang -x cuda; HIP's under hipcc or clang -x hip, where the few CUDA names the examples use
// are spelled as HIP's (same signatures and meanings), so one source builds for NVIDIA and AMD.
#ifndef CCO_EXAMPLES_CPP_GPU_RUNTIME_H_
#define CCO_EXAMPLES_CPP_GPU_RUNTIME_H_

#if defined(__HIP__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>

#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaGetErrorString hipGetErrorString
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaSetDevice hipSetDevice
#define cudaFree hipFree
#define cudaMalloc hipMalloc
#define cudaMemcpy hipMemcpy
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemsetAsync hipMemsetAsync
#define cudaStream_t hipStream_t
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamDestroy hipStreamDestroy
#else
#include <cuda_runtime.h>
#endif

#endif  // CCO_EXAMPLES_CPP_GPU_RUNTIME_H_
