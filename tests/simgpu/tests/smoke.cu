// nvcc-built (-cudart shared) program using only normal CUDA: runs on a real GPU or, with
// simgpu first on LD_LIBRARY_PATH, on simgpu. Checks data that does not depend on running
// device code (simgpu models kernel time, not kernel results). Prints "SMOKE OK".
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                         \
  do {                                                                                   \
    cudaError_t err_ = (x);                                                              \
    if (err_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s failed: %s (%s:%d)\n", #x, cudaGetErrorString(err_), __FILE__, \
              __LINE__);                                                                 \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

__device__ int g_table[16];

__global__ void scale(float* x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

int main() {
  int n = 0;
  CHECK(cudaGetDeviceCount(&n));
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  printf("devices=%d name=%s sms=%d\n", n, p.name, p.multiProcessorCount);

  const int count = 1 << 20;
  std::vector<float> pageable(count, 1.5f), back(count, 0.f);
  float *work = nullptr, *keep = nullptr, *pinned = nullptr;
  CHECK(cudaMalloc(&work, count * sizeof(float)));
  CHECK(cudaMalloc(&keep, count * sizeof(float)));
  CHECK(cudaMallocHost(&pinned, count * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));

  CHECK(cudaMemcpy(keep, pageable.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpyAsync(work, keep, count * sizeof(float), cudaMemcpyDeviceToDevice, s));
  CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < 10; ++i) scale<<<(count + 255) / 256, 256, 0, s>>>(work, count, 1.0f);
  scale<<<4, 64, 0, s>>>(work, 256, 1.0f);  // a small grid: fewer blocks than SMs
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(b, s));
  CHECK(cudaMemcpyAsync(pinned, keep, count * sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaMemcpy(back.data(), keep, count * sizeof(float), cudaMemcpyDeviceToHost));
  if (memcmp(back.data(), pageable.data(), count * sizeof(float)) != 0 || pinned[7] != 1.5f) {
    fprintf(stderr, "copy round trip mismatch\n");
    return 1;
  }

  int table[16], out[16];
  for (int i = 0; i < 16; ++i) table[i] = i * i;
  CHECK(cudaMemcpyToSymbol(g_table, table, sizeof table));
  CHECK(cudaMemcpyFromSymbol(out, g_table, sizeof out));
  if (memcmp(table, out, sizeof out) != 0) {
    fprintf(stderr, "symbol round trip mismatch\n");
    return 1;
  }
  CHECK(cudaMemset(work, 0, 1024));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(work));
  CHECK(cudaFree(keep));
  printf("kernels took %.3f ms\nSMOKE OK\n", ms);
  return 0;
}
