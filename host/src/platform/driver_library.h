// A GPU driver library opened with dlopen, so that the platforms have no link-time
// dependency on it and a machine without it simply reports the platform unsupported.
#ifndef CCO_HOST_PLATFORM_DRIVER_LIBRARY_H_
#define CCO_HOST_PLATFORM_DRIVER_LIBRARY_H_

#include <string>

#include "common/status.h"
#include "platform/gpu_driver_api.h"

namespace cco {
namespace gpu {

class DriverLibrary {
 public:
  // The first of `fileNames` (a nullptr-terminated list) that loads; ccoUnsupported naming
  // every file tried when none does. The library stays loaded for the process lifetime:
  // drivers keep threads and exit handlers that must not outlive their code.
  static Status Open(const char* const* fileNames, DriverLibrary* library);

  // The address of `symbol` as a function pointer; ccoUnsupported naming the library and
  // the symbol when the library lacks it.
  template <class Fn> Status Resolve(const char* symbol, Fn* fn) const {
    void* address = nullptr;
    CCO_RETURN_IF_ERROR(Lookup(symbol, &address));
    *fn = reinterpret_cast<Fn>(address);
    return Status::Ok();
  }
  // For symbols the platform can do without: false (and *fn untouched) when missing.
  template <class Fn> bool ResolveOptional(const char* symbol, Fn* fn) const {
    void* address = nullptr;
    if (!Lookup(symbol, &address).ok()) return false;
    *fn = reinterpret_cast<Fn>(address);
    return true;
  }

  // A table entry straight from the symbol of the same name.
  template <class Fn> Status ResolveEntry(const char* symbol, DriverEntry<Fn>* entry) const {
    CCO_RETURN_IF_ERROR(Resolve(symbol, &entry->fn));
    entry->name = symbol;
    return Status::Ok();
  }

  const std::string& fileName() const { return fileName_; }

 private:
  Status Lookup(const char* symbol, void** address) const;

  void* handle_ = nullptr;
  std::string fileName_;
};

}  // namespace gpu
}  // namespace cco

#endif  // CCO_HOST_PLATFORM_DRIVER_LIBRARY_H_
