// A per-step read-back (loss.item()) followed by host work before the next step's launch: the GPU
// runs dry while the training thread waits for the loss, then stays idle while the thread logs it
// (issue 13, "host work exposed by a per-step read-back"). The report must give the whole gap to
// synchronization, with read_back_loss's stack, not the host work to unknown.
//
// Fix (--fixed): the next step's kernel is queued before the previous step's loss is read (a
// deferred read-back through an event): the thread logs while the GPU computes.
//
//   readback [--fixed] [--steps 60] [--host-ms 3]
#include <cuda_runtime.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CUDA_CHECK(call)                               \
  do {                                                 \
    if ((call) != cudaSuccess) {                       \
      fprintf(stderr, "readback: %s failed\n", #call); \
      exit(1);                                         \
    }                                                  \
  } while (0)

__global__ void step_work(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

namespace {

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Logging the loss, metrics, the progress bar: CPU work in no traced call.
__attribute__((noinline)) double log_step(int step, float loss, double host_ms) {
  double until = NowMs() + host_ms, sink = loss;
  while (NowMs() < until) sink = sink * 1.0000001 + step;
  return sink;
}

// loss.item(): a 4-byte synchronous copy to the host, which waits for the step's kernels.
__attribute__((noinline)) float read_back_loss(const float* d_loss) {
  float loss = 0;
  CUDA_CHECK(cudaMemcpy(&loss, d_loss, sizeof loss, cudaMemcpyDeviceToHost));
  return loss;
}

}  // namespace

int main(int argc, char** argv) {
  bool fixed = false;
  int steps = 60;
  double host_ms = 3;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--fixed") == 0) fixed = true;
    if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
    if (strcmp(argv[i], "--host-ms") == 0 && i + 1 < argc) host_ms = atof(argv[++i]);
  }
  const int n = 1 << 20;
  float* x = nullptr;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  CUDA_CHECK(cudaMemset(x, 0, n * sizeof(float)));
  float* pinned = nullptr;  // the fixed twin's read-back buffers, one per step
  CUDA_CHECK(cudaMallocHost(&pinned, steps * sizeof(float)));
  std::vector<cudaEvent_t> copied(steps);
  for (cudaEvent_t& e : copied) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  double t0 = NowMs(), sink = 0;
  for (int step = 0; step < steps; ++step) {
    step_work<<<n / 256, 256>>>(x, n);
    CUDA_CHECK(cudaGetLastError());
    if (!fixed) {
      sink += log_step(step, read_back_loss(x), host_ms);
      continue;
    }
    CUDA_CHECK(cudaMemcpyAsync(&pinned[step], x, sizeof(float), cudaMemcpyDeviceToHost, 0));
    CUDA_CHECK(cudaEventRecord(copied[step], 0));
    if (step > 0) {  // the previous step's loss, while this step's kernel runs
      CUDA_CHECK(cudaEventSynchronize(copied[step - 1]));
      sink += log_step(step - 1, pinned[step - 1], host_ms);
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  if (fixed) sink += log_step(steps - 1, pinned[steps - 1], host_ms);
  printf("readback (%s): %d steps in %.0f ms (%g)\n", fixed ? "fixed" : "bad", steps, NowMs() - t0,
         sink > 0 ? 1.0 : 0.0);
  for (cudaEvent_t e : copied) CUDA_CHECK(cudaEventDestroy(e));
  CUDA_CHECK(cudaFreeHost(pinned));
  CUDA_CHECK(cudaFree(x));
  return 0;
}
