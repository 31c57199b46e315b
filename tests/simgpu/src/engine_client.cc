// How libcudart, libcupti and libnccl reach the device model: like the real libraries, they
// dlopen the driver and ask it for a private export table; they never link against it.
#include <dlfcn.h>

#include <cstdio>

#include "engine.h"

namespace simgpu {

Engine* GetEngine() {
  static Engine* engine = []() -> Engine* {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) return nullptr;
    using GetTable = CUresult (*)(const void**, const CUuuid*);
    auto get = reinterpret_cast<GetTable>(dlsym(h, "cuGetExportTable"));
    const void* table = nullptr;
    if (get == nullptr || get(&table, &kEngineTableId) != CUDA_SUCCESS || table == nullptr) {
      // Most likely the real driver was found first: simgpu's libraries must come first on
      // LD_LIBRARY_PATH together.
      fprintf(stderr, "simgpu: libcuda.so.1 is not simgpu's driver\n");
      return nullptr;
    }
    return static_cast<const EngineTable*>(table)->engine;
  }();
  return engine;
}

}  // namespace simgpu
