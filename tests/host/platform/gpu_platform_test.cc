// SPDX-License-Identifier: MIT
// The CUDA and HIP platforms. Without their driver (this CI machine) they must refuse
// cleanly, naming the missing library; with a driver and a device (the GPU machine) the
// same test drives a full virtual-memory round trip through the Platform interface. The
// logic they share is also driven everywhere over a fake driver table.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "platform/gpu_vmm_platform.h"
#include "platform/memfd.h"
#include "platform/platform.h"
#include "platform/proxy_scope.h"

namespace cco {
namespace {

#define ASSERT_OK(expr)                                                \
  do {                                                                 \
    ::cco::Status status_ = (expr);                                    \
    ASSERT_TRUE(status_.ok()) << #expr << " -> " << status_.message(); \
  } while (0)

const char* const kCudaLibraries[] = {"libcuda.so.1", nullptr};
const char* const kHipLibraries[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", nullptr};

// Whether the driver library exists here, asked the way the platform asks.
bool AnyLibraryLoads(const char* const* names) {
  for (const char* const* name = names; *name != nullptr; ++name) {
    // Left open: the platform under test loads the same library anyway.
    if (dlopen(*name, RTLD_NOW | RTLD_LOCAL) != nullptr) return true;
  }
  return false;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool AllBytesAre(const std::vector<unsigned char>& bytes, unsigned char value) {
  return std::all_of(bytes.begin(), bytes.end(), [value](unsigned char b) { return b == value; });
}

void ExpectUnsupportedNaming(Status (*create)(Platform**), const char* library) {
  Platform* platform = nullptr;
  Status status = create(&platform);
  EXPECT_EQ(status.code(), ccoUnsupported) << status.message();
  EXPECT_TRUE(Contains(status.message(), library)) << status.message();
  EXPECT_EQ(platform, nullptr);
  // Loading is attempted once; asking again gives the same answer, still without crashing.
  Status again = create(&platform);
  EXPECT_EQ(again.code(), ccoUnsupported);
  EXPECT_EQ(again.message(), status.message());
}

// --- the round trip, for whichever driver is present -----------------------------------

void ExpectDeviceInfo(Platform* platform, int* device, size_t* granularity) {
  ASSERT_OK(platform->CurrentDevice(device));
  int count = 0;
  ASSERT_OK(platform->DeviceCount(&count));
  ASSERT_GE(*device, 0);
  ASSERT_LT(*device, count);
  DeviceInfo info;
  ASSERT_OK(platform->GetDeviceInfo(*device, &info));
  EXPECT_EQ(info.ordinal, *device);
  EXPECT_FALSE(info.pciBusId.empty());
  EXPECT_GT(info.totalMemory, 0u);
  ASSERT_GT(info.granularity, 0u);
  EXPECT_EQ(info.granularity & (info.granularity - 1), 0u) << "granularity " << info.granularity;
  *granularity = info.granularity;
}

void ExpectVirtualMemoryRoundTrip(Platform* platform, int device, size_t granule) {
  // Two granules, aligned to two: the alignment argument is honoured.
  uint64_t va = 0;
  ASSERT_OK(platform->Reserve(device, 2 * granule, 2 * granule, &va));
  EXPECT_EQ(va % (2 * granule), 0u);
  const uint64_t second = va + granule;

  MemHandle handle = 0;
  ASSERT_OK(platform->Create(device, granule, &handle));
  ASSERT_OK(platform->Map(device, va, granule, handle, 0));

  std::vector<unsigned char> read(granule);
  ASSERT_OK(platform->Memset(device, va, 0x5a, granule));
  ASSERT_OK(platform->CopyFromDevice(device, read.data(), va, granule));
  EXPECT_TRUE(AllBytesAre(read, 0x5a));

  std::vector<unsigned char> pattern(granule);
  for (size_t i = 0; i < granule; ++i) pattern[i] = static_cast<unsigned char>(i * 131 + 7);
  ASSERT_OK(platform->CopyToDevice(device, va, pattern.data(), granule));
  ASSERT_OK(platform->CopyFromDevice(device, read.data(), va, granule));
  EXPECT_EQ(read, pattern);

  // The same physical memory, exported and imported again, mapped at a second address.
  int fd = -1;
  ASSERT_OK(platform->Export(device, handle, &fd));
  ASSERT_GE(fd, 0);
  MemHandle imported = 0;
  ASSERT_OK(platform->Import(device, fd, granule, &imported));
  ASSERT_OK(platform->Map(device, second, granule, imported, 0));
  std::fill(read.begin(), read.end(), 0);
  ASSERT_OK(platform->CopyFromDevice(device, read.data(), second, granule));
  EXPECT_EQ(read, pattern);

  // A write through one mapping shows through the other.
  std::vector<unsigned char> head(64);
  ASSERT_OK(platform->Memset(device, second, 0x11, head.size()));
  ASSERT_OK(platform->CopyFromDevice(device, head.data(), va, head.size()));
  EXPECT_TRUE(AllBytesAre(head, 0x11));

  ASSERT_OK(platform->Unmap(device, second, granule));
  ASSERT_OK(platform->Unmap(device, va, granule));

  // Unmap left the range reserved: it can be mapped again, and the memory kept its bytes.
  ASSERT_OK(platform->Map(device, va, granule, imported, 0));
  ASSERT_OK(platform->CopyFromDevice(device, head.data(), va, head.size()));
  EXPECT_TRUE(AllBytesAre(head, 0x11));
  ASSERT_OK(platform->CopyFromDevice(device, read.data(), va, granule));
  EXPECT_TRUE(std::equal(pattern.begin() + head.size(), pattern.end(), read.begin() + head.size()));
  ASSERT_OK(platform->Unmap(device, va, granule));

  ASSERT_OK(platform->Destroy(device, imported));
  ASSERT_OK(platform->Destroy(device, handle));
  ASSERT_OK(platform->Release(device, va, 2 * granule));
}

void ExpectHostMappedMemory(Platform* platform, int device) {
  const size_t size = 4096;
  void* host = nullptr;
  uint64_t deviceAddress = 0;
  ASSERT_OK(platform->HostMappedAlloc(device, size, &host, &deviceAddress));
  ASSERT_NE(host, nullptr);
  EXPECT_NE(deviceAddress, 0u);
  const volatile unsigned char* bytes = static_cast<const volatile unsigned char*>(host);
  EXPECT_EQ(bytes[0], 0) << "host-mapped memory starts zeroed";

  // The device writes it; the host sees the bytes.
  ASSERT_OK(platform->Memset(device, deviceAddress, 0x44, size));
  EXPECT_EQ(bytes[0], 0x44);
  EXPECT_EQ(bytes[size - 1], 0x44);
  std::vector<unsigned char> read(size);
  ASSERT_OK(platform->CopyFromDevice(device, read.data(), deviceAddress, size));
  EXPECT_TRUE(AllBytesAre(read, 0x44));
  ASSERT_OK(platform->HostMappedFree(device, host));
}

// The GDA proxy's stream: a copy, then words written behind it into device memory and into
// host-mapped memory, one by one and batched; all land by the synchronise, and a misaligned word is
// refused; then a flag
// word written at once (WriteDeviceWord; a stream write on the GPU platforms), misaligned refused.
void ExpectStreamWork(Platform* platform, int device) {
  uint64_t va = 0;
  void* host = nullptr;
  uint64_t hostDevice = 0;
  ASSERT_OK(platform->DeviceAlloc(device, 256, &va));
  ASSERT_OK(platform->HostMappedAlloc(device, 256, &host, &hostDevice));
  std::vector<unsigned char> bytes(64);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
  ASSERT_OK(platform->CopyToDevice(device, va, bytes.data(), bytes.size()));
  uint64_t stream = 0;
  ASSERT_OK(platform->StreamCreate(device, &stream));
  ASSERT_OK(platform->CopyOnStream(device, stream, hostDevice, va, bytes.size()));
  ASSERT_OK(platform->StreamWriteValue64(device, stream, hostDevice + 128, 0x0123456789abcdefull));
  ASSERT_OK(platform->StreamWriteValue64(device, stream, va + 128, ~0ull - 5));
  ASSERT_OK(platform->StreamSynchronize(device, stream));
  EXPECT_EQ(memcmp(host, bytes.data(), bytes.size()), 0);
  EXPECT_EQ(static_cast<const volatile uint64_t*>(host)[16], 0x0123456789abcdefull);
  uint64_t word = 0;
  ASSERT_OK(platform->CopyFromDevice(device, &word, va + 128, sizeof(word)));
  EXPECT_EQ(word, ~0ull - 5);
  Status status = platform->StreamWriteValue64(device, stream, va + 4, 1);
  EXPECT_EQ(status.code(), ccoInvalidArgument) << status.message();
  // Writes in a row, one submission where the driver batches them (more than one batch's worth
  // on CUDA: 80 > 64), in order: a word written twice keeps the second value.
  std::vector<uint64_t> addresses, values;
  for (uint64_t i = 0; i < 80; ++i) {
    addresses.push_back(hostDevice + 8 * (i % 20));
    values.push_back(1000 + i);
  }
  ASSERT_OK(platform->StreamWriteValues64(device, stream, addresses.data(), values.data(), 80));
  ASSERT_OK(platform->StreamSynchronize(device, stream));
  for (uint64_t w = 0; w < 20; ++w) EXPECT_EQ(static_cast<const volatile uint64_t*>(host)[w], 1060 + w) << w;
  addresses[1] = va + 4;
  status = platform->StreamWriteValues64(device, stream, addresses.data(), values.data(), 2);
  EXPECT_EQ(status.code(), ccoInvalidArgument) << status.message();
  // Copies that touch none of each other's bytes, in few submissions where the platform can
  // (CCO_COPY_GRAPHS=1 on CUDA; more than one graph's worth: 96 > 16): byte i of the device
  // bytes to byte 255 - i of the host buffer, then a word behind them all.
  void* scattered = nullptr;
  uint64_t scatteredDevice = 0;
  ASSERT_OK(platform->HostMappedAlloc(device, 256, &scattered, &scatteredDevice));
  memset(scattered, 0, 256);
  std::vector<uint64_t> dsts, srcs, sizes;
  for (uint64_t i = 0; i < 96; ++i) {
    dsts.push_back(scatteredDevice + 255 - i);
    srcs.push_back(va + i % 64);
    sizes.push_back(1);
  }
  ASSERT_OK(platform->CopiesOnStream(device, stream, dsts.data(), srcs.data(), sizes.data(), 96));
  ASSERT_OK(platform->StreamSynchronize(device, stream));
  const auto* landed = static_cast<const volatile unsigned char*>(scattered);
  for (size_t i = 0; i < 96; ++i) EXPECT_EQ(landed[255 - i], bytes[i % 64]) << i;
  EXPECT_EQ(landed[0], 0u);  // nothing beyond the copies
  ASSERT_OK(platform->HostMappedFree(device, scattered));
  // A flag word for running kernels (a failed ring's mirror): written at once, whole.
  ASSERT_OK(platform->WriteDeviceWord(device, va + 136, 0xfeedfacecafef00dull));
  ASSERT_OK(platform->CopyFromDevice(device, &word, va + 136, sizeof(word)));
  EXPECT_EQ(word, 0xfeedfacecafef00dull);
  status = platform->WriteDeviceWord(device, va + 4, 1);  // a single store needs an aligned word
  EXPECT_EQ(status.code(), ccoInvalidArgument) << status.message();
  ASSERT_OK(platform->StreamDestroy(device, stream));
  ASSERT_OK(platform->HostMappedFree(device, host));
  ASSERT_OK(platform->DeviceFree(device, va));
}

// Runs of copies between two VMM allocations, as the proxy queues them between windows: each
// run has other operands and sizes than the one before, some runs go the other way (a prepared
// graph's nodes moved to other allocations), the last repeats an earlier run's copies (a graph
// launched as it stands), some have words written behind them (a host-mapped word, as a ring's
// `consumed`, and a word the run's first copy also writes, which the write must win), and every
// byte lands where it should.
void ExpectCopyRuns(Platform* platform, int device) {
  constexpr size_t kBytes = 64 << 10, kSlot = 2048;
  // Two mappings of their own in one reservation, as windows are (VMM memory: what a proxy's
  // prepared copies are made for).
  DeviceInfo info;
  ASSERT_OK(platform->GetDeviceInfo(device, &info));
  const size_t granule = info.granularity < kBytes ? kBytes : info.granularity;
  uint64_t a = 0;
  ASSERT_OK(platform->Reserve(device, 2 * granule, 0, &a));
  const uint64_t b = a + granule;
  MemHandle handles[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(platform->Create(device, granule, &handles[i]));
    ASSERT_OK(platform->Map(device, a + i * granule, granule, handles[i], 0));
  }
  std::vector<unsigned char> hostA(kBytes), hostB(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i) hostA[i] = static_cast<unsigned char>(i * 131 + (i >> 8) + 7);
  ASSERT_OK(platform->CopyToDevice(device, a, hostA.data(), kBytes));
  ASSERT_OK(platform->CopyToDevice(device, b, hostB.data(), kBytes));
  void* words = nullptr;
  uint64_t wordsDevice = 0;
  ASSERT_OK(platform->HostMappedAlloc(device, 64, &words, &wordsDevice));
  memset(words, 0, 64);
  uint64_t stream = 0;
  ASSERT_OK(platform->StreamCreate(device, &stream));
  for (int step = 0; step < 7; ++step) {
    const int run = step == 6 ? 4 : step;  // the last repeats run 4's copies (of bytes run 5 changed)
    const int count = run < 4 ? 16 : 5;    // the same graph reused, then another
    const bool back = run % 2 == 1;        // b -> a: both operands in the other allocation
    std::vector<unsigned char>& from = back ? hostB : hostA;
    std::vector<unsigned char>& to = back ? hostA : hostB;
    std::vector<uint64_t> dsts, srcs, sizes;
    for (int k = 0; k < count; ++k) {
      const size_t size = 1 + (k * 97 + run * 31) % kSlot;                          // 1 .. 2048 bytes
      const size_t srcSlot = (k * 5 + run) % 32, dstSlot = (k * 7 + 3 * run) % 32;  // distinct: 7 is odd
      srcs.push_back((back ? b : a) + srcSlot * kSlot);
      dsts.push_back((back ? a : b) + dstSlot * kSlot);
      sizes.push_back(size);
      memcpy(&to[dstSlot * kSlot], &from[srcSlot * kSlot], size);  // the expected bytes
    }
    const bool written = step >= 2 && step != 4;  // runs of 16 and of 5 with writes; run 4 without
    const uint64_t value = 0x1000 + step, firstDst = dsts[0] - (back ? a : b);
    const uint64_t addresses[2] = {wordsDevice + 8 * (step % 8), dsts[0]};
    const uint64_t values[2] = {value, ~value};
    if (written) {
      memcpy(&to[firstDst], &values[1], 8);
      ASSERT_OK(platform->CopiesThenWrites(device, stream, dsts.data(), srcs.data(), sizes.data(), count, addresses,
                                           values, 2));
    } else {
      ASSERT_OK(platform->CopiesOnStream(device, stream, dsts.data(), srcs.data(), sizes.data(), count));
    }
    ASSERT_OK(platform->StreamSynchronize(device, stream));
    if (written) {
      EXPECT_EQ(static_cast<const volatile uint64_t*>(words)[step % 8], value) << "step " << step;
    }
    std::vector<unsigned char> readA(kBytes), readB(kBytes);
    ASSERT_OK(platform->CopyFromDevice(device, readA.data(), a, kBytes));
    ASSERT_OK(platform->CopyFromDevice(device, readB.data(), b, kBytes));
    EXPECT_TRUE(readA == hostA) << "step " << step;
    EXPECT_TRUE(readB == hostB) << "step " << step;
  }
  ASSERT_OK(platform->StreamDestroy(device, stream));
  ASSERT_OK(platform->HostMappedFree(device, words));
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(platform->Unmap(device, a + i * granule, granule));
    ASSERT_OK(platform->Destroy(device, handles[i]));
  }
  ASSERT_OK(platform->Release(device, a, 2 * granule));
}

// Host words (comm/host_words.h): two mappings of one memfd, as a rank and its in-process peer
// have them, each registered for the device. A word the stream writes through one mapping's
// device address is what the CPU reads through the other, and a CPU store through one is what
// the device reads through the other.
void ExpectHostRegistration(Platform* platform, int device) {
  constexpr size_t kBytes = 64 << 10;
  int fd = -1;
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_OK(CreateSealedMemfd("cco-test", kBytes, &fd));
  ASSERT_OK(MapMemfd(fd, kBytes, &a));
  ASSERT_OK(MapMemfd(fd, kBytes, &b));
  close(fd);
  uint64_t deviceA = 0, deviceB = 0;
  ASSERT_OK(platform->HostRegister(device, a, kBytes, &deviceA));
  ASSERT_OK(platform->HostRegister(device, b, kBytes, &deviceB));
  EXPECT_NE(deviceA, 0u);
  EXPECT_NE(deviceB, 0u);
  uint64_t stream = 0;
  ASSERT_OK(platform->StreamCreate(device, &stream));
  ASSERT_OK(platform->StreamWriteValue64(device, stream, deviceB + 4096, 0x1122334455667788ull));
  ASSERT_OK(platform->StreamSynchronize(device, stream));
  EXPECT_EQ(static_cast<const volatile uint64_t*>(a)[512], 0x1122334455667788ull);
  __atomic_store_n(static_cast<uint64_t*>(a) + 9, 0x99u, __ATOMIC_RELEASE);
  uint64_t word = 0;
  ASSERT_OK(platform->CopyFromDevice(device, &word, deviceB + 72, sizeof(word)));
  EXPECT_EQ(word, 0x99u);
  ASSERT_OK(platform->StreamDestroy(device, stream));
  ASSERT_OK(platform->HostUnregister(device, a));
  ASSERT_OK(platform->HostUnregister(device, b));
  munmap(a, kBytes);
  munmap(b, kBytes);
}

void ExpectDeviceMemoryFromAnotherThread(Platform* platform, int device) {
  uint64_t va = 0;
  const std::vector<unsigned char> data = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_OK(platform->DeviceAlloc(device, 256, &va));
  EXPECT_NE(va, 0u);
  ASSERT_OK(platform->CopyToDevice(device, va, data.data(), data.size()));

  // A fresh thread has no device bound yet: every call binds it itself.
  Status threadStatus;
  std::vector<unsigned char> read(data.size());
  std::thread reader([&] {
    int current = -1;
    threadStatus = platform->CurrentDevice(&current);
    if (threadStatus.ok()) threadStatus = platform->CopyFromDevice(device, read.data(), va, read.size());
  });
  reader.join();
  ASSERT_TRUE(threadStatus.ok()) << threadStatus.message();
  EXPECT_EQ(read, data);
  ASSERT_OK(platform->DeviceFree(device, va));
}

// Failures are statuses that say what was asked, and Import owns its descriptor even
// when the driver refuses it.
void ExpectCleanFailures(Platform* platform, int device, size_t granule) {
  int count = 0;
  ASSERT_OK(platform->DeviceCount(&count));
  MemHandle handle = 0;
  Status status = platform->Create(count, granule, &handle);
  EXPECT_EQ(status.code(), ccoInvalidArgument) << status.message();

  uint64_t va = 0;
  status = platform->Reserve(device, granule, 3, &va);
  EXPECT_EQ(status.code(), ccoInvalidArgument) << status.message();

  status = platform->Import(device, -1, granule, &handle);
  EXPECT_EQ(status.code(), ccoInvalidArgument) << status.message();

  // A pipe is no memory handle. Once Import has closed the write end, the read end sees
  // end-of-file rather than "would block".
  int ends[2];
  ASSERT_EQ(pipe2(ends, O_NONBLOCK | O_CLOEXEC), 0);
  status = platform->Import(device, ends[1], granule, &handle);
  EXPECT_EQ(status.code(), ccoPlatformError) << status.message();
  EXPECT_TRUE(Contains(status.message(), "ImportFromShareableHandle")) << status.message();
  char byte = 0;
  EXPECT_EQ(read(ends[0], &byte, 1), 0) << "Import left the descriptor open (errno " << errno << ")";
  close(ends[0]);
}

void ExpectCudaSizeErrorNamesTheCall(Platform* platform, int device, size_t granule) {
  MemHandle handle = 0;
  Status status = platform->Create(device, granule + 1, &handle);
  EXPECT_EQ(status.code(), ccoPlatformError) << status.message();
  EXPECT_TRUE(Contains(status.message(), "cuMemCreate")) << status.message();
  EXPECT_TRUE(Contains(status.message(), Fmt("size=", granule + 1))) << status.message();
  EXPECT_TRUE(Contains(status.message(), Fmt("device=", device))) << status.message();
}

// The platform, or a skip when the driver is missing here or sees no device.
void CreateOrSkip(Status (*create)(Platform**), const char* const* libraries, Platform** platform, bool* skipped) {
  *skipped = true;
  if (!AnyLibraryLoads(libraries)) GTEST_SKIP() << libraries[0] << " is not installed here";
  Status status = create(platform);
  if (status.code() == ccoUnsupported && Contains(status.message(), "sees no device")) {
    GTEST_SKIP() << status.message();
  }
  ASSERT_TRUE(status.ok()) << status.message();
  *skipped = false;
}

void RunRoundTrip(Platform* platform) {
  int device = -1;
  size_t granule = 0;
  ASSERT_NO_FATAL_FAILURE(ExpectDeviceInfo(platform, &device, &granule));
  ASSERT_NO_FATAL_FAILURE(ExpectVirtualMemoryRoundTrip(platform, device, granule));
  ASSERT_NO_FATAL_FAILURE(ExpectHostMappedMemory(platform, device));
  ASSERT_NO_FATAL_FAILURE(ExpectStreamWork(platform, device));
  ASSERT_NO_FATAL_FAILURE(ExpectHostRegistration(platform, device));
  ASSERT_NO_FATAL_FAILURE(ExpectDeviceMemoryFromAnotherThread(platform, device));
  ASSERT_NO_FATAL_FAILURE(ExpectCleanFailures(platform, device, granule));
}

// --- cpu (what CI runs the proxy on) ------------------------------------------------------

TEST(CpuPlatformTest, StreamWorkLandsAtOnce) {
  Platform* platform = nullptr;
  ASSERT_OK(CreateCpuPlatform(&platform));
  ExpectStreamWork(platform, 0);
  ExpectCopyRuns(platform, 0);
  ExpectHostRegistration(platform, 0);
  delete platform;
}

// --- CUDA -------------------------------------------------------------------------------

TEST(CudaPlatformTest, MissingDriverIsUnsupported) {
  if (AnyLibraryLoads(kCudaLibraries)) GTEST_SKIP() << "libcuda.so.1 is installed here";
  ExpectUnsupportedNaming(&CreateCudaPlatform, "libcuda.so.1");
}

TEST(CudaPlatformTest, VirtualMemoryRoundTrip) {
  Platform* platform = nullptr;
  bool skipped = true;
  CreateOrSkip(&CreateCudaPlatform, kCudaLibraries, &platform, &skipped);
  if (skipped) return;
  EXPECT_EQ(platform->kind(), ccoPlatformCuda);
  EXPECT_STREQ(platform->name(), "cuda");
  RunRoundTrip(platform);
  int device = 0;
  DeviceInfo info;
  ASSERT_OK(platform->CurrentDevice(&device));
  ASSERT_OK(platform->GetDeviceInfo(device, &info));
  ExpectCudaSizeErrorNamesTheCall(platform, device, info.granularity);
  delete platform;
}

// --- HIP --------------------------------------------------------------------------------

// Alone, so that tests/gpu can run it with CCO_COPY_GRAPHS=1 and find no refusal said.
TEST(CudaPlatformTest, CopyRunsLandExactly) {
  Platform* platform = nullptr;
  bool skipped = true;
  CreateOrSkip(&CreateCudaPlatform, kCudaLibraries, &platform, &skipped);
  if (skipped) return;
  int device = 0;
  ASSERT_OK(platform->CurrentDevice(&device));
  ExpectCopyRuns(platform, device);
  delete platform;
}

// The proxy's stream work while the process loads a module in its primary context: a load
// (CUDA's lazy loading, at a kernel's first launch) waits for that context's running kernel,
// and holds back the stream calls made in that context meanwhile; the proxy's own context
// (platform/proxy_scope.h) is not held back. A kernel of the primary context spins on a
// host-mapped word; a second thread loads a module; a third, in a ProxyWorkScope, copies and
// writes on a stream of the proxy's, which must be done long before the kernel is released.
namespace spin {

// Spins until the word at its parameter is not 0, or 5 s went by. (PTX: the driver compiles it
// for whatever GPU this is.)
const char kSpinModule[] =
    ".version 8.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry spin(.param .u64 word) {\n"
    "  .reg .pred p; .reg .u64 a, v, t0, t, d;\n"
    "  ld.param.u64 a, [word];\n  mov.u64 t0, %globaltimer;\n"
    "again:\n  ld.volatile.global.u64 v, [a];\n  setp.ne.u64 p, v, 0;\n  @p bra done;\n"
    "  mov.u64 t, %globaltimer;\n  sub.u64 d, t, t0;\n  setp.lt.u64 p, d, 5000000000;\n  @p bra again;\n"
    "done:\n  ret;\n}\n";
const char kOtherModule[] = ".version 8.0\n.target sm_70\n.address_size 64\n.visible .entry other() { ret; }\n";

struct Driver {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  template <class Fn> Fn Get(const char* name) { return reinterpret_cast<Fn>(dlsym(library, name)); }
};

}  // namespace spin

TEST(CudaPlatformTest, ProxyStreamsAreNotHeldBackByAModuleLoad) {
  Platform* platform = nullptr;
  bool skipped = true;
  CreateOrSkip(&CreateCudaPlatform, kCudaLibraries, &platform, &skipped);
  if (skipped) return;
  if (!ProxyWorkScope::OwnContext()) GTEST_SKIP() << "CCO_PROXY_CONTEXT=0: the proxy works in the primary context";
  int device = 0;
  ASSERT_OK(platform->CurrentDevice(&device));
  spin::Driver d;
  using Ctx = void*;
  auto primaryRetain = d.Get<int (*)(Ctx*, int)>("cuDevicePrimaryCtxRetain");
  auto setCurrent = d.Get<int (*)(Ctx)>("cuCtxSetCurrent");
  auto loadData = d.Get<int (*)(void**, const void*)>("cuModuleLoadData");
  auto getFunction = d.Get<int (*)(void**, void*, const char*)>("cuModuleGetFunction");
  auto launch = d.Get<int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                              void**, void**)>("cuLaunchKernel");
  auto sync = d.Get<int (*)()>("cuCtxSynchronize");
  ASSERT_TRUE(primaryRetain && setCurrent && loadData && getFunction && launch && sync);
  Ctx primary = nullptr;
  ASSERT_EQ(primaryRetain(&primary, device), 0);  // (ordinal == CUdevice on every driver CCO loads)
  ASSERT_EQ(setCurrent(primary), 0);
  void* module = nullptr;
  void* kernel = nullptr;
  ASSERT_EQ(loadData(&module, spin::kSpinModule), 0);
  ASSERT_EQ(getFunction(&kernel, module, "spin"), 0);

  void* word = nullptr;
  uint64_t wordDevice = 0, va = 0;
  ASSERT_OK(platform->HostMappedAlloc(device, 8, &word, &wordDevice));
  ASSERT_OK(platform->DeviceAlloc(device, 256, &va));
  const std::vector<unsigned char> bytes = {9, 8, 7, 6, 5, 4, 3, 2};
  ASSERT_OK(platform->CopyToDevice(device, va, bytes.data(), bytes.size()));
  uint64_t proxyStream = 0;
  {
    ProxyWorkScope scope;  // the proxy's context and stream, made before any kernel runs (as Attach does)
    ASSERT_OK(platform->StreamCreate(device, &proxyStream));
  }
  ASSERT_EQ(setCurrent(primary), 0);
  void* params[] = {&wordDevice};
  ASSERT_EQ(launch(kernel, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), 0);
  std::chrono::steady_clock::time_point loaded, released;
  std::thread loader([&] {
    setCurrent(primary);
    void* other = nullptr;
    loadData(&other, spin::kOtherModule);  // waits for the kernel
    loaded = std::chrono::steady_clock::now();
  });
  usleep(50 * 1000);  // the load is waiting by now
  Status proxyStatus;
  double stepsMs[3] = {0, 0, 0};  // ms from the start: the copy queued, the write queued, the stream synchronised
  std::atomic<bool> done{false};
  std::thread proxy([&] {
    ProxyWorkScope scope;
    const auto start = std::chrono::steady_clock::now();
    const auto since = [&] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    proxyStatus = platform->CopyOnStream(device, proxyStream, va + 64, va, bytes.size());
    stepsMs[0] = since();
    if (proxyStatus.ok()) proxyStatus = platform->StreamWriteValue64(device, proxyStream, va + 128, 77);
    stepsMs[1] = since();
    if (proxyStatus.ok()) proxyStatus = platform->StreamSynchronize(device, proxyStream);
    stepsMs[2] = since();
    done = true;
  });
  // Released once the proxy's work is done, or after 2 s (then the test fails, below).
  for (int i = 0; i < 200 && !done; ++i) usleep(10 * 1000);
  released = std::chrono::steady_clock::now();
  __atomic_store_n(static_cast<uint64_t*>(word), 1, __ATOMIC_RELEASE);
  proxy.join();
  loader.join();
  // The load was still waiting when the kernel was let go: what the test holds the proxy
  // beside really happened (a driver that stops holding loads behind kernels ends it here).
  EXPECT_GE(loaded, released) << "the module load did not wait for the running kernel";
  ASSERT_EQ(sync(), 0);
  ASSERT_TRUE(proxyStatus.ok()) << proxyStatus.message();
  EXPECT_LT(stepsMs[2], 1000.0) << "the proxy's stream work waited for the primary context's module load (ms from "
                                   "the start: copy queued "
                                << stepsMs[0] << ", write queued " << stepsMs[1] << ", synchronised " << stepsMs[2]
                                << ")";
  std::vector<unsigned char> back(bytes.size());
  uint64_t written = 0;
  ASSERT_OK(platform->CopyFromDevice(device, back.data(), va + 64, back.size()));
  ASSERT_OK(platform->CopyFromDevice(device, &written, va + 128, sizeof written));
  EXPECT_EQ(back, bytes);
  EXPECT_EQ(written, 77u);
  {
    ProxyWorkScope scope;
    ASSERT_OK(platform->StreamDestroy(device, proxyStream));
  }
  ASSERT_OK(platform->DeviceFree(device, va));
  ASSERT_OK(platform->HostMappedFree(device, word));
  delete platform;
}

TEST(HipPlatformTest, MissingDriverIsUnsupported) {
  if (AnyLibraryLoads(kHipLibraries)) GTEST_SKIP() << "libamdhip64 is installed here";
  ExpectUnsupportedNaming(&CreateHipPlatform, "libamdhip64.so");
}

TEST(HipPlatformTest, VirtualMemoryRoundTrip) {
  Platform* platform = nullptr;
  bool skipped = true;
  CreateOrSkip(&CreateHipPlatform, kHipLibraries, &platform, &skipped);
  if (skipped) return;
  EXPECT_EQ(platform->kind(), ccoPlatformHip);
  EXPECT_STREQ(platform->name(), "hip");
  RunRoundTrip(platform);
  delete platform;
}

// --- the shared logic over a fake driver --------------------------------------------------

// What the fake driver was asked; the table's entries are plain functions, so it is global.
struct FakeDriver {
  int boundDevice = -1;          // the thread's binding as the fake driver keeps it (-1: none)
  std::vector<int> devicesUsed;  // every device a call bound, in order
  uint64_t nextVa = 0;
  std::vector<std::pair<uint64_t, size_t>> reserved;
  std::vector<std::pair<uint64_t, size_t>> freed;
  gpu::MemAllocationProp createdProp = {};
  bool failSetAccess = false;
  bool refuseOffsets = false;   // a driver that maps only from a handle's first byte
  bool ignoresOffsets = false;  // one that says yes and maps from the first byte anyway
  int maps = 0;
  int unmaps = 0;
  int streams = 0;
  std::vector<std::pair<void*, gpu::DeviceAddress>> prepared;  // (stream, scratch) of each preparation
};
FakeDriver fake;

std::string FakeDescribe(gpu::DriverResult result) { return Fmt("FAKE_ERROR_", result); }
Status FakeEnter(int device, uint64_t* saved) {
  *saved = static_cast<uint64_t>(fake.boundDevice);
  fake.boundDevice = device;
  fake.devicesUsed.push_back(device);
  return Status::Ok();
}
void FakeLeave(uint64_t saved) { fake.boundDevice = static_cast<int>(saved); }
Status FakeCurrent(int* device) {
  *device = fake.boundDevice < 0 ? 0 : fake.boundDevice;
  return Status::Ok();
}
gpu::DriverResult FakeCount(int* count) {
  *count = 2;
  return 0;
}
// Ignores the alignment, like drivers that take it as a hint: every address it hands out
// is 4 KiB past a 2 MiB boundary.
gpu::DriverResult FakeReserve(uint64_t* va, size_t size, size_t, uint64_t, unsigned long long) {
  *va = fake.nextVa;
  fake.reserved.emplace_back(*va, size);
  fake.nextVa += ((size + (2u << 20) - 1) / (2u << 20) + 1) * (2u << 20);
  return 0;
}
gpu::DriverResult FakeFree(uint64_t va, size_t size) {
  fake.freed.emplace_back(va, size);
  return 0;
}
gpu::DriverResult FakeCreate(uint64_t* handle, size_t, const gpu::MemAllocationProp* prop, unsigned long long) {
  fake.createdProp = *prop;
  *handle = 0x1234;
  return 0;
}
gpu::DriverResult FakeImportRefuses(uint64_t*, int) { return 1; }
gpu::DriverResult FakeBusId(char* busId, int length, int device) {
  snprintf(busId, length, "0000:%02x:00.0", 0x18 + device);
  return 0;
}
gpu::DriverResult FakeMap(uint64_t, size_t, size_t offset, uint64_t, unsigned long long) {
  ++fake.maps;
  return fake.refuseOffsets && offset != 0 ? 1 : 0;
}
gpu::DriverResult FakeGranularity(size_t* g, const gpu::MemAllocationProp*, int) {
  *g = 2 << 20;
  return 0;
}
gpu::DriverResult FakeRelease(uint64_t) { return 0; }
gpu::DriverResult FakeMemset(uint64_t, unsigned char, size_t) { return 0; }
gpu::DriverResult FakeSync() { return 0; }
// What a read returns: the byte the probe wrote at the offset, or (a driver that ignores
// the offset) the one it wrote before it.
gpu::DriverResult FakeCopyDtoH(void* dst, uint64_t, size_t) {
  *static_cast<unsigned char*>(dst) = fake.ignoresOffsets ? 0x11 : 0xab;
  return 0;
}
gpu::DriverResult FakeSetAccess(uint64_t, size_t, const gpu::MemAccessDesc*, size_t) {
  return fake.failSetAccess ? 2 : 0;
}
gpu::DriverResult FakeUnmap(uint64_t, size_t) {
  ++fake.unmaps;
  return 0;
}

class FakeDriverTest : public ::testing::Test {
 protected:
  FakeDriverTest() : platform_(FakeApi()) {
    fake = FakeDriver();
    fake.nextVa = (64u << 20) + 4096;
  }

