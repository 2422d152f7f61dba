// SPDX-License-Identifier: MIT
// The HIP platform: GpuVmmPlatform over libamdhip64.so, loaded with dlopen. HIP spells
// addresses and allocation handles as pointers where the table uses 64-bit integers, so
// most entries are small adapters; the structs and enum values are CUDA's (gpu_driver_api.h).
#include <stdint.h>
#include <unistd.h>

#include <map>
#include <mutex>

#include "platform/driver_library.h"
#include "platform/gpu_driver_api.h"
#include "platform/gpu_vmm_platform.h"
#include "platform/platform.h"

namespace cco {

namespace {

using gpu::AllocationHandle;
using gpu::DeviceAddress;
using gpu::DriverResult;
using gpu::kDriverSuccess;

constexpr DriverResult kHipErrorNoDevice = 100;  // hipErrorNoDevice
// What hipInit returns where the runtime is installed but finds no GPU agent (no /dev/kfd,
// e.g. Debian's ROCm 5.2 on a machine without an AMD GPU): no device, not a broken runtime.
constexpr DriverResult kHipErrorInvalidDevice = 101;  // hipErrorInvalidDevice

// HIP_VERSION of the first runtime that reads a POSIX descriptor passed to
// hipMemImportFromShareableHandle by value, as CUDA does (7.1); older ones dereference
// the argument as an int*.
constexpr int kHipVersionImportFdByValue = 70100000;

struct HipDriver {
  gpu::GpuDriverApi api;

  DriverResult (*init)(unsigned flags) = nullptr;
  const char* (*getErrorString)(DriverResult result) = nullptr;
  const char* (*getErrorName)(DriverResult result) = nullptr;  // optional
  DriverResult (*runtimeGetVersion)(int* version) = nullptr;   // optional
  DriverResult (*getDevice)(int* device) = nullptr;
  DriverResult (*setDevice)(int device) = nullptr;
  DriverResult (*memAddressReserve)(void** va, size_t size, size_t alignment, void* hint,
                                    unsigned long long flags) = nullptr;
  DriverResult (*memAddressFree)(void* va, size_t size) = nullptr;
  DriverResult (*memCreate)(void** handle, size_t size, const gpu::MemAllocationProp* prop,
                            unsigned long long flags) = nullptr;
  DriverResult (*memRelease)(void* handle) = nullptr;
  DriverResult (*memExport)(void* shareable, void* handle, int type, unsigned long long flags) = nullptr;
  DriverResult (*memImport)(void** handle, void* osHandle, int type) = nullptr;
  DriverResult (*memMap)(void* va, size_t size, size_t offset, void* handle, unsigned long long flags) = nullptr;
  DriverResult (*memUnmap)(void* va, size_t size) = nullptr;
  DriverResult (*memSetAccess)(void* va, size_t size, const gpu::MemAccessDesc* desc, size_t count) = nullptr;
  DriverResult (*memsetD8)(void* va, unsigned char value, size_t size) = nullptr;
  DriverResult (*memsetD8Async)(void* va, unsigned char value, size_t size, void* stream) = nullptr;
  DriverResult (*memcpyDtoH)(void* dst, void* src, size_t size) = nullptr;
  DriverResult (*hostMalloc)(void** host, size_t size, unsigned flags) = nullptr;
  DriverResult (*hostGetDevicePointer)(void** device, void* host, unsigned flags) = nullptr;
  DriverResult (*memcpyAsync)(void* dst, const void* src, size_t size, int kind, void* stream) = nullptr;
  DriverResult (*streamWriteValue64)(void* stream, void* address, uint64_t value, unsigned flags) = nullptr;

  bool importFdByValue = false;

  // Some ROCr runtimes keep the descriptor given to an import and only use it when access
  // is set, so it must stay open until the imported handle is released: a duplicate is
  // kept per imported handle (the platform's caller still gets its own descriptor closed).
  std::mutex importedMutex;
  std::map<AllocationHandle, int> importedFds;
};

HipDriver& Driver() {
  static HipDriver* driver = new HipDriver();  // never destroyed: drivers outlive exit handlers
  return *driver;
}

void* AsPointer(uint64_t value) { return reinterpret_cast<void*>(static_cast<uintptr_t>(value)); }
uint64_t AsInteger(const void* pointer) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(pointer)); }

