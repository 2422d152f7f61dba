// SPDX-License-Identifier: MIT
// What CUDA's VMM calls cost on this GPU: the figures behind ccoWindowRegister's budget.
// One process stands in for 8 ranks of one GPU: each "peer" is an export/import of a
// fresh allocation, mapped at its own place in one reservation, as registration does.
//   vmm_probe [size_MiB=1024] [peers=7]
// Built by tools/stage_device.sh (nvcc) into stage/bin.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "driver_check.h"

static double Now() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char** argv) {
  const size_t size = (argc > 1 ? atol(argv[1]) : 1024) << 20;
  const int peers = argc > 2 ? atoi(argv[2]) : 7;
  const CUcontext ctx = UseGpu0();
  CUmemAllocationProp prop = PinnedOnGpu0();
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gmin = 0, grec = 0;
  CHECK(cuMemGetAllocationGranularity(&gmin, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK(cuMemGetAllocationGranularity(&grec, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  printf("granularity min %zu recommended %zu; size %zu MiB, %d peers\n", gmin, grec, size >> 20, peers);
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

  const size_t stride = 2 * size;
  CUdeviceptr base;
  CHECK(cuMemAddressReserve(&base, stride * (peers + 2), 1ull << 30, 0, 0));

  // The "peers'" memory and its import, as a process receiving descriptors does.
  std::vector<CUmemGenericAllocationHandle> created(peers), imported(peers);
  double t = Now();
  for (int p = 0; p < peers; ++p) CHECK(cuMemCreate(&created[p], size, &prop, 0));
  printf("cuMemCreate            %8.3f ms each\n", (Now() - t) / peers);
  t = Now();
  std::vector<int> fds(peers);
  for (int p = 0; p < peers; ++p)
    CHECK(cuMemExportToShareableHandle(&fds[p], created[p], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  printf("export                 %8.3f ms each\n", (Now() - t) / peers);
  t = Now();
  for (int p = 0; p < peers; ++p) {
    CHECK(cuMemImportFromShareableHandle(&imported[p], (void*)(uintptr_t)fds[p],
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fds[p]);
  }
  printf("import                 %8.3f ms each\n", (Now() - t) / peers);

  // 1. Map + set access per peer (what registration does today).
  double tMap = 0, tAccess = 0;
  for (int p = 0; p < peers; ++p) {
    t = Now();
    CHECK(cuMemMap(base + p * stride, size, 0, imported[p], 0));
    tMap += Now() - t;
    t = Now();
    CHECK(cuMemSetAccess(base + p * stride, size, &access, 1));
    tAccess += Now() - t;
  }
  printf("map                    %8.3f ms each\n", tMap / peers);
  printf("set access             %8.3f ms each (%zu MiB)\n", tAccess / peers, size >> 20);
  t = Now();
  for (int p = 0; p < peers; ++p) CHECK(cuMemUnmap(base + p * stride, size));
  printf("unmap                  %8.3f ms each\n", (Now() - t) / peers);

  // 2. Set access by size: is it per byte or per call? (A handle maps whole.)
  for (size_t s = 2ull << 20; s <= size; s *= 8) {
    CUmemGenericAllocationHandle h;
    CHECK(cuMemCreate(&h, s, &prop, 0));
    CHECK(cuMemMap(base, s, 0, h, 0));
    t = Now();
    CHECK(cuMemSetAccess(base, s, &access, 1));
    printf("set access %6zu MiB   %8.3f ms\n", s >> 20, Now() - t);
    CHECK(cuMemUnmap(base, s));
    CHECK(cuMemRelease(h));
  }

  // 3. All peers back to back, one set access over the whole run.
  t = Now();
  for (int p = 0; p < peers; ++p) CHECK(cuMemMap(base + p * size, size, 0, imported[p], 0));
  double mapped = Now();
  CHECK(cuMemSetAccess(base, size * peers, &access, 1));
  printf("contiguous: map %8.3f ms total, one set access %8.3f ms\n", mapped - t, Now() - mapped);
  for (int p = 0; p < peers; ++p) CHECK(cuMemUnmap(base + p * size, size));

  // 4. Map + set access from one thread per peer.
  t = Now();
  std::vector<std::thread> threads;
  for (int p = 0; p < peers; ++p)
    threads.emplace_back([&, p] {
      CHECK(cuCtxSetCurrent(ctx));
      CHECK(cuMemMap(base + p * stride, size, 0, imported[p], 0));
      CHECK(cuMemSetAccess(base + p * stride, size, &access, 1));
    });
  for (auto& th : threads) th.join();
  printf("threads: map + access  %8.3f ms total\n", Now() - t);
  for (int p = 0; p < peers; ++p) CHECK(cuMemUnmap(base + p * stride, size));

  // 5. A second mapping of the same memory again (remap cost, warm).
  t = Now();
  for (int p = 0; p < peers; ++p) {
    CHECK(cuMemMap(base + p * stride, size, 0, imported[p], 0));
    CHECK(cuMemSetAccess(base + p * stride, size, &access, 1));
  }
  printf("again: map + access    %8.3f ms each\n", (Now() - t) / peers);

  // 6. What the rest of devcomm creation costs: a memset + synchronize, a small H2D copy.
  CUdeviceptr small = base + 0;
  t = Now();
  CHECK(cuMemsetD8(small, 0, 1 << 20));
  CHECK(cuCtxSynchronize());
  printf("memset 1 MiB + sync    %8.3f ms\n", Now() - t);
  char host[512] = {1};
  t = Now();
  CHECK(cuMemcpyHtoD(small, host, sizeof(host)));
  CHECK(cuCtxSynchronize());
  printf("copy 512 B + sync      %8.3f ms\n", Now() - t);
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  t = Now();
  CHECK(cuMemsetD8Async(small, 0, 1 << 20, stream));
  CHECK(cuMemcpyHtoDAsync(small, host, sizeof(host), stream));
  CHECK(cuStreamSynchronize(stream));
  printf("memset+copy on stream  %8.3f ms\n", Now() - t);
  void* pinned;
  t = Now();
  CHECK(cuMemHostAlloc(&pinned, 1 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
  printf("host alloc 1 MiB       %8.3f ms\n", Now() - t);
  t = Now();
  CUmemGenericAllocationHandle smallHandle;
  CHECK(cuMemCreate(&smallHandle, gmin, &prop, 0));
  CHECK(cuMemMap(base + stride * (peers + 1), gmin, 0, smallHandle, 0));
  CHECK(cuMemSetAccess(base + stride * (peers + 1), gmin, &access, 1));
  printf("create+map+access 2MiB %8.3f ms\n", Now() - t);
  return 0;
}
