// SPDX-License-Identifier: MIT
// GPU driver libraries are shared libraries opened with dlopen; a table entry is resolved
// from the symbol of the same name, which error messages then quote.
#ifndef CCO_HOST_PLATFORM_DRIVER_LIBRARY_H_
#define CCO_HOST_PLATFORM_DRIVER_LIBRARY_H_

#include "common/shared_library.h"
#include "platform/gpu_driver_api.h"

namespace cco {
namespace gpu {

using DriverLibrary = SharedLibrary;

inline Status OpenDriverLibrary(const char* const* fileNames, DriverLibrary* library) {
  return SharedLibrary::Open(fileNames, "the driver library", library);
}

template <class Fn> Status ResolveEntry(const DriverLibrary& library, const char* symbol, DriverEntry<Fn>* entry) {
  CCO_RETURN_IF_ERROR(library.Resolve(symbol, &entry->fn));
  entry->name = symbol;
  return Status::Ok();
}

}  // namespace gpu
}  // namespace cco

#endif  // CCO_HOST_PLATFORM_DRIVER_LIBRARY_H_
