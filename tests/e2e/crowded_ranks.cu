// Two ranks started the way Open MPI's mpirun starts them (OMPI_COMM_WORLD_RANK, _LOCAL_RANK and
// _SIZE in the environment, no RANK), on a host with two visible GPUs. The bad twin forgets to
// select its device (no cudaSetDevice(local_rank)): both ranks crowd onto GPU 0 while GPU 1 stays
// unused (issue 13, "API misuse beyond unused GPUs"). With --set-device each rank uses its own.
//
// Started without OMPI_COMM_WORLD_RANK, the program is its own mpirun: it starts --ranks copies
// of itself with the three variables set, and waits for them.
//
//   crowded_ranks [--set-device] [--ranks 2] [--steps 100]
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(cond, ...)                              \
  do {                                                \
    if (!(cond)) {                                    \
      fprintf(stderr, "crowded_ranks: " __VA_ARGS__); \
      fprintf(stderr, "\n");                          \
      exit(1);                                        \
    }                                                 \
  } while (0)
#define CUDA_CHECK(call) CHECK((call) == cudaSuccess, "%s failed", #call)

__global__ void crowd_work(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

namespace {

int Launch(int ranks, char** argv) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  CHECK(n > 0, "readlink /proc/self/exe");
  exe[n] = '\0';
  fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
      std::string rank = std::to_string(r), size = std::to_string(ranks);
      setenv("OMPI_COMM_WORLD_RANK", rank.c_str(), 1);
      setenv("OMPI_COMM_WORLD_LOCAL_RANK", rank.c_str(), 1);
      setenv("OMPI_COMM_WORLD_SIZE", size.c_str(), 1);
      execv(exe, argv);
      _exit(127);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  return failed == 0 ? 0 : 1;
}

int RunRank(bool set_device, int steps) {
  int local_rank = atoi(getenv("OMPI_COMM_WORLD_LOCAL_RANK"));
  if (set_device) CUDA_CHECK(cudaSetDevice(local_rank));
  int device = -1;
  CUDA_CHECK(cudaGetDevice(&device));
  const int n = 1 << 20;
  float* x = nullptr;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int step = 0; step < steps; ++step) {
    crowd_work<<<n / 256, 256, 0, stream>>>(x, n);
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(x));
  printf("crowded_ranks: local rank %d on device %d, %d steps\n", local_rank, device, steps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool set_device = false;
  int ranks = 2, steps = 100;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--set-device") == 0) set_device = true;
    if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) ranks = atoi(argv[++i]);
    if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
  }
  if (getenv("OMPI_COMM_WORLD_RANK") == nullptr) return Launch(ranks, argv);
  return RunRank(set_device, steps);
}
