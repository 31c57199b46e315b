// The thread sampler's workload in tests/bench/run.sh: THREADS threads that each feed the GPU (a
// cudaMemsetAsync and a stream sync, which makes them sampled threads), then for SECONDS compute
// for 0.5 ms and sleep for 4.5 ms, again and again: runs of CPU work and of blocked time, the
// mix a training loop's threads show the sampler. The table runs it traced with the sampler on
// (IDLESCOPE_SAMPLE_HZ=200) and off (0); the difference in the process's CPU time over the wall
// time is the sampler's share of a core. WORKERS: as many worker processes forked from it (no GPU
// work: DataLoader workers, sampled from its writer, docs/architecture.md "The sampler") that
// compute and sleep the same way, for the worker-sampling row. Usage:
//   sampled_threads THREADS SECONDS [WORKERS]
// Prints one line: "sampled_threads THREADS WALL_NS CPU_NS WRITER_NS" (the timed part: wall time,
// the process's CPU time, all threads, so the recorder's writer, which samples, counts; and the
// writer thread's own CPU time, "idlescope-wr", from its schedstat: the sampler's cost without
// the noise of the job's own threads; 0 without a writer).
#include <cuda_runtime.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

long long Clock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// The CPU time of the recorder's writer thread so far (schedstat's first field), or 0.
long long WriterCpuNs() {
  long long ns = 0;
  DIR* tasks = opendir("/proc/self/task");
  while (dirent* t = tasks != nullptr ? readdir(tasks) : nullptr) {
    char path[300], comm[32] = "";
    std::snprintf(path, sizeof path, "/proc/self/task/%s/comm", t->d_name);
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    const bool writer =
        std::fgets(comm, sizeof comm, f) != nullptr && std::strncmp(comm, "idlescope-wr", 12) == 0;
    std::fclose(f);
    if (!writer) continue;
    std::snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", t->d_name);
    if ((f = std::fopen(path, "r")) != nullptr) {
      if (std::fscanf(f, "%lld", &ns) != 1) ns = 0;
      std::fclose(f);
    }
  }
  if (tasks != nullptr) closedir(tasks);
  return ns;
}

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "sampled_threads: %s\n", what);
  std::exit(1);
}

double g_seconds = 0;
pthread_barrier_t g_start;
volatile unsigned long g_sink = 0;

// 0.5 ms of CPU work and a 4.5 ms sleep, again and again, for `seconds`.
unsigned long ComputeAndSleep(double seconds) {
  const long long end = Clock(CLOCK_MONOTONIC) + static_cast<long long>(seconds * 1e9);
  unsigned long n = 0;
  while (Clock(CLOCK_MONOTONIC) < end) {
    const long long spin_until = Clock(CLOCK_MONOTONIC) + 500000;
    while (Clock(CLOCK_MONOTONIC) < spin_until) ++n;
    timespec nap{0, 4500000};
    nanosleep(&nap, nullptr);
  }
  return n;
}

void* Feeder(void*) {
  void* dev = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&dev, 4096) != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess) {
    Fail("cudaMalloc");
  }
  cudaMemsetAsync(dev, 0, 4096, stream);
  cudaStreamSynchronize(stream);
  pthread_barrier_wait(&g_start);
  g_sink = ComputeAndSleep(g_seconds);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: sampled_threads THREADS SECONDS [WORKERS]\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const int workers = argc == 4 ? std::atoi(argv[3]) : 0;
  g_seconds = std::atof(argv[2]);
  if (threads <= 0 || g_seconds <= 0) Fail("THREADS and SECONDS must be positive");
  pthread_barrier_init(&g_start, nullptr, threads + 1);
  std::vector<pthread_t> ids(threads);
  for (pthread_t& t : ids) {
    if (pthread_create(&t, nullptr, Feeder, nullptr) != 0) Fail("pthread_create");
  }
  pthread_barrier_wait(&g_start);
  const long long wall0 = Clock(CLOCK_MONOTONIC), cpu0 = Clock(CLOCK_PROCESS_CPUTIME_ID);
  const long long writer0 = WriterCpuNs();
  std::vector<pid_t> children;
  for (int w = 0; w < workers; ++w) {
    const pid_t pid = fork();
    if (pid < 0) Fail("fork");
    if (pid == 0) {
      g_sink = ComputeAndSleep(g_seconds);
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pthread_t t : ids) pthread_join(t, nullptr);
  for (pid_t pid : children) waitpid(pid, nullptr, 0);
  const long long wall = Clock(CLOCK_MONOTONIC) - wall0;
  const long long cpu = Clock(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  std::printf("sampled_threads %d %lld %lld %lld\n", threads, wall, cpu, WriterCpuNs() - writer0);
  return 0;
}