std::string DescribeHipError(DriverResult result) {
  const HipDriver& driver = Driver();
  const char* name = driver.getErrorName != nullptr ? driver.getErrorName(result) : nullptr;
  const char* text = driver.getErrorString != nullptr ? driver.getErrorString(result) : nullptr;
  if (name == nullptr && text == nullptr) return Fmt("hipError_t ", result);
  if (name == nullptr) return Fmt("hipError_t ", result, " (", text, ")");
  return text != nullptr ? Fmt(name, " (", text, ")") : std::string(name);
}

Status HipCallFailed(const char* call, DriverResult result, const std::string& arguments) {
  return gpu::DriverCallFailed(call, arguments, DescribeHipError(result));
}

// --- device binding (the table's hooks): HIP has one device per thread, no contexts ----

Status EnterHipDevice(int device, uint64_t* saved) {
  int current = 0;
  DriverResult result = Driver().getDevice(&current);
  if (result != kDriverSuccess) return HipCallFailed("hipGetDevice", result, "");
  *saved = static_cast<uint64_t>(current);
  if (current == device) return Status::Ok();
  result = Driver().setDevice(device);
  if (result != kDriverSuccess) return HipCallFailed("hipSetDevice", result, Fmt("device=", device));
  return Status::Ok();
}

void LeaveHipDevice(uint64_t saved) {
  int current = 0;
  const int caller = static_cast<int>(saved);
  if (Driver().getDevice(&current) == kDriverSuccess && current != caller) Driver().setDevice(caller);
}

Status CurrentHipDevice(int* device) {
  DriverResult result = Driver().getDevice(device);
  if (result != kDriverSuccess) return HipCallFailed("hipGetDevice", result, "");
  return Status::Ok();
}

// --- adapters: integers to HIP's pointers ----------------------------------------------

DriverResult HipAddressReserve(DeviceAddress* va, size_t size, size_t alignment, DeviceAddress hint,
                               unsigned long long flags) {
  void* reserved = nullptr;
  DriverResult result = Driver().memAddressReserve(&reserved, size, alignment, AsPointer(hint), flags);
  *va = AsInteger(reserved);
  return result;
}

DriverResult HipAddressFree(DeviceAddress va, size_t size) { return Driver().memAddressFree(AsPointer(va), size); }

DriverResult HipMemCreate(AllocationHandle* handle, size_t size, const gpu::MemAllocationProp* prop,
                          unsigned long long flags) {
  void* created = nullptr;
  DriverResult result = Driver().memCreate(&created, size, prop, flags);
  *handle = AsInteger(created);
  return result;
}

DriverResult HipMemRelease(AllocationHandle handle) {
  HipDriver& driver = Driver();
  DriverResult result = driver.memRelease(AsPointer(handle));
  if (result != kDriverSuccess) return result;
  int heldFd = -1;
  {
    std::lock_guard<std::mutex> lock(driver.importedMutex);
    auto it = driver.importedFds.find(handle);
    if (it != driver.importedFds.end()) {
      heldFd = it->second;
      driver.importedFds.erase(it);
    }
  }
  if (heldFd >= 0) close(heldFd);
  return result;
}

DriverResult HipExportFd(int* fd, AllocationHandle handle) {
  return Driver().memExport(fd, AsPointer(handle), gpu::kMemHandleTypePosixFileDescriptor, 0);
}

DriverResult HipImportFd(AllocationHandle* handle, int fd) {
  HipDriver& driver = Driver();
  int held = dup(fd);
  if (held < 0) held = fd;  // out of descriptors: import anyway, without the keep-alive
  int heldValue = held;     // what the int* convention points at
  void* osHandle = driver.importFdByValue ? AsPointer(static_cast<uint64_t>(held)) : static_cast<void*>(&heldValue);
  void* imported = nullptr;
  DriverResult result = driver.memImport(&imported, osHandle, gpu::kMemHandleTypePosixFileDescriptor);
  if (held != fd) {
    if (result == kDriverSuccess) {
      std::lock_guard<std::mutex> lock(driver.importedMutex);
      auto inserted = driver.importedFds.emplace(AsInteger(imported), held);
      if (!inserted.second) close(held);  // the runtime gave a handle it already holds a descriptor for
    } else {
      close(held);
    }
  }
  *handle = AsInteger(imported);
  return result;
}

DriverResult HipMemMap(DeviceAddress va, size_t size, size_t offset, AllocationHandle handle,
                       unsigned long long flags) {
  return Driver().memMap(AsPointer(va), size, offset, AsPointer(handle), flags);
}

