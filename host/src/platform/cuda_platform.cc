// SPDX-License-Identifier: MIT
// The CUDA platform: GpuVmmPlatform over libcuda.so.1, loaded with dlopen. No CUDA header
// is included; the types below are cuda.h's, as the driver's ABI fixes them.
#include <stdint.h>
#include <stdio.h>

#include <mutex>
#include <vector>

#include "common/env.h"
#include "platform/cuda_copy_graphs.h"
#include "platform/cuda_copy_lanes.h"
#include "platform/driver_library.h"
#include "platform/gpu_driver_api.h"
#include "platform/gpu_vmm_platform.h"
#include "platform/platform.h"
#include "platform/proxy_scope.h"

namespace cco {

namespace {

using gpu::AllocationHandle;
using gpu::DriverResult;
using gpu::kDriverSuccess;

using CUdevice = int;
using CUcontext = void*;

constexpr DriverResult kCudaErrorNoDevice = 100;  // CUDA_ERROR_NO_DEVICE

// The driver, loaded once per process: the raw entry points the table's adapters call,
// and the per-device state behind device binding.
struct CudaDriver {
  gpu::GpuDriverApi api;

  DriverResult (*init)(unsigned flags) = nullptr;
  DriverResult (*getErrorName)(DriverResult result, const char** text) = nullptr;
  DriverResult (*getErrorString)(DriverResult result, const char** text) = nullptr;
  DriverResult (*deviceGet)(CUdevice* device, int ordinal) = nullptr;
  DriverResult (*primaryCtxRetain)(CUcontext* context, CUdevice device) = nullptr;
  DriverResult (*ctxGetCurrent)(CUcontext* context) = nullptr;
  DriverResult (*ctxSetCurrent)(CUcontext context) = nullptr;
  DriverResult (*ctxGetDevice)(CUdevice* device) = nullptr;
  // Optional (the proxy's own contexts, platform/proxy_scope.h): cuCtxCreate as CUDA 12.5+
  // spells it (params, flags, device) or as before (flags, device), and cuCtxPopCurrent.
  DriverResult (*ctxCreateV4)(CUcontext* context, void* params, unsigned flags, CUdevice device) = nullptr;
  DriverResult (*ctxCreateV2)(CUcontext* context, unsigned flags, CUdevice device) = nullptr;
  DriverResult (*ctxPopCurrent)(CUcontext* context) = nullptr;
  DriverResult (*deviceGetPciBusId)(char* busId, int length, CUdevice device) = nullptr;
  DriverResult (*deviceTotalMem)(size_t* bytes, CUdevice device) = nullptr;
  DriverResult (*exportToShareableHandle)(void* shareable, AllocationHandle handle, int type,
                                          unsigned long long flags) = nullptr;
  DriverResult (*importFromShareableHandle)(AllocationHandle* handle, void* osHandle, int type) = nullptr;
  gpu::StreamBatchMemOp streamBatchMemOp = nullptr;
  // Where CCO_COPY_GRAPHS=1 and the driver has graphs: what CudaCopiesAsync runs copies through.
  gpu::CopyGraphs* copyGraphs = nullptr;
  // Otherwise, where the process may use CPUs enough (or CCO_COPY_LANES asks): the lanes that
  // CudaLaneCopiesAsync runs copies through.
  gpu::CopyLanes* copyLanes = nullptr;

  // The driver's device handle of each ordinal; fixed once loaded.
  std::vector<CUdevice> devices;

