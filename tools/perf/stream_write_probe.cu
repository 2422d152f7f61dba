// SPDX-License-Identifier: MIT
// What the GDA proxy's completion words cost: a host thread writes a word a spinning kernel
// waits for, the kernel answers into pinned host memory, the host waits for the answer. Per
// round trip, with the host time spent issuing the write(s):
//   write x1      cuStreamWriteValue64 (a proxy's signal alone)
//   write x2      two cuStreamWriteValue64 calls, the kernel waiting for the second (a signal,
//                 then the ring's `consumed` behind it: what the proxy issues per signal today)
//   batch x2      the same two writes in one cuStreamBatchMemOp
//   host store    a store into pinned host memory the kernel polls (the floor)
//   vmm host      a store into host memory made by cuMemCreate (HOST_NUMA) and mapped in a VA
//                 reservation as a communicator maps its windows, if the driver allows it,
//                 with whether the allocation exports as a POSIX file descriptor
//   memfd store   a store by another process into a memfd this process mapped and registered
//                 (cuMemHostRegister): how a proxy would write a host peer's signal word
//   memfd write   cuStreamWriteValue64 into that registered memfd (the same word, written
//                 behind a stream's work)
//   ... x128      the write, the pinned host store and the memfd rows again with a block of 128
//                 threads polling (a group's wait), not one
//   write +host/N the write x1 row with the polling thread also loading a word of pinned host
//                 memory (never written: a waiter's host signal word) at every Nth poll: whether
//                 a kernel polling host memory slows the stream's writes into device memory
//   stream_write_probe [round_trips=20000]
// Built by tools/stage_device.sh (nvcc) into stage/bin.
#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "driver_check.h"

static double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Waits for *word >= i, then answers i into *ack, for i = 1..rounds. Every thread of the block
// polls (as every thread of a group waiting in ccoGda does); thread 0 answers.
__global__ void Answer(const volatile unsigned long long* word, volatile unsigned long long* ack, int rounds) {
  for (unsigned long long i = 1; i <= static_cast<unsigned long long>(rounds); ++i) {
    while (*word < i) {
    }
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) *ack = i;
  }
}

// The same, one thread, which also loads *extra (pinned host memory, zero) at every `every`th
// poll and adds it in, as a wait over device and host signal words does.
__global__ void AnswerMixed(const volatile unsigned long long* word, const volatile unsigned long long* extra,
                            int every, volatile unsigned long long* ack, int rounds) {
  unsigned polls = 0;
  for (unsigned long long i = 1; i <= static_cast<unsigned long long>(rounds); ++i) {
    for (;;) {
      unsigned long long v = *word;
      if (++polls % every == 0) v += *extra;
      if (v >= i) break;
    }
    __threadfence_system();
    *ack = i;
  }
}

// How many threads poll (the rows marked x128 poll with a block of 128).
static int pollers = 1;

struct Result {
  double roundTripUs, issueUs;
};

// issue(i) makes the word the kernel waits for reach i.
template <class Issue>
static Result Run(CUstream kernelStream, CUdeviceptr word, volatile unsigned long long* ack, CUdeviceptr ackDevice,
                  int rounds, Issue issue) {
  *ack = 0;
  Answer<<<1, pollers, 0, kernelStream>>>(reinterpret_cast<const volatile unsigned long long*>(word),
                                          reinterpret_cast<volatile unsigned long long*>(ackDevice), rounds);
  double issued = 0;
  const double t0 = NowUs();
  for (int i = 1; i <= rounds; ++i) {
    const double a = NowUs();
    issue(static_cast<unsigned long long>(i));
    issued += NowUs() - a;
    while (*ack < static_cast<unsigned long long>(i)) {
    }
  }
  const double total = NowUs() - t0;
  CHECK(cuStreamSynchronize(kernelStream));
  return Result{total / rounds, issued / rounds};
}

static void Report(const char* way, Result r) {
  printf("%-12s %10.3f us/round trip   %8.3f us issuing\n", way, r.roundTripUs, r.issueUs);
}

