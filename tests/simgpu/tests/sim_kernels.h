// Test helpers: register "kernels" with the fake runtime the way nvcc's host stubs do, so
// g++-built tests can launch them through cudaLaunchKernel.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>

extern "C" void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun,
                                       const char* device_name, int thread_limit, uint3* tid,
                                       uint3* bid, dim3* bdim, dim3* gdim, int* wsize);
extern "C" void** __cudaRegisterFatBinary(void* fat_cubin);
// Per-thread-default-stream twins are declared only under CUDA_API_PER_THREAD_DEFAULT_STREAM.
extern "C" cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n,
                                            cudaMemcpyKind kind, cudaStream_t s);
extern "C" cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s);

namespace simgpu_test {

// Host stubs: only their addresses matter.
inline char kSleepKernel;  // duration from its first argument (ns): SIMGPU_KERNEL_US=sim_sleep=@0
inline char kWaveKernel;   // default duration model

inline void RegisterKernels() {
  static bool done = [] {
    void** h = __cudaRegisterFatBinary(nullptr);
    __cudaRegisterFunction(h, &kSleepKernel, nullptr, "_Z9sim_sleepm", -1, nullptr, nullptr,
                           nullptr, nullptr, nullptr);
    __cudaRegisterFunction(h, &kWaveKernel, nullptr, "_Z8sim_wavePf", -1, nullptr, nullptr, nullptr,
                           nullptr, nullptr);
    return true;
  }();
  (void)done;
}

inline cudaError_t LaunchSleep(uint64_t ns, cudaStream_t s = nullptr) {
  RegisterKernels();
  void* args[] = {&ns};
  return cudaLaunchKernel(&kSleepKernel, dim3(1), dim3(32), args, 0, s);
}

inline double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace simgpu_test
