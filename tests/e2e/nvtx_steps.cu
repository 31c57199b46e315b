// A training loop that marks its steps with NVTX (issue 26, Done-when 2: steps from the job's own
// markers): each step is an NVTX range "train_step#N" around a forward range and --kernels
// launches of one kernel with one grid, which the GPU work alone cannot cut into steps (a step of
// 4 identical launches looks like 4 steps of 1); every --mark-every steps an nvtxMarkA. Every
// --slow-every-th step sleeps --slow-us more before its launches (loading its batch), so steps
// differ.
//   nvtx_steps [--steps N] [--kernels K] [--slow-every N --slow-us US]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__global__ void layer(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

static int Flag(int argc, char** argv, const char* name, int def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], name) == 0) return atoi(argv[i + 1]);
  }
  return def;
}

int main(int argc, char** argv) {
  const int steps = Flag(argc, argv, "--steps", 120);
  const int kernels = Flag(argc, argv, "--kernels", 4);
  const int slow_every = Flag(argc, argv, "--slow-every", 0);
  const int slow_us = Flag(argc, argv, "--slow-us", 0);
  const int mark_every = Flag(argc, argv, "--mark-every", 50);
  const int n = 1 << 20;
  float* x = nullptr;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess) return 1;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  for (int step = 0; step < steps; ++step) {
    char name[32];
    snprintf(name, sizeof name, "train_step#%d", step);
    nvtxRangePushA(name);
    if (slow_every > 0 && step % slow_every == slow_every - 1) usleep(slow_us);  // its batch
    nvtxRangePushA("forward");
    for (int k = 0; k < kernels; ++k) layer<<<(n + 255) / 256, 256, 0, stream>>>(x, n);
    nvtxRangePop();
    cudaStreamSynchronize(stream);
    nvtxRangePop();
    if (mark_every > 0 && step % mark_every == mark_every - 1) nvtxMarkA("checkpoint due");
  }
  cudaFree(x);
  printf("nvtx_steps: %d steps\n", steps);
  return 0;
}