  // Each device's primary context, retained on first use and kept for the process
  // lifetime: the primary context is the one the CUDA runtime (and so the user's kernels)
  // uses, and releasing it could tear down memory others still map.
  std::mutex contextMutex;
  std::vector<CUcontext> primaryContexts;
  // Each device's context for the host proxy's work (platform/proxy_scope.h), made on first
  // use and kept for the process lifetime, as the proxy's streams live in it.
  std::vector<CUcontext> proxyContexts;
  std::vector<bool> proxyContextRefused;  // the driver would not make it: the primary serves
};

CudaDriver& Driver() {
  static CudaDriver* driver = new CudaDriver();  // never destroyed: drivers outlive exit handlers
  return *driver;
}

std::string DescribeCudaError(DriverResult result) {
  const CudaDriver& driver = Driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver.getErrorName == nullptr || driver.getErrorName(result, &name) != kDriverSuccess) name = nullptr;
  if (driver.getErrorString == nullptr || driver.getErrorString(result, &text) != kDriverSuccess) text = nullptr;
  if (name == nullptr) return Fmt("CUresult ", result);
  return text != nullptr ? Fmt(name, " (", text, ")") : std::string(name);
}

Status CudaCallFailed(const char* call, DriverResult result, const std::string& arguments) {
  return gpu::DriverCallFailed(call, arguments, DescribeCudaError(result));
}

// --- device binding (the table's hooks) ------------------------------------------------

Status PrimaryContext(int device, CUcontext* context) {
  CudaDriver& driver = Driver();
  if (device < 0 || static_cast<size_t>(device) >= driver.devices.size()) {
    return InvalidArgument(
        Fmt("cuda device ", device, " does not exist (this process sees ", driver.devices.size(), ")"));
  }
  std::lock_guard<std::mutex> lock(driver.contextMutex);
  CUcontext& slot = driver.primaryContexts[device];
  if (slot == nullptr) {
    DriverResult result = driver.primaryCtxRetain(&slot, driver.devices[device]);
    if (result != kDriverSuccess) {
      slot = nullptr;
      return CudaCallFailed("cuDevicePrimaryCtxRetain", result, Fmt("device=", device));
    }
  }
  *context = slot;
  return Status::Ok();
}

// The device's context for the proxy's work, made on first use; the caller's current context
// stays as it was (cuCtxCreate pushes the new one: it is popped). Where the driver cannot make
// one (device memory, or MPS's pool of work queues, exhausted), the proxy works in the primary
// context instead, said once on stderr: slower to serve beside a module load, not wrong.
// Whether *context is the proxy's (false: no such device, or refused; the caller binds the
// primary context, which says what is wrong with `device`).
bool ProxyContext(int device, CUcontext* context) {
  CudaDriver& driver = Driver();
  if (device < 0 || static_cast<size_t>(device) >= driver.devices.size()) return false;
  std::lock_guard<std::mutex> lock(driver.contextMutex);
  CUcontext& slot = driver.proxyContexts[device];
  if (slot == nullptr && !driver.proxyContextRefused[device]) {
    CUcontext made = nullptr;
    DriverResult result = driver.ctxCreateV4 != nullptr ? driver.ctxCreateV4(&made, nullptr, 0, driver.devices[device])
                                                        : driver.ctxCreateV2(&made, 0, driver.devices[device]);
    if (result == kDriverSuccess) {
      CUcontext popped = nullptr;
      driver.ctxPopCurrent(&popped);
      slot = made;
    } else {
      driver.proxyContextRefused[device] = true;
      fprintf(stderr,
              "cco: the proxy's own context on cuda device %d was refused (cuCtxCreate: %s); the proxy works in "
              "the primary context (docs/sdma.md, \"The proxy's own context\")\n",
              device, DescribeCudaError(result).c_str());
    }
  }
  if (slot == nullptr) return false;
  *context = slot;
  return true;
}

Status EnterCudaDevice(int device, uint64_t* saved) {
  CudaDriver& driver = Driver();
  CUcontext target = nullptr;
  // The proxy's work in a context of its own, where the driver can make one; everything else
  // in the primary context. (One look-up a call: the proxy's thread makes many.)
  const bool proxyWork = ProxyWorkScope::Active() && ProxyWorkScope::OwnContext() && driver.ctxPopCurrent != nullptr;
  if (!proxyWork || !ProxyContext(device, &target)) CCO_RETURN_IF_ERROR(PrimaryContext(device, &target));
  CUcontext current = nullptr;
  DriverResult result = driver.ctxGetCurrent(&current);
  if (result != kDriverSuccess) return CudaCallFailed("cuCtxGetCurrent", result, "");
  *saved = reinterpret_cast<uint64_t>(current);
  if (current == target) return Status::Ok();
  result = driver.ctxSetCurrent(target);
  if (result != kDriverSuccess) return CudaCallFailed("cuCtxSetCurrent", result, Fmt("device=", device));
  return Status::Ok();
}

void LeaveCudaDevice(uint64_t saved) {
  CudaDriver& driver = Driver();
  CUcontext current = nullptr;
  const CUcontext caller = reinterpret_cast<CUcontext>(saved);
  // A null context is given back too: the runtime then binds the device it chooses.
  if (driver.ctxGetCurrent(&current) == kDriverSuccess && current != caller) driver.ctxSetCurrent(caller);
}

Status CurrentCudaDevice(int* device) {
  CudaDriver& driver = Driver();
  CUcontext current = nullptr;
  DriverResult result = driver.ctxGetCurrent(&current);
  if (result != kDriverSuccess) return CudaCallFailed("cuCtxGetCurrent", result, "");
  if (current == nullptr) {
    *device = 0;
    return Status::Ok();
  }
  CUdevice handle = 0;
  result = driver.ctxGetDevice(&handle);
  if (result != kDriverSuccess) return CudaCallFailed("cuCtxGetDevice", result, "of the current context");
  for (size_t ordinal = 0; ordinal < driver.devices.size(); ++ordinal) {
    if (driver.devices[ordinal] == handle) {
      *device = static_cast<int>(ordinal);
      return Status::Ok();
    }
  }
  return PlatformError(
      Fmt("cuCtxGetDevice gave device handle ", handle, ", which no ordinal of ", driver.devices.size(), " maps to"));
}

// --- adapters: the table speaks ordinals and POSIX descriptors -------------------------

DriverResult CudaPciBusId(char* busId, int length, int device) {
  return Driver().deviceGetPciBusId(busId, length, Driver().devices[device]);
}

DriverResult CudaTotalMemory(size_t* bytes, int device) {
  return Driver().deviceTotalMem(bytes, Driver().devices[device]);
}

DriverResult CudaExportFd(int* fd, AllocationHandle handle) {
  // The driver writes an int through the untyped pointer.
  return Driver().exportToShareableHandle(fd, handle, gpu::kMemHandleTypePosixFileDescriptor, 0);
}

DriverResult CudaImportFd(AllocationHandle* handle, int fd) {
  // CUDA takes the descriptor's value itself in the pointer argument.
  return Driver().importFromShareableHandle(handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                            gpu::kMemHandleTypePosixFileDescriptor);
}

DriverResult CudaStreamWriteValues64(void* stream, const gpu::DeviceAddress* addresses, const uint64_t* values,
                                     unsigned count) {
  return gpu::WriteValuesInBatches(Driver().streamBatchMemOp, stream, addresses, values, count);
}

// Runs of copies as launches of prepared graphs (CCO_COPY_GRAPHS=1): cuda_copy_graphs.h.
DriverResult CudaCopiesAsync(void* stream, const gpu::DeviceAddress* dsts, const gpu::DeviceAddress* srcs,
                             const uint64_t* sizes, unsigned count, const gpu::DeviceAddress* addresses,
                             const uint64_t* values, unsigned writes) {
  return Driver().copyGraphs->Copy(stream, dsts, srcs, sizes, count, addresses, values, writes);
}

DriverResult CudaPrepareStreamCopies(void* stream, gpu::DeviceAddress scratch) {
  return Driver().copyGraphs->PrepareStream(stream, scratch);
}

void CudaForgetStreamCopies(void* stream) { Driver().copyGraphs->Forget(stream); }

// Runs of copies queued by several threads at once: cuda_copy_lanes.h.
DriverResult CudaLaneCopiesAsync(void* stream, const gpu::DeviceAddress* dsts, const gpu::DeviceAddress* srcs,
                                 const uint64_t* sizes, unsigned count, const gpu::DeviceAddress* addresses,
                                 const uint64_t* values, unsigned writes) {
  return Driver().copyLanes->Copy(stream, dsts, srcs, sizes, count, addresses, values, writes);
}

DriverResult CudaPrepareStreamLanes(void* stream, gpu::DeviceAddress) {
  return Driver().copyLanes->PrepareStream(stream);
}

void CudaForgetStreamLanes(void* stream) { Driver().copyLanes->Forget(stream); }

// --- loading ---------------------------------------------------------------------------

Status ResolveSymbols(const gpu::DriverLibrary& library, CudaDriver* driver) {
  gpu::GpuDriverApi& api = driver->api;
  // The versioned names: the plain ones are the 32-bit-pointer ABI of CUDA 3.1 and older.
  CCO_RETURN_IF_ERROR(library.Resolve("cuInit", &driver->init));
  CCO_RETURN_IF_ERROR(library.Resolve("cuGetErrorName", &driver->getErrorName));
  CCO_RETURN_IF_ERROR(library.Resolve("cuGetErrorString", &driver->getErrorString));
  CCO_RETURN_IF_ERROR(library.Resolve("cuDeviceGet", &driver->deviceGet));
  CCO_RETURN_IF_ERROR(library.Resolve("cuDevicePrimaryCtxRetain", &driver->primaryCtxRetain));
  CCO_RETURN_IF_ERROR(library.Resolve("cuCtxGetCurrent", &driver->ctxGetCurrent));
  CCO_RETURN_IF_ERROR(library.Resolve("cuCtxSetCurrent", &driver->ctxSetCurrent));
  CCO_RETURN_IF_ERROR(library.Resolve("cuCtxGetDevice", &driver->ctxGetDevice));
  if ((library.ResolveOptional("cuCtxCreate_v4", &driver->ctxCreateV4) ||
       library.ResolveOptional("cuCtxCreate_v2", &driver->ctxCreateV2)) &&
      !library.ResolveOptional("cuCtxPopCurrent_v2", &driver->ctxPopCurrent))
    driver->ctxPopCurrent = nullptr;
  CCO_RETURN_IF_ERROR(library.Resolve("cuDeviceGetPCIBusId", &driver->deviceGetPciBusId));
  CCO_RETURN_IF_ERROR(library.Resolve("cuDeviceTotalMem_v2", &driver->deviceTotalMem));
  CCO_RETURN_IF_ERROR(library.Resolve("cuMemExportToShareableHandle", &driver->exportToShareableHandle));
  CCO_RETURN_IF_ERROR(library.Resolve("cuMemImportFromShareableHandle", &driver->importFromShareableHandle));

  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuDeviceGetCount", &api.deviceCount));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemGetAllocationGranularity", &api.allocationGranularity));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemAddressReserve", &api.addressReserve));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemAddressFree", &api.addressFree));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemCreate", &api.memCreate));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemRelease", &api.memRelease));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemMap", &api.memMap));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemUnmap", &api.memUnmap));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemSetAccess", &api.memSetAccess));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemsetD8_v2", &api.memsetD8));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemsetD8Async", &api.memsetD8Async));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemcpyDtoH_v2", &api.copyDtoH));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuCtxSynchronize", &api.synchronize));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemHostAlloc", &api.hostAlloc));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemFreeHost", &api.hostFree));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemHostGetDevicePointer_v2", &api.hostDevicePointer));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuStreamCreate", &api.streamCreate));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuStreamDestroy_v2", &api.streamDestroy));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuMemcpyAsync", &api.copyAsync));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuStreamWriteValue64_v2", &api.streamWriteValue64));
  CCO_RETURN_IF_ERROR(ResolveEntry(library, "cuStreamSynchronize", &api.streamSynchronize));
  if (library.ResolveOptional("cuStreamBatchMemOp_v2", &driver->streamBatchMemOp))
    api.streamWriteValues64 = {&CudaStreamWriteValues64, "cuStreamBatchMemOp_v2"};
  // Prepared graphs of copies only where asked for (CCO_COPY_GRAPHS=1): the graphs as now built
  // have not run on a GPU (docs/sdma.md, "How the proxy queues copies").
  gpu::CopyGraphCalls graphCalls;
  if (env::Flag("CCO_COPY_GRAPHS", false) && gpu::ResolveCopyGraphCalls(library, &graphCalls)) {
    driver->copyGraphs = new gpu::CopyGraphs(graphCalls);  // lives as long as the driver
    api.copiesAsync = {&CudaCopiesAsync, "cuGraphLaunch"};
    api.prepareStreamCopies = &CudaPrepareStreamCopies;
    api.forgetStreamCopies = &CudaForgetStreamCopies;
    api.copiesTakeScratch = true;
  }
  gpu::CopyLaneCalls laneCalls;
  const unsigned lanes = gpu::DefaultCopyLanes();
  if (driver->copyGraphs == nullptr && lanes > 1 && gpu::ResolveCopyLaneCalls(library, &laneCalls)) {
    driver->copyLanes = new gpu::CopyLanes(laneCalls, lanes);  // lives as long as the driver
    api.copiesAsync = {&CudaLaneCopiesAsync, "cuMemcpyAsync"};
    api.prepareStreamCopies = &CudaPrepareStreamLanes;
    api.forgetStreamCopies = &CudaForgetStreamLanes;
  }
  if (library.ResolveOptional("cuMemHostRegister_v2", &api.hostRegister.fn) &&
      library.ResolveOptional("cuMemHostUnregister", &api.hostUnregister.fn))
    api.hostRegister.name = "cuMemHostRegister_v2", api.hostUnregister.name = "cuMemHostUnregister";
  else api.hostRegister.fn = nullptr;
  if (library.ResolveOptional("cuMemGetHandleForAddressRange", &api.rangeHandle.fn))
    api.rangeHandle.name = "cuMemGetHandleForAddressRange";

  api.pciBusId = {&CudaPciBusId, "cuDeviceGetPCIBusId"};
  api.totalMemory = {&CudaTotalMemory, "cuDeviceTotalMem_v2"};
  api.exportFd = {&CudaExportFd, "cuMemExportToShareableHandle"};
  api.importFd = {&CudaImportFd, "cuMemImportFromShareableHandle"};
  api.kind = ccoPlatformCuda;
  api.platformName = "cuda";
  api.describeError = &DescribeCudaError;
  api.enterDevice = &EnterCudaDevice;
  api.leaveDevice = &LeaveCudaDevice;
  api.currentDevice = &CurrentCudaDevice;
  return Status::Ok();
}

