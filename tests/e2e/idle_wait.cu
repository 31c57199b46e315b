// A training loop that twice stops between its steps while the GPU has nothing to do (issue 13,
// "interactive jobs are invisible"): (a) it waits on its terminal for a line with select(), as GNU
// readline does before it reads (pdb, input() in a Python with the readline module), then reads
// the line; (b) it sleeps with nanosleep (a script's time.sleep, a notebook cell's pause). Before
// the wait hooks both were unknown (or, after the sync of (a), synchronization); the report must
// give both to interactive, with wait_for_line's and sleep_between_steps's stacks.
//
//   idle_wait [--steps 30] [--sleep-ms 300]
#include <cuda_runtime.h>
#include <errno.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CUDA_CHECK(call)                                \
  do {                                                  \
    if ((call) != cudaSuccess) {                        \
      fprintf(stderr, "idle_wait: %s failed\n", #call); \
      exit(1);                                          \
    }                                                   \
  } while (0)

__global__ void train_step(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

namespace {

// GNU readline's wait for a key: select() on the terminal until it is readable, then read().
__attribute__((noinline)) bool wait_for_line() {
  printf("waiting for a line\n");
  fflush(stdout);
  for (;;) {
    fd_set in;
    FD_ZERO(&in);
    FD_SET(STDIN_FILENO, &in);
    int r = select(STDIN_FILENO + 1, &in, nullptr, nullptr, nullptr);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char line[64];
    ssize_t n = read(STDIN_FILENO, line, sizeof line);
    return n > 0 && line[0] == 'y';
  }
}

__attribute__((noinline)) void sleep_between_steps(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 30, sleep_ms = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--sleep-ms") == 0) sleep_ms = atoi(argv[i + 1]);
  }
  const int n = 1 << 20;
  float* x = nullptr;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  int done = 0;
  for (int step = 0; step < steps; ++step, ++done) {
    train_step<<<n / 256, 256>>>(x, n);
    CUDA_CHECK(cudaGetLastError());
    if (step == steps / 3) {
      CUDA_CHECK(cudaDeviceSynchronize());
      if (!wait_for_line()) break;
    }
    // No sync: the step's kernel drains while the thread sleeps, then the GPU idles.
    if (step == 2 * steps / 3) sleep_between_steps(sleep_ms);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaFree(x));
  printf("idle_wait: %d steps\n", done);
  return 0;
}