  static gpu::GpuDriverApi FakeApi() {
    gpu::GpuDriverApi api;
    api.platformName = "fake";
    api.describeError = &FakeDescribe;
    api.enterDevice = &FakeEnter;
    api.leaveDevice = &FakeLeave;
    api.currentDevice = &FakeCurrent;
    api.deviceCount = {&FakeCount, "fakeDeviceCount"};
    api.pciBusId = {&FakeBusId, "fakePciBusId"};
    api.addressReserve = {&FakeReserve, "fakeAddressReserve"};
    api.addressFree = {&FakeFree, "fakeAddressFree"};
    api.memCreate = {&FakeCreate, "fakeMemCreate"};
    api.importFd = {&FakeImportRefuses, "fakeImport"};
    api.memMap = {&FakeMap, "fakeMemMap"};
    api.allocationGranularity = {&FakeGranularity, "fakeGranularity"};
    api.memRelease = {&FakeRelease, "fakeMemRelease"};
    api.memsetD8 = {&FakeMemset, "fakeMemset"};
    api.synchronize = {&FakeSync, "fakeSync"};
    api.copyDtoH = {&FakeCopyDtoH, "fakeCopyDtoH"};
    api.memSetAccess = {&FakeSetAccess, "fakeMemSetAccess"};
    api.memUnmap = {&FakeUnmap, "fakeMemUnmap"};
    return api;
  }

