// A training loop that stops halfway to ask its user whether to go on, reading the answer with
// fgets from its terminal (issue 13, "interactive jobs are invisible unless they read(2) a
// terminal"; CPython's input() on a terminal without readline reads the same way). The GPU idles
// until the person answers: the report must say interactive, with ask_user's stack.
//
//   prompt [--steps 20]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CUDA_CHECK(call)                             \
  do {                                               \
    if ((call) != cudaSuccess) {                     \
      fprintf(stderr, "prompt: %s failed\n", #call); \
      exit(1);                                       \
    }                                                \
  } while (0)

__global__ void train_step(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

namespace {

__attribute__((noinline)) bool ask_user(const char* question) {
  printf("%s [y/n] ", question);
  fflush(stdout);
  char answer[16] = {};
  if (fgets(answer, sizeof answer, stdin) == nullptr) return false;
  return answer[0] == 'y';
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
  }
  const int n = 1 << 20;
  float* x = nullptr;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  int done = 0;
  for (int step = 0; step < steps; ++step, ++done) {
    train_step<<<n / 256, 256>>>(x, n);
    CUDA_CHECK(cudaGetLastError());
    if (step == steps / 2) {
      CUDA_CHECK(cudaDeviceSynchronize());
      if (!ask_user("halfway: go on?")) break;
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaFree(x));
  printf("\nprompt: %d steps\n", done);
  return 0;
}
