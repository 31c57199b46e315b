// Loads a CUDA plugin with dlopen(RTLD_LOCAL) and runs it. Links no CUDA library itself.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  auto run = reinterpret_cast<int (*)()>(dlsym(plugin, "plugin_run"));
  int rc = run ? run() : 4;
  std::printf("plugin %s\n", rc == 0 ? "ok" : "failed");
  return rc;
}
