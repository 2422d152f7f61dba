// SPDX-License-Identifier: MIT
// A platform that forwards every call to another and counts what went through it: the pinned
// host allocations (count and bytes), every call a GPU driver may make wait for running
// kernels (allocations, stream creation, frees: tools/perf/blocking_call_probe.cu), which a
// backend must not make once kernels can wait for it, and the copies each stream submission
// carried. Copies submitted together run last first: a batch's copies have no order among
// themselves, so a caller that relied on one shows it.
#ifndef CCO_TESTS_HOST_TESTING_COUNTING_PLATFORM_H_
#define CCO_TESTS_HOST_TESTING_COUNTING_PLATFORM_H_

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "platform/platform.h"

namespace cco {

class CountingPlatform final : public Platform {
 public:
  explicit CountingPlatform(Platform* inner) : inner_(inner) {}
  std::atomic<int> pinnedAllocations{0};
  std::atomic<size_t> pinnedBytes{0};
  std::atomic<int> callsThatMayWait{0};
  std::atomic<int> copiesThenWrites{0};  // submissions of copies with writes behind them

  // How many copies each copy submission carried, in order.
  std::vector<int> CopySubmissions() {
    std::lock_guard<std::mutex> lock(mu_);
    return copySubmissions_;
  }

  ccoPlatform_t kind() const override { return inner_->kind(); }
  const char* name() const override { return inner_->name(); }
  Status CurrentDevice(int* d) override { return inner_->CurrentDevice(d); }
  Status GetDeviceInfo(int d, DeviceInfo* info) override { return inner_->GetDeviceInfo(d, info); }
  Status DeviceCount(int* n) override { return inner_->DeviceCount(n); }
  Status BusId(int d, std::string* id) override { return inner_->BusId(d, id); }
  Status Reserve(int d, size_t size, size_t align, uint64_t* va) override {
    return inner_->Reserve(d, size, align, va);
  }
  Status Release(int d, uint64_t va, size_t size) override { return inner_->Release(d, va, size); }
  Status Create(int d, size_t size, MemHandle* h) override {
    Waits();
    return inner_->Create(d, size, h);
  }
  Status Destroy(int d, MemHandle h) override {
    Waits();
    return inner_->Destroy(d, h);
  }
  Status Export(int d, MemHandle h, int* fd) override { return inner_->Export(d, h, fd); }
  Status Import(int d, int fd, size_t size, MemHandle* h) override { return inner_->Import(d, fd, size, h); }
  Status Reference(int d, MemHandle h, MemHandle* r, bool* owned) override { return inner_->Reference(d, h, r, owned); }
  Status Map(int d, uint64_t va, size_t size, MemHandle h, size_t offset) override {
    return inner_->Map(d, va, size, h, offset);
  }
  bool MapsAtOffset(int d) override { return inner_->MapsAtOffset(d); }
  Status Unmap(int d, uint64_t va, size_t size) override { return inner_->Unmap(d, va, size); }
  Status Memset(int d, uint64_t va, int value, size_t size) override { return inner_->Memset(d, va, value, size); }
  Status CopyToDevice(int d, uint64_t dst, const void* src, size_t size) override {
    return inner_->CopyToDevice(d, dst, src, size);
  }
  Status CopyFromDevice(int d, void* dst, uint64_t src, size_t size) override {
    return inner_->CopyFromDevice(d, dst, src, size);
  }
  Status WriteDeviceWord(int d, uint64_t address, uint64_t value) override {
    return inner_->WriteDeviceWord(d, address, value);
  }
  Status HostMappedAlloc(int d, size_t size, void** host, uint64_t* deviceAddress) override {
    Waits();
    ++pinnedAllocations;
    pinnedBytes += size;
    return inner_->HostMappedAlloc(d, size, host, deviceAddress);
  }
  Status HostMappedFree(int d, void* host) override {
    Waits();
    return inner_->HostMappedFree(d, host);
  }
  Status StreamCreate(int d, uint64_t* s) override {
    Waits();
    return inner_->StreamCreate(d, s);
  }
  Status StreamDestroy(int d, uint64_t s) override {
    Waits();
    return inner_->StreamDestroy(d, s);
  }
  Status CopyOnStream(int d, uint64_t s, uint64_t dst, uint64_t src, size_t size) override {
    Submitted(1);
    return inner_->CopyOnStream(d, s, dst, src, size);
  }
  Status CopiesOnStream(int d, uint64_t s, const uint64_t* dsts, const uint64_t* srcs, const uint64_t* sizes,
                        int count) override {
    Submitted(count);
    for (int i = count - 1; i >= 0; --i) CCO_RETURN_IF_ERROR(inner_->CopyOnStream(d, s, dsts[i], srcs[i], sizes[i]));
    return Status::Ok();
  }
  // One submission: the copies (last first, as above), then the writes in order.
  Status CopiesThenWrites(int d, uint64_t s, const uint64_t* dsts, const uint64_t* srcs, const uint64_t* sizes,
                          int copies, const uint64_t* addresses, const uint64_t* values, int writes) override {
    ++copiesThenWrites;
    CCO_RETURN_IF_ERROR(CopiesOnStream(d, s, dsts, srcs, sizes, copies));
    for (int i = 0; i < writes; ++i) CCO_RETURN_IF_ERROR(inner_->StreamWriteValue64(d, s, addresses[i], values[i]));
    return Status::Ok();
  }
  Status StreamWriteValue64(int d, uint64_t s, uint64_t address, uint64_t value) override {
    return inner_->StreamWriteValue64(d, s, address, value);
  }
  Status StreamSynchronize(int d, uint64_t s) override { return inner_->StreamSynchronize(d, s); }
  Status ExportDmaBuf(int d, uint64_t va, size_t size, int* fd, uint64_t* offset) override {
    return inner_->ExportDmaBuf(d, va, size, fd, offset);
  }
  Status DeviceAlloc(int d, size_t size, uint64_t* va) override {
    Waits();
    return inner_->DeviceAlloc(d, size, va);
  }
  Status DeviceFree(int d, uint64_t va) override {
    Waits();
    return inner_->DeviceFree(d, va);
  }

 private:
  void Waits() { ++callsThatMayWait; }
  void Submitted(int copies) {
    std::lock_guard<std::mutex> lock(mu_);
    copySubmissions_.push_back(copies);
  }
  Platform* inner_;
  std::mutex mu_;
  std::vector<int> copySubmissions_;
};

}  // namespace cco

#endif  // CCO_TESTS_HOST_TESTING_COUNTING_PLATFORM_H_