// Host memory from cuMemCreate mapped at a reserved VA, readable and writable by GPU 0 and the
// CPU; 0 where the driver refuses (said on stdout).
static CUdeviceptr VmmHostWord(size_t* size) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t granularity = 0;
  CUresult r = cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  CUmemGenericAllocationHandle handle;
  if (r == CUDA_SUCCESS) r = cuMemCreate(&handle, granularity, &prop, 0);
  if (r != CUDA_SUCCESS) {
    printf("vmm host     cuMemCreate(HOST_NUMA) refused: %s\n", ResultText(r));
    return 0;
  }
  int fd = -1;
  r = cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  printf("vmm host     export as a POSIX fd: %s\n", r == CUDA_SUCCESS ? "yes" : "refused");
  CUdeviceptr va;
  CHECK(cuMemAddressReserve(&va, granularity, 0, 0, 0));
  CHECK(cuMemMap(va, granularity, 0, handle, 0));
  CUmemAccessDesc access[2] = {};
  access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access[0].location.id = 0;
  access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  access[1].location.id = 0;
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = cuMemSetAccess(va, granularity, access, 2);
  if (r != CUDA_SUCCESS) {
    printf("vmm host     cuMemSetAccess(device and host) refused: %s\n", ResultText(r));
    return 0;
  }
  *size = granularity;
  return va;
}

