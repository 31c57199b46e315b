#include "interpose/real_symbol.h"

#include <dlfcn.h>

namespace idlescope {

void* RealLibrary::Handle() {
  void* h = handle.load(std::memory_order_acquire);
  if (h != nullptr) return h;
  for (const char* soname : sonames) {
    if (soname == nullptr) break;
    // RTLD_NOLOAD: a reference to a library already in the process, or nothing. A second thread
    // may open it too: both handles are the same library, one reference more is harmless.
    if ((h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) != nullptr) {
      handle.store(h, std::memory_order_release);
      return h;
    }
  }
  return nullptr;
}

void* FindRealSymbol(const char* name, const char* alternate, RealLibrary* library) {
  if (void* f = dlsym(RTLD_NEXT, name)) return f;
  if (alternate != nullptr) {
    if (void* f = dlsym(RTLD_NEXT, alternate)) return f;
  }
  if (library == nullptr) return nullptr;
  void* h = library->Handle();
  if (h == nullptr) return nullptr;
  if (void* f = dlsym(h, name)) return f;
  return alternate != nullptr ? dlsym(h, alternate) : nullptr;
}

}  // namespace idlescope