// Brings the driver up and learns its devices. Any failure means "no usable CUDA here".
Status InitializeDevices(CudaDriver* driver) {
  DriverResult result = driver->init(0);
  if (result == kCudaErrorNoDevice) {
    return Unsupported(Fmt("libcuda.so.1 sees no device (cuInit: ", DescribeCudaError(result), ")"));
  }
  if (result != kDriverSuccess) {
    return Unsupported(Fmt("libcuda.so.1 is unusable: cuInit(0) failed: ", DescribeCudaError(result)));
  }
  int count = 0;
  result = driver->api.deviceCount.fn(&count);
  if (result != kDriverSuccess) {
    return Unsupported(Fmt("libcuda.so.1 is unusable: cuDeviceGetCount failed: ", DescribeCudaError(result)));
  }
  if (count <= 0) return Unsupported("libcuda.so.1 sees no device (cuDeviceGetCount gave 0)");
  driver->devices.assign(count, 0);
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    result = driver->deviceGet(&driver->devices[ordinal], ordinal);
    if (result != kDriverSuccess) {
      return Unsupported(
          Fmt("libcuda.so.1 is unusable: cuDeviceGet(ordinal=", ordinal, ") failed: ", DescribeCudaError(result)));
    }
  }
  driver->primaryContexts.assign(count, nullptr);
  driver->proxyContexts.assign(count, nullptr);
  driver->proxyContextRefused.assign(count, false);
  return Status::Ok();
}

Status LoadCudaDriver(CudaDriver* driver) {
  static const char* const kLibraries[] = {"libcuda.so.1", nullptr};
  gpu::DriverLibrary library;
  CCO_RETURN_IF_ERROR(gpu::OpenDriverLibrary(kLibraries, &library));
  CCO_RETURN_IF_ERROR(ResolveSymbols(library, driver));
  return InitializeDevices(driver);
}

// Loading and cuInit happen once, whatever the number of platforms created.
const Status& CudaDriverLoaded() {
  static const Status status = LoadCudaDriver(&Driver()).Prefixed("cuda platform");
  return status;
}

}  // namespace

Status CreateCudaPlatform(Platform** platform) {
  if (platform == nullptr) return InvalidArgument("CreateCudaPlatform: platform is null");
  CCO_RETURN_IF_ERROR(CudaDriverLoaded());
  *platform = new gpu::GpuVmmPlatform(Driver().api);
  return Status::Ok();
}

}  // namespace cco
