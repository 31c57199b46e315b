// Two ranks in one NCCL communicator, the second fork()ed by the first without exec (a program
// that starts its own ranks): rank 1 is in rank 0's process family, yet it drives a device of its
// own, so its events must never explain rank 0's idle time (docs/attribution.md, "Tiers and
// precedence").
//
// Each step, rank 0 runs a short kernel, then spends --cpu-ms of its own CPU time (no traced
// call) before the next kernel: GPU 0 sits idle for its host's work. Meanwhile rank 1 waits in a
// cudaStreamSynchronize for its long kernel and writes its log file, both overlapping rank 0's
// gap. Then both all-reduce. The report of GPU 0 must show the gap as unexplained (unknown), not as
// rank 1's synchronization or its log writes (intermediate_upload).
//
//   forked_ranks [--steps 40] [--cpu-ms 20]
#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK(cond, ...)                             \
  do {                                               \
    if (!(cond)) {                                   \
      fprintf(stderr, "forked_ranks: " __VA_ARGS__); \
      fprintf(stderr, "\n");                         \
      exit(1);                                       \
    }                                                \
  } while (0)
#define CUDA_CHECK(call) CHECK((call) == cudaSuccess, "%s failed", #call)
#define NCCL_CHECK(call) CHECK((call) == ncclSuccess, "%s failed", #call)

__global__ void layer(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

// Rank 1's long kernel (on simgpu: SIMGPU_KERNEL_US=long_work=8000, set by forked_ranks.py):
// shorter than rank 0's CPU work, so that rank 0 is the slower rank and its GPU waits for it.
__global__ void long_work(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.25f + 2.0f;
}

namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The rank's own CPU work: a busy loop, no call that the tracer sees.
__attribute__((noinline)) double spin(double ms) {
  double until = Now() + ms * 1e-3, x = 0;
  while (Now() < until) x += 1.0;
  return x;
}

int run_rank(int rank, const ncclUniqueId& id, int steps, double cpu_ms, const char* log_path) {
  CUDA_CHECK(cudaSetDevice(rank));
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, 2, id, rank));
  const int n = 1 << 16;
  float* x = nullptr;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  FILE* log = rank == 1 ? fopen(log_path, "w") : nullptr;
  CHECK(rank == 0 || log != nullptr, "open %s: %s", log_path, strerror(errno));
  std::string line(256 * 1024, 'l');
  double sink = 0;
  for (int step = 0; step < steps; ++step) {
    layer<<<n / 256, 256, 0, stream>>>(x, n);
    if (rank == 0) {
      sink += spin(cpu_ms);
    } else {
      // A long kernel and a wait on it, then the log write: both while rank 0 computes on its CPU.
      long_work<<<n / 256, 256, 0, stream>>>(x, n);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      for (int k = 0; k < 2; ++k) {
        CHECK(fwrite(line.data(), 1, line.size(), log) == line.size(), "write log");
        CHECK(fflush(log) == 0, "flush log");
      }
    }
    layer<<<n / 256, 256, 0, stream>>>(x, n);
    NCCL_CHECK(ncclAllReduce(x, x, n, ncclFloat, ncclSum, comm, stream));
    // Rank 0 never waits for its GPU in the loop: a synchronization on its device can only be
    // rank 1's, taken wrongly.
    if (rank == 1) CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  if (log != nullptr) fclose(log);
  // Rank 0's only wait, after its last all-reduce (rank 1 is there first): well under 1 ms.
  CUDA_CHECK(cudaStreamSynchronize(stream));
  NCCL_CHECK(ncclCommDestroy(comm));
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(x));
  if (rank == 0) printf("forked_ranks: %d steps (%g)\n", steps, sink > 0 ? 1.0 : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 40;
  double cpu_ms = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--cpu-ms") == 0) cpu_ms = atof(argv[i + 1]);
  }
  // The unique id travels through a pipe: rank 1 is forked before any CUDA call (a forked child
  // may not use CUDA state its parent created).
  int id_pipe[2];
  CHECK(pipe(id_pipe) == 0, "pipe: %s", strerror(errno));
  fflush(stdout);
  pid_t child = fork();
  CHECK(child >= 0, "fork: %s", strerror(errno));
  if (child == 0) {
    close(id_pipe[1]);
    ncclUniqueId id;
    size_t got = 0;
    while (got < sizeof id) {
      ssize_t n = read(id_pipe[0], reinterpret_cast<char*>(&id) + got, sizeof id - got);
      CHECK(n > 0, "read the NCCL id: %s", n < 0 ? strerror(errno) : "end of file");
      got += static_cast<size_t>(n);
    }
    close(id_pipe[0]);
    _exit(run_rank(1, id, steps, cpu_ms, "rank1.log"));
  }
  close(id_pipe[0]);
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  CHECK(write(id_pipe[1], &id, sizeof id) == static_cast<ssize_t>(sizeof id), "write the NCCL id");
  close(id_pipe[1]);
  int rc = run_rank(0, id, steps, cpu_ms, nullptr);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child, "waitpid: %s", strerror(errno));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank 1 failed");
  return rc;
}