// The memfd rows: words [0] the kernel's word, [1] its answer, [2] the child's result.
static void MemfdRows(CUstream kernelStream, CUstream writeStream, int rounds) {
  const int fd = memfd_create("stream_write_probe", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 4096) != 0) {
    printf("memfd        refused: %s\n", strerror(errno));
    return;
  }
  void* map = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    printf("memfd        mmap refused: %s\n", strerror(errno));
    return;
  }
  volatile unsigned long long* w = static_cast<volatile unsigned long long*>(map);
  const CUresult r = cuMemHostRegister(map, 4096, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
  if (r != CUDA_SUCCESS) {
    printf("memfd        cuMemHostRegister refused: %s\n", ResultText(r));
    return;
  }
  CUdeviceptr dev;
  CHECK(cuMemHostGetDevicePointer(&dev, map, 0));
  w[0] = w[1] = w[2] = 0;
  Answer<<<1, pollers, 0, kernelStream>>>(reinterpret_cast<const volatile unsigned long long*>(dev),
                                          reinterpret_cast<volatile unsigned long long*>(dev + 8), rounds);
  const pid_t child = fork();
  if (child == 0) {  // no CUDA here: stores and loads of the shared pages only
    const double t0 = NowUs();
    for (int i = 1; i <= rounds; ++i) {
      w[0] = static_cast<unsigned long long>(i);
      while (w[1] < static_cast<unsigned long long>(i)) {
      }
    }
    const double us = (NowUs() - t0) / rounds;
    memcpy(const_cast<unsigned long long*>(w + 2), &us, sizeof(us));
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(cuStreamSynchronize(kernelStream));
  double us = 0;
  memcpy(&us, const_cast<unsigned long long*>(w + 2), sizeof(us));
  printf("%-12s %10.3f us/round trip   (another process's stores)\n", pollers > 1 ? "memfd st x128" : "memfd store",
         us);
  w[0] = 0;
  Report(pollers > 1 ? "memfd wr x128" : "memfd write",
         Run(kernelStream, dev, w + 1, dev + 8, rounds,
             [&](unsigned long long i) { CHECK(cuStreamWriteValue64(writeStream, dev, i, 0)); }));
  CHECK(cuMemHostUnregister(map));
  munmap(map, 4096);
  close(fd);
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // lines out before a refused host access could end the probe
  const int rounds = argc > 1 ? atoi(argv[1]) : 20000;
  UseGpu0();
  CUstream kernelStream, writeStream;
  CHECK(cuStreamCreate(&kernelStream, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&writeStream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr words;
  CHECK(cuMemAlloc(&words, 16));
  void* hostWords = nullptr;
  CHECK(cuMemHostAlloc(&hostWords, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  volatile unsigned long long* ack = static_cast<volatile unsigned long long*>(hostWords);
  volatile unsigned long long* flag = ack + 1;
  CUdeviceptr ackDevice, flagDevice;
  CHECK(cuMemHostGetDevicePointer(&ackDevice, hostWords, 0));
  flagDevice = ackDevice + 8;
  printf("%d round trips each, one thread waiting on GPU 0\n", rounds);

  CHECK(cuMemsetD8(words, 0, 16));
  Report("write x1", Run(kernelStream, words, ack, ackDevice, rounds,
                         [&](unsigned long long i) { CHECK(cuStreamWriteValue64(writeStream, words, i, 0)); }));
  CHECK(cuMemsetD8(words, 0, 16));
  Report("write x2", Run(kernelStream, words + 8, ack, ackDevice, rounds, [&](unsigned long long i) {
           CHECK(cuStreamWriteValue64(writeStream, words, i, 0));
           CHECK(cuStreamWriteValue64(writeStream, words + 8, i, 0));
         }));
  CHECK(cuMemsetD8(words, 0, 16));
  Report("batch x2", Run(kernelStream, words + 8, ack, ackDevice, rounds, [&](unsigned long long i) {
           CUstreamBatchMemOpParams ops[2] = {};
           for (int k = 0; k < 2; ++k) {
             ops[k].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
             ops[k].writeValue.address = words + 8 * k;
             ops[k].writeValue.value64 = i;
           }
           CHECK(cuStreamBatchMemOp(writeStream, 2, ops, 0));
         }));
  // A host word polled beside the device word (every poll, every 4th, every 16th).
  for (int every : {1, 4, 16}) {
    CHECK(cuMemsetD8(words, 0, 16));
    *ack = 0;
    flag[1] = 0;
    AnswerMixed<<<1, 1, 0, kernelStream>>>(reinterpret_cast<const volatile unsigned long long*>(words),
                                           reinterpret_cast<const volatile unsigned long long*>(flagDevice + 8), every,
                                           reinterpret_cast<volatile unsigned long long*>(ackDevice), rounds);
    double issued = 0;
    const double t0 = NowUs();
    for (int i = 1; i <= rounds; ++i) {
      const double a = NowUs();
      CHECK(cuStreamWriteValue64(writeStream, words, static_cast<cuuint64_t>(i), 0));
      issued += NowUs() - a;
      while (*ack < static_cast<unsigned long long>(i)) {
      }
    }
    const Result r{(NowUs() - t0) / rounds, issued / rounds};
    CHECK(cuStreamSynchronize(kernelStream));
    char name[32];
    snprintf(name, sizeof(name), "write +host/%d", every);
    Report(name, r);
  }
  *flag = 0;
  Report("host store", Run(kernelStream, flagDevice, ack, ackDevice, rounds, [&](unsigned long long i) { *flag = i; }));
  size_t size = 0;
  const CUdeviceptr vmm = VmmHostWord(&size);
  if (vmm != 0) {
    volatile unsigned long long* word = reinterpret_cast<volatile unsigned long long*>(vmm);
    *word = 0;
    Report("vmm host", Run(kernelStream, vmm, ack, ackDevice, rounds, [&](unsigned long long i) { *word = i; }));
  }
  MemfdRows(kernelStream, writeStream, rounds);
  // The same with a block of 128 threads polling: device memory, pinned host memory, the memfd.
  pollers = 128;
  CHECK(cuMemsetD8(words, 0, 16));
  Report("write x128", Run(kernelStream, words, ack, ackDevice, rounds,
                           [&](unsigned long long i) { CHECK(cuStreamWriteValue64(writeStream, words, i, 0)); }));
  *flag = 0;
  Report("host st x128",
         Run(kernelStream, flagDevice, ack, ackDevice, rounds, [&](unsigned long long i) { *flag = i; }));
  MemfdRows(kernelStream, writeStream, rounds);
  return 0;
}
