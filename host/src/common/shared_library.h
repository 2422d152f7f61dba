// SPDX-License-Identifier: MIT
// A library opened with dlopen (GPU drivers, libcrypto), so that libcco.so has no
// link-time dependency on it: a machine without it gets a clear ccoUnsupported, not a
// loader error at import.
#ifndef CCO_HOST_COMMON_SHARED_LIBRARY_H_
#define CCO_HOST_COMMON_SHARED_LIBRARY_H_

#include <string>

#include "common/status.h"

namespace cco {

class SharedLibrary {
 public:
  // The first of `fileNames` (a nullptr-terminated list) that loads; ccoUnsupported naming
  // `what` and every file tried when none does. The library stays loaded for the process
  // lifetime: drivers keep threads and exit handlers that must not outlive their code.
  static Status Open(const char* const* fileNames, const char* what, SharedLibrary* library);

  // The address of `symbol` as a function pointer; ccoUnsupported naming the library and
  // the symbol when the library lacks it.
  template <class Fn> Status Resolve(const char* symbol, Fn* fn) const {
    void* address = nullptr;
    CCO_RETURN_IF_ERROR(Lookup(symbol, &address));
    *fn = reinterpret_cast<Fn>(address);
    return Status::Ok();
  }
  // For symbols the caller can do without: false (and *fn untouched) when missing.
  template <class Fn> bool ResolveOptional(const char* symbol, Fn* fn) const {
    void* address = nullptr;
    if (!Lookup(symbol, &address).ok()) return false;
    *fn = reinterpret_cast<Fn>(address);
    return true;
  }

  const std::string& fileName() const { return fileName_; }

 private:
  Status Lookup(const char* symbol, void** address) const;

  void* handle_ = nullptr;
  std::string fileName_;
};

}  // namespace cco

#endif  // CCO_HOST_COMMON_SHARED_LIBRARY_H_
