// SPDX-License-Identifier: MIT
#include "common/shared_library.h"

#include <dlfcn.h>

namespace cco {

namespace {

// dlerror() both reports and clears; it may be null when the failure left no text.
std::string LastDlError() {
  const char* text = dlerror();
  return text != nullptr ? text : "the loader gave no reason";
}

}  // namespace

Status SharedLibrary::Open(const char* const* fileNames, const char* what, SharedLibrary* library) {
  std::string failures;
  for (const char* const* name = fileNames; *name != nullptr; ++name) {
    // RTLD_LOCAL: the library's symbols must not interpose on anything else in the process.
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
  return Unsupported(Fmt("cannot load ", what, " (tried ", tried, "): ", failures));
}

Status SharedLibrary::Lookup(const char* symbol, void** address) const {
  dlerror();  // a symbol's value may legitimately be null: errors are told by dlerror only
  void* found = dlsym(handle_, symbol);
  if (found == nullptr) {
    return Unsupported(Fmt(fileName_, " lacks the symbol ", symbol, ": ", LastDlError()));
  }
  *address = found;
  return Status::Ok();
}

}  // namespace cco
