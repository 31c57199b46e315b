// A small CUDA job without kernels (no nvcc needed): pageable and pinned copies, a memset, an
// async copy on a stream and syncs, against whatever libcudart.so.13 comes first (simgpu in
// tests). Prints what it copied; used for CUPTI failing to load and for signals with CUPTI on.
//   cuda_copies ITERATIONS   (0: until a signal ends it; prints "ready" after the first one)
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                   \
  do {                                                                             \
    cudaError_t err_ = (x);                                                        \
    if (err_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "cuda_copies: %s: %s\n", #x, cudaGetErrorString(err_)); \
      return 2;                                                                    \
    }                                                                              \
  } while (0)

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 10;
  const size_t bytes = 1 << 20;
  std::vector<char> pageable(bytes, 7);
  void* pinned = nullptr;
  void* device = nullptr;
  cudaStream_t stream;
  CHECK(cudaMallocHost(&pinned, bytes));
  CHECK(cudaMalloc(&device, bytes));
  CHECK(cudaStreamCreate(&stream));
  unsigned long long sum = 0;
  for (int i = 0; iterations == 0 || i < iterations; ++i) {
    CHECK(cudaMemcpy(device, pageable.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemsetAsync(device, i & 0xff, bytes / 2, stream));
    CHECK(cudaMemcpyAsync(pinned, device, bytes, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    sum += static_cast<unsigned char*>(pinned)[0];
    if (i == 0) {
      std::printf("ready\n");
      std::fflush(stdout);
    }
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("%d iterations of %zu-byte copies, checksum %llu\n", iterations, bytes, sum);
  CHECK(cudaFree(device));
  CHECK(cudaFreeHost(pinned));
  return 0;
}