DriverResult HipMemUnmap(DeviceAddress va, size_t size) { return Driver().memUnmap(AsPointer(va), size); }

DriverResult HipMemSetAccess(DeviceAddress va, size_t size, const gpu::MemAccessDesc* desc, size_t count) {
  return Driver().memSetAccess(AsPointer(va), size, desc, count);
}

DriverResult HipMemsetD8(DeviceAddress va, unsigned char value, size_t size) {
  return Driver().memsetD8(AsPointer(va), value, size);
}

DriverResult HipMemsetD8Async(DeviceAddress va, unsigned char value, size_t size, void* stream) {
  return Driver().memsetD8Async(AsPointer(va), value, size, stream);
}

DriverResult HipCopyDtoH(void* dst, DeviceAddress src, size_t size) {
  return Driver().memcpyDtoH(dst, AsPointer(src), size);
}

DriverResult HipHostAlloc(void** host, size_t size, unsigned flags) {
  // hipHostMallocPortable and hipHostMallocMapped have CUDA's values.
  return Driver().hostMalloc(host, size, flags);
}

DriverResult HipHostDevicePointer(DeviceAddress* device, void* host, unsigned flags) {
  void* mapped = nullptr;
  DriverResult result = Driver().hostGetDevicePointer(&mapped, host, flags);
  *device = AsInteger(mapped);
  return result;
}

DriverResult HipCopyAsync(DeviceAddress dst, DeviceAddress src, size_t size, void* stream) {
  constexpr int kHipMemcpyDefault = 4;  // hipMemcpyDefault: unified addressing decides
  return Driver().memcpyAsync(AsPointer(dst), AsPointer(src), size, kHipMemcpyDefault, stream);
}

DriverResult HipStreamWriteValue64(void* stream, DeviceAddress address, uint64_t value, unsigned flags) {
  return Driver().streamWriteValue64(stream, AsPointer(address), value, flags);
}

// --- loading ---------------------------------------------------------------------------

Status ResolveSymbols(const gpu::DriverLibrary& library, HipDriver* driver) {
  gpu::GpuDriverApi& api = driver->api;
  CCO_RETURN_IF_ERROR(library.Resolve("hipInit", &driver->init));
  CCO_RETURN_IF_ERROR(library.Resolve("hipGetErrorString", &driver->getErrorString));
  library.ResolveOptional("hipGetErrorName", &driver->getErrorName);
  library.ResolveOptional("hipRuntimeGetVersion", &driver->runtimeGetVersion);
  CCO_RETURN_IF_ERROR(library.Resolve("hipGetDevice", &driver->getDevice));
  CCO_RETURN_IF_ERROR(library.Resolve("hipSetDevice", &driver->setDevice));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemAddressReserve", &driver->memAddressReserve));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemAddressFree", &driver->memAddressFree));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemCreate", &driver->memCreate));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemRelease", &driver->memRelease));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemExportToShareableHandle", &driver->memExport));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemImportFromShareableHandle", &driver->memImport));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemMap", &driver->memMap));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemUnmap", &driver->memUnmap));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemSetAccess", &driver->memSetAccess));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemsetD8", &driver->memsetD8));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemsetD8Async", &driver->memsetD8Async));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemcpyDtoH", &driver->memcpyDtoH));
  CCO_RETURN_IF_ERROR(library.Resolve("hipHostMalloc", &driver->hostMalloc));
  CCO_RETURN_IF_ERROR(library.Resolve("hipHostGetDevicePointer", &driver->hostGetDevicePointer));
  CCO_RETURN_IF_ERROR(library.Resolve("hipMemcpyAsync", &driver->memcpyAsync));
  CCO_RETURN_IF_ERROR(library.Resolve("hipStreamWriteValue64", &driver->streamWriteValue64));

  // Same shapes as the table: no adapter needed.
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "hipGetDeviceCount", &api.deviceCount));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "hipDeviceGetPCIBusId", &api.pciBusId));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "hipDeviceTotalMem", &api.totalMemory));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "hipMemGetAllocationGranularity", &api.allocationGranularity));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "hipDeviceSynchronize", &api.synchronize));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "hipHostFree", &api.hostFree));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "hipStreamCreateWithFlags", &api.streamCreate));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "hipStreamDestroy", &api.streamDestroy));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "hipStreamSynchronize", &api.streamSynchronize));
  if (library.ResolveOptional("hipHostRegister", &api.hostRegister.fn) &&
      library.ResolveOptional("hipHostUnregister", &api.hostUnregister.fn))
    api.hostRegister.name = "hipHostRegister", api.hostUnregister.name = "hipHostUnregister";
  else api.hostRegister.fn = nullptr;
  if (library.ResolveOptional("hipMemGetHandleForAddressRange", &api.rangeHandle.fn))
    api.rangeHandle.name = "hipMemGetHandleForAddressRange";

  api.addressReserve = {&HipAddressReserve, "hipMemAddressReserve"};
  api.streamWriteValue64 = {&HipStreamWriteValue64, "hipStreamWriteValue64"};
  api.addressFree = {&HipAddressFree, "hipMemAddressFree"};
  api.memCreate = {&HipMemCreate, "hipMemCreate"};
  api.memRelease = {&HipMemRelease, "hipMemRelease"};
  api.exportFd = {&HipExportFd, "hipMemExportToShareableHandle"};
  api.importFd = {&HipImportFd, "hipMemImportFromShareableHandle"};
  api.memMap = {&HipMemMap, "hipMemMap"};
  api.memUnmap = {&HipMemUnmap, "hipMemUnmap"};
  api.memSetAccess = {&HipMemSetAccess, "hipMemSetAccess"};
  api.memsetD8 = {&HipMemsetD8, "hipMemsetD8"};
  api.memsetD8Async = {&HipMemsetD8Async, "hipMemsetD8Async"};
  api.copyDtoH = {&HipCopyDtoH, "hipMemcpyDtoH"};
  api.hostAlloc = {&HipHostAlloc, "hipHostMalloc"};
  api.hostDevicePointer = {&HipHostDevicePointer, "hipHostGetDevicePointer"};
  api.copyAsync = {&HipCopyAsync, "hipMemcpyAsync"};
  api.kind = ccoPlatformHip;
  api.platformName = "hip";
  api.describeError = &DescribeHipError;
  api.enterDevice = &EnterHipDevice;
  api.leaveDevice = &LeaveHipDevice;
  api.currentDevice = &CurrentHipDevice;
  return Status::Ok();
}

