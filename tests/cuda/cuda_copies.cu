// The CUDA example traced by cuda_trace_test: pageable and pinned H2D/D2H copies (sync and async),
// memsets, syncs and kernels. Each step is its own noinline function so the test can check that
// the recorded call stack names it. Output is deterministic (the test compares it traced and
// untraced). Built twice: default stream legacy, and --default-stream per-thread. With the argument
// "sigterm" it ends by raising SIGTERM (default action: the process dies of it) once the device is
// idle, instead of freeing and printing.
#include <cuda_runtime.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                             \
  do {                                                                          \
    cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(2);                                                             \
    }                                                                           \
  } while (0)

constexpr size_t kBytes = 1 << 20;  // 1 MiB per copy

__global__ void ScaleKernel(float* data, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

__attribute__((noinline)) void UploadPageable(float* dev, const float* host) {
  CHECK(cudaMemcpy(dev, host, kBytes, cudaMemcpyHostToDevice));
}
__attribute__((noinline)) void UploadPinned(float* dev, const float* pinned) {
  CHECK(cudaMemcpy(dev, pinned, kBytes, cudaMemcpyHostToDevice));
}
__attribute__((noinline)) void UploadPinnedAsync(float* dev, const float* pinned, cudaStream_t s) {
  CHECK(cudaMemcpyAsync(dev, pinned, kBytes, cudaMemcpyHostToDevice, s));
}
__attribute__((noinline)) void DownloadPageableAsync(float* host, const float* dev,
                                                     cudaStream_t s) {
  CHECK(cudaMemcpyAsync(host, dev, kBytes, cudaMemcpyDeviceToHost, s));
}
__attribute__((noinline)) void DownloadPinned(float* pinned, const float* dev) {
  CHECK(cudaMemcpy(pinned, dev, kBytes, cudaMemcpyDeviceToHost));
}
__attribute__((noinline)) void DownloadPinnedAsync(float* pinned, const float* dev,
                                                   cudaStream_t s) {
  CHECK(cudaMemcpyAsync(pinned, dev, kBytes, cudaMemcpyDeviceToHost, s));
}
__attribute__((noinline)) void ClearDevice(float* dev, cudaStream_t s) {
  CHECK(cudaMemset(dev, 0, kBytes));
  CHECK(cudaMemsetAsync(dev, 0, kBytes / 2, s));
}
__attribute__((noinline)) void RunKernels(float* dev, cudaStream_t s) {
  int n = static_cast<int>(kBytes / sizeof(float));
  for (int i = 0; i < 3; ++i) ScaleKernel<<<(n + 255) / 256, 256, 0, s>>>(dev, n, 2.0f);
  CHECK(cudaGetLastError());
}
__attribute__((noinline)) void WaitStream(cudaStream_t s) { CHECK(cudaStreamSynchronize(s)); }
__attribute__((noinline)) void WaitDevice() { CHECK(cudaDeviceSynchronize()); }

int main(int argc, char** argv) {
  const size_t n = kBytes / sizeof(float);
  std::vector<float> pageable(n, 1.0f), result(n, 0.0f);
  float* pinned = nullptr;
  float* dev = nullptr;
  cudaStream_t stream;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMallocHost(reinterpret_cast<void**>(&pinned), kBytes));
  CHECK(cudaMalloc(reinterpret_cast<void**>(&dev), kBytes));
  CHECK(cudaStreamCreate(&stream));
  for (size_t i = 0; i < n; ++i) pinned[i] = 1.0f;

  UploadPageable(dev, pageable.data());
  UploadPinned(dev, pinned);
  UploadPinnedAsync(dev, pinned, stream);
  RunKernels(dev, stream);
  WaitStream(stream);
  DownloadPageableAsync(result.data(), dev, stream);
  DownloadPinnedAsync(pinned, dev, stream);
  WaitStream(stream);
  DownloadPinned(pinned, dev);
  ClearDevice(dev, stream);
  WaitDevice();
  if (argc > 1 && std::strcmp(argv[1], "sigterm") == 0) std::raise(SIGTERM);
  // "linger": the GPU work done, 50 ms more before the exit (for a periodic CUPTI flush to come).
  if (argc > 1 && std::strcmp(argv[1], "linger") == 0) usleep(50000);

  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += result[i] + pinned[i];
  CHECK(cudaFree(dev));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaStreamDestroy(stream));
  std::printf("cuda_copies: sum=%.1f\n", sum);
  return 0;
}
