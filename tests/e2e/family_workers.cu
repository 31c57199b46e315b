// A training loop fed by forked worker processes, as a PyTorch DataLoader with num_workers > 0
// (issue 24, "worker processes of the family are sampled from there"): the workers issue no GPU
// work, so they have no writer thread of ours; the training thread's sampler looks at them. The
// training thread launches a step, then waits for the next batch on a worker's result pipe (the
// DataLoader's result queue) while the GPU idles. What the workers do meanwhile:
//   --mode compute  augment(): 30 ms of CPU work per batch (CPU-bound workers);
//   --mode read     load_shard(): a 32 MiB O_DIRECT read of --file per batch, by a raw system call
//                   that no hook sees (a data library with its own I/O path): blocked in pread64 on
//                   the file (I/O-bound workers; at least 256 MiB, the driver writes it). A read
//                   the hooks see is the worker's own traced
//                   call and explains the wait without the sampler.
// The report must say so: data_loading with finding workers_computing, or workers_reading with
// the file as its object (tests/e2e/family_workers.py).
//
//   family_workers --mode compute|read [--file PATH] [--steps 60] [--workers 2]
#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CUDA_CHECK(call)                                     \
  do {                                                       \
    if ((call) != cudaSuccess) {                             \
      fprintf(stderr, "family_workers: %s failed\n", #call); \
      exit(1);                                               \
    }                                                        \
  } while (0)

__global__ void train_step(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

namespace {

constexpr size_t kShardBytes = 32u << 20;
constexpr size_t kFileBytes = 8 * kShardBytes;

uint64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A transform that computes 30 ms of CPU time, however long a loaded machine makes that.
__attribute__((noinline)) uint64_t augment(int batch) {
  const uint64_t until = ThreadCpuNs() + 30000000ull;
  volatile uint64_t acc = static_cast<uint64_t>(batch);
  while (ThreadCpuNs() < until) acc = acc * 6364136223846793005ull + 1442695040888963407ull;
  return acc;
}

// A shard read past the page cache (O_DIRECT), by a raw system call: blocked on the disk.
__attribute__((noinline)) bool load_shard(int fd, void* buf, int batch) {
  const off_t offset = static_cast<off_t>((batch % (kFileBytes / kShardBytes)) * kShardBytes);
  return syscall(SYS_pread64, fd, buf, kShardBytes, offset) == static_cast<long>(kShardBytes);
}

bool ReadAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// A worker: takes batch indices from `index_fd` (-1: stop), puts each batch's index on
// `result_fd` once it is made.
[[noreturn]] void Worker(bool read_mode, const char* file, int index_fd, int result_fd) {
  int fd = -1;
  void* buf = nullptr;
  if (read_mode) {
    fd = open(file, O_RDONLY | O_DIRECT);
    if (fd < 0 || posix_memalign(&buf, 4096, kShardBytes) != 0) _exit(2);
  }
  for (;;) {
    int batch = 0;
    if (!ReadAll(index_fd, &batch, sizeof batch) || batch < 0) break;
    if (read_mode) {
      if (!load_shard(fd, buf, batch)) _exit(3);
    } else {
      augment(batch);
    }
    if (write(result_fd, &batch, sizeof batch) != sizeof batch) _exit(4);
  }
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 60, workers = 2;
  const char* mode = "compute";
  const char* file = "shards.bin";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--workers") == 0) workers = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--mode") == 0) mode = argv[i + 1];
    if (strcmp(argv[i], "--file") == 0) file = argv[i + 1];
  }
  const bool read_mode = strcmp(mode, "read") == 0;
  const int n = 1 << 20;
  float* x = nullptr;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  // Workers forked after CUDA started, as a DataLoader's iterator forks them.
  std::vector<int> index_fd(workers), result_fd(workers);
  std::vector<pid_t> pids(workers);
  for (int w = 0; w < workers; ++w) {
    int to_worker[2], from_worker[2];
    if (pipe(to_worker) != 0 || pipe(from_worker) != 0) return 1;
    pids[w] = fork();
    if (pids[w] < 0) return 1;
    if (pids[w] == 0) {
      close(to_worker[1]);
      close(from_worker[0]);
      Worker(read_mode, file, to_worker[0], from_worker[1]);
    }
    close(to_worker[0]);
    close(from_worker[1]);
    index_fd[w] = to_worker[1];
    result_fd[w] = from_worker[0];
  }
  int next = 0;
  for (int w = 0; w < workers; ++w, ++next) {  // one batch ahead per worker
    if (write(index_fd[w], &next, sizeof next) != sizeof next) return 1;
  }
  int done = 0;
  for (int step = 0; step < steps; ++step, ++done) {
    const int w = step % workers;
    int batch = 0;
    if (!ReadAll(result_fd[w], &batch, sizeof batch)) break;  // the GPU idles meanwhile
    if (write(index_fd[w], &next, sizeof next) != sizeof next) break;
    ++next;
    train_step<<<n / 256, 256>>>(x, n);
    CUDA_CHECK(cudaGetLastError());
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  int stop = -1;
  for (int w = 0; w < workers; ++w) {
    if (write(index_fd[w], &stop, sizeof stop) != sizeof stop) return 1;
    int status = 0;
    if (waitpid(pids[w], &status, 0) != pids[w] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "family_workers: worker %d failed\n", w);
      return 1;
    }
  }
  CUDA_CHECK(cudaFree(x));
  printf("family_workers: %d steps, %d workers (%s)\n", done, workers, mode);
  return 0;
}
