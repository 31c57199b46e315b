// A plugin that brings its own libcudart: loaded by cuda_plugin_host with dlopen(RTLD_LOCAL), so
// libcudart is not in the global scope and the preload library's dlsym(RTLD_NEXT) cannot find it
// (the PyTorch pattern). The hooks must fall back to dlopen("libcudart.so.13", RTLD_NOLOAD).
#include <cuda_runtime.h>

#include <vector>

__attribute__((noinline)) static int PluginCopy(void* dev, const void* host) {
  return cudaMemcpy(dev, host, 4096, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : 1;
}

extern "C" int plugin_run() {
  std::vector<char> host(4096, 1);
  void* dev = nullptr;
  if (cudaMalloc(&dev, 4096) != cudaSuccess) return 1;
  int rc = PluginCopy(dev, host.data());
  if (cudaDeviceSynchronize() != cudaSuccess) rc = 1;
  cudaFree(dev);
  return rc;
}
