#include "platform/driver_library.h"

#include <dlfcn.h>

namespace cco {
namespace gpu {

namespace {

// dlerror() both reports and clears; it may be null when the failure left no text.
std::string LastDlError() {
  const char* text = dlerror();
  return text != nullptr ? text : "the loader gave no reason";
}

}  // namespace

Status DriverLibrary::Open(const char* const* fileNames, DriverLibrary* library) {
  std::string failures;
  for (const char* const* name = fileNames; *name != nullptr; ++name) {
    // RTLD_LOCAL: the driver's symbols must not interpose on anything else in the process.
    void* handle = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      library->handle_ = handle;
      library->fileName_ = *name;
      return Status::Ok();
    }
    if (!failures.empty()) failures += "; ";
    failures += LastDlError();
  }
  std::string tried;
  for (const char* const* name = fileNames; *name != nullptr; ++name) {
    tried += tried.empty() ? *name : Fmt(", ", *name);
  }
  return Unsupported(Fmt("cannot load the driver library (tried ", tried, "): ", failures));
}

Status DriverLibrary::Lookup(const char* symbol, void** address) const {
  dlerror();  // a symbol's value may legitimately be null: errors are told by dlerror only
  void* found = dlsym(handle_, symbol);
  if (found == nullptr) {
    return Unsupported(Fmt(fileName_, " lacks the symbol ", symbol, ": ", LastDlError()));
  }
  *address = found;
  return Status::Ok();
}

}  // namespace gpu
}  // namespace cco