  gpu::GpuVmmPlatform platform_;
};

TEST_F(FakeDriverTest, ReserveAlignsWhereTheDriverDoesNot) {
  const size_t size = 16 << 10;
  const size_t alignment = 2 << 20;
  uint64_t va = 0;
  ASSERT_OK(platform_.Reserve(1, size, alignment, &va));
  EXPECT_EQ(va % alignment, 0u);
  // The misaligned first try was given back; the padded one holds the aligned range.
  ASSERT_EQ(fake.reserved.size(), 2u);
  ASSERT_EQ(fake.freed.size(), 1u);
  EXPECT_EQ(fake.freed[0], fake.reserved[0]);
  const uint64_t base = fake.reserved[1].first;
  const size_t padded = fake.reserved[1].second;
  EXPECT_GE(va, base);
  EXPECT_LE(va + size, base + padded);

  ASSERT_OK(platform_.Release(1, va, size));
  ASSERT_EQ(fake.freed.size(), 2u);
  EXPECT_EQ(fake.freed[1], fake.reserved[1]);
}

TEST_F(FakeDriverTest, ReserveRejectsAnAlignmentThatIsNoPowerOfTwo) {
  uint64_t va = 0;
  EXPECT_EQ(platform_.Reserve(1, 4096, 3 << 20, &va).code(), ccoInvalidArgument);
  EXPECT_TRUE(fake.reserved.empty());
}

TEST_F(FakeDriverTest, CreateAsksForShareableMemoryOnTheGivenDevice) {
  MemHandle handle = 0;
  ASSERT_OK(platform_.Create(1, 2 << 20, &handle));
  EXPECT_EQ(handle, 0x1234u);
  EXPECT_EQ(fake.devicesUsed, std::vector<int>{1});
  EXPECT_EQ(fake.createdProp.type, gpu::kMemAllocationTypePinned);
  EXPECT_EQ(fake.createdProp.requestedHandleTypes, gpu::kMemHandleTypePosixFileDescriptor);
  EXPECT_EQ(fake.createdProp.location.type, gpu::kMemLocationTypeDevice);
  EXPECT_EQ(fake.createdProp.location.id, 1);
  EXPECT_EQ(platform_.Create(2, 2 << 20, &handle).code(), ccoInvalidArgument);
}

// The defect behind "two communicators on two GPUs fault": a call that bound its device
// and left it bound moved the caller's next kernel launch to another GPU.
TEST_F(FakeDriverTest, EveryCallGivesTheCallersDeviceBack) {
  for (int caller : {-1, 0}) {
    fake.boundDevice = caller;
    uint64_t va = 0;
    MemHandle handle = 0;
    ASSERT_OK(platform_.Reserve(1, 4096, 0, &va));
    EXPECT_EQ(fake.boundDevice, caller);
    ASSERT_OK(platform_.Create(1, 2 << 20, &handle));
    EXPECT_EQ(fake.boundDevice, caller);
    ASSERT_OK(platform_.Map(1, 64 << 20, 2 << 20, handle, 0));
    EXPECT_EQ(fake.boundDevice, caller);
    ASSERT_OK(platform_.Unmap(1, 64 << 20, 2 << 20));
    EXPECT_EQ(fake.boundDevice, caller);
    EXPECT_EQ(platform_.Map(5, 64 << 20, 2 << 20, handle, 0).code(), ccoInvalidArgument);
    EXPECT_EQ(fake.boundDevice, caller);
  }
  EXPECT_EQ(fake.devicesUsed, std::vector<int>(8, 1));
}

// Learning every GPU's bus id (CPU affinity) must not bind, and so create a context on,
// any of them: each costs hundreds of milliseconds on a real driver.
TEST_F(FakeDriverTest, CurrentDeviceAndBusIdsBindNothing) {
  fake.boundDevice = 1;
  int device = -1;
  ASSERT_OK(platform_.CurrentDevice(&device));
  EXPECT_EQ(device, 1);
  std::string bus0, bus1;
  ASSERT_OK(platform_.BusId(0, &bus0));
  ASSERT_OK(platform_.BusId(1, &bus1));
  EXPECT_EQ(bus0, "0000:18:00.0");
  EXPECT_EQ(bus1, "0000:19:00.0");
  EXPECT_EQ(platform_.BusId(2, &bus0).code(), ccoInvalidArgument);
  EXPECT_TRUE(fake.devicesUsed.empty());
  EXPECT_EQ(fake.boundDevice, 1);
}

gpu::DriverResult FakeStreamCreate(void** stream, unsigned) {
  *stream = reinterpret_cast<void*>(static_cast<uintptr_t>(0x5000 + ++fake.streams));
  return 0;
}
gpu::DriverResult FakeTotalMemory(size_t* bytes, int) {
  *bytes = size_t{80} << 30;
  return 0;
}
gpu::DriverResult FakePrepareCopies(void* stream, gpu::DeviceAddress scratch) {
  fake.prepared.emplace_back(stream, scratch);
  return 0;
}

// Copy lanes prepare a stream with no scratch: none is allocated. Prepared graphs work within
// device memory: one granule a device, made with the device's first stream and kept for its next.
TEST_F(FakeDriverTest, StreamsGetCopyScratchOnlyWherePreparedCopiesTakeIt) {
  gpu::GpuDriverApi api = FakeApi();
  api.streamCreate = {&FakeStreamCreate, "fakeStreamCreate"};
  api.prepareStreamCopies = &FakePrepareCopies;
  api.totalMemory = {&FakeTotalMemory, "fakeTotalMemory"};
  {
    gpu::GpuVmmPlatform lanes(api);
    uint64_t stream = 0;
    ASSERT_OK(lanes.StreamCreate(1, &stream));
    ASSERT_EQ(fake.prepared.size(), 1u);
    EXPECT_EQ(fake.prepared[0].first, reinterpret_cast<void*>(stream));
    EXPECT_EQ(fake.prepared[0].second, 0u);
    EXPECT_TRUE(fake.reserved.empty());
  }
  api.copiesTakeScratch = true;
  gpu::GpuVmmPlatform graphs(api);
  uint64_t first = 0, second = 0;
  ASSERT_OK(graphs.StreamCreate(1, &first));
  const size_t reservations = fake.reserved.size();
  ASSERT_OK(graphs.StreamCreate(1, &second));
  ASSERT_EQ(fake.prepared.size(), 3u);
  EXPECT_NE(fake.prepared[1].second, 0u);
  EXPECT_EQ(fake.prepared[2].second, fake.prepared[1].second);
  EXPECT_GT(reservations, 0u);
  EXPECT_EQ(fake.reserved.size(), reservations);
}

// Whether a driver maps at an offset into a handle is learned by trying, once.
TEST_F(FakeDriverTest, OffsetMappingIsProbedOnce) {
  EXPECT_TRUE(platform_.MapsAtOffset(1));
  EXPECT_EQ(fake.maps, 2);
  EXPECT_EQ(fake.unmaps, 2);
  EXPECT_TRUE(platform_.MapsAtOffset(1));
  EXPECT_EQ(fake.maps, 2);
  EXPECT_EQ(fake.boundDevice, -1);  // the probe gave the binding back
  gpu::GpuVmmPlatform refusing(FakeApi());
  fake.refuseOffsets = true;
  EXPECT_FALSE(refusing.MapsAtOffset(1));
  gpu::GpuVmmPlatform ignoring(FakeApi());
  fake.refuseOffsets = false;
  fake.ignoresOffsets = true;
  EXPECT_FALSE(ignoring.MapsAtOffset(1));
}

TEST_F(FakeDriverTest, MapUndoesTheMappingWhenAccessIsRefused) {
  fake.failSetAccess = true;
  Status status = platform_.Map(1, 64 << 20, 2 << 20, 0x1234, 0);
  EXPECT_EQ(status.code(), ccoPlatformError);
  EXPECT_EQ(status.message(),
            "fakeMemSetAccess(va=0x4000000, size=2097152, device=1, read/write) failed: FAKE_ERROR_2");
  EXPECT_EQ(fake.unmaps, 1);
}

TEST_F(FakeDriverTest, ImportClosesTheDescriptorWhenTheDriverRefusesIt) {
  int ends[2];
  ASSERT_EQ(pipe2(ends, O_NONBLOCK | O_CLOEXEC), 0);
  MemHandle handle = 0;
  Status status = platform_.Import(1, ends[1], 4096, &handle);
  EXPECT_EQ(status.code(), ccoPlatformError);
  EXPECT_TRUE(Contains(status.message(), Fmt("fakeImport(fd=", ends[1], ", size=4096"))) << status.message();
  char byte = 0;
  EXPECT_EQ(read(ends[0], &byte, 1), 0) << "the write end is still open";
  close(ends[0]);
}

}  // namespace
}  // namespace cco