Status InitializeDevices(HipDriver* driver, const std::string& library) {
  DriverResult result = driver->init(0);
  if (result == kHipErrorNoDevice || result == kHipErrorInvalidDevice) {
    return Unsupported(Fmt(library, " sees no device (hipInit: ", DescribeHipError(result), ")"));
  }
  if (result != kDriverSuccess) {
    return Unsupported(Fmt(library, " is unusable: hipInit(0) failed: ", DescribeHipError(result)));
  }
  int count = 0;
  result = driver->api.deviceCount.fn(&count);
  if (result == kHipErrorNoDevice || (result == kDriverSuccess && count <= 0)) {
    return Unsupported(Fmt(library, " sees no device (hipGetDeviceCount gave ", count, ")"));
  }
  if (result != kDriverSuccess) {
    return Unsupported(Fmt(library, " is unusable: hipGetDeviceCount failed: ", DescribeHipError(result)));
  }
  // Without a version, assume the older (pointer) convention: a newer runtime then fails
  // the import cleanly, where the reverse would make an older one read a wild address.
  int version = 0;
  if (driver->runtimeGetVersion != nullptr && driver->runtimeGetVersion(&version) == kDriverSuccess) {
    driver->importFdByValue = version >= kHipVersionImportFdByValue;
  }
  return Status::Ok();
}

Status LoadHipDriver(HipDriver* driver) {
  // The unversioned name is the documented one; runtime-only installs ship just the
  // versioned files.
  static const char* const kLibraries[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", nullptr};
  gpu::DriverLibrary library;
  CCO_RETURN_IF_ERROR(gpu::OpenDriverLibrary(kLibraries, &library));
  CCO_RETURN_IF_ERROR(ResolveSymbols(library, driver));
  return InitializeDevices(driver, library.fileName());
}

const Status& HipDriverLoaded() {
  static const Status status = LoadHipDriver(&Driver()).Prefixed("hip platform");
  return status;
}

}  // namespace

Status CreateHipPlatform(Platform** platform) {
  if (platform == nullptr) return InvalidArgument("CreateHipPlatform: platform is null");
  CCO_RETURN_IF_ERROR(HipDriverLoaded());
  *platform = new gpu::GpuVmmPlatform(Driver().api);
  return Status::Ok();
}

}  // namespace cco
