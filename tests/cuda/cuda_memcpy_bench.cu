// Added cost per intercepted cudaMemcpyAsync (Done-when 6 of issue 4). Run as
//   cuda_memcpy_bench /path/libidlescope.so
// it re-runs itself under LD_PRELOAD with stacks off and on. Each child times, in the same run,
// batches of cudaMemcpyAsync through the hook (the program's own call) and through the real
// libcudart function (dlsym on the already loaded library: no hook), interleaved, and prints the
// median per-call difference, in the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID: on a
// shared, loaded machine wall time also counts the time the thread waited for a core) and in
// wall time. CUPTI is disabled in the children so both paths see the same (absent) CUPTI
// subscription: with CUPTI on, the real call would reach our CUPTI callbacks too and record an
// event through the callback path, so it would no longer be an untraced baseline. What the
// callbacks add per call is counted separately (docs/architecture.md, "CUDA and CUPTI").
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using MemcpyAsyncFn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);

static double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct PerCall {
  double cpu, wall;  // ns per call
};

static PerCall BatchNs(MemcpyAsyncFn fn, void* dst, const void* src, cudaStream_t s, int n) {
  double c0 = ThreadCpuNs();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) fn(dst, src, 64, cudaMemcpyHostToDevice, s);
  auto t1 = std::chrono::steady_clock::now();
  double c1 = ThreadCpuNs();
  cudaStreamSynchronize(s);  // not timed: keeps the queue short
  return {(c1 - c0) / n, std::chrono::duration<double, std::nano>(t1 - t0).count() / n};
}

static int Child(const char* label) {
  void* cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  auto real = cudart ? reinterpret_cast<MemcpyAsyncFn>(dlsym(cudart, "cudaMemcpyAsync")) : nullptr;
  MemcpyAsyncFn hooked = &cudaMemcpyAsync;  // resolves to the preloaded hook
  if (real == nullptr || real == hooked) {
    std::printf("%s: cannot separate hook from libcudart\n", label);
    return 1;
  }
  void *dev = nullptr, *pinned = nullptr;
  cudaStream_t s;
  cudaMalloc(&dev, 64);
  cudaMallocHost(&pinned, 64);
  cudaStreamCreate(&s);
  constexpr int kBatch = 200, kRounds = 60;
  for (int i = 0; i < 3; ++i) {  // warm up both paths
    BatchNs(real, dev, pinned, s, kBatch);
    BatchNs(hooked, dev, pinned, s, kBatch);
  }
  std::vector<double> base, traced, diff, wall_diff;
  for (int r = 0; r < kRounds; ++r) {
    // Alternate which path goes first, so neither always follows the sync.
    PerCall b, t;
    if (r % 2 == 0) {
      b = BatchNs(real, dev, pinned, s, kBatch);
      t = BatchNs(hooked, dev, pinned, s, kBatch);
    } else {
      t = BatchNs(hooked, dev, pinned, s, kBatch);
      b = BatchNs(real, dev, pinned, s, kBatch);
    }
    base.push_back(b.cpu);
    traced.push_back(t.cpu);
    diff.push_back(t.cpu - b.cpu);
    wall_diff.push_back(t.wall - b.wall);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf(
      "%-28s untraced %6.0f  traced %6.0f  added %5.0f ns/call CPU time (wall: added %5.0f)\n",
      label, median(base), median(traced), median(diff), median(wall_diff));
  return 0;
}

int main(int argc, char** argv) {
  if (const char* label = getenv("CUDA_MEMCPY_BENCH_CHILD")) return Child(label);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s /path/libidlescope.so\n", argv[0]);
    return 2;
  }
  std::printf(
      "added cost per intercepted cudaMemcpyAsync (64 B pinned H2D, simgpu): hooked vs real\n"
      "function in the same process, interleaved batches of 200, median of 60; CUPTI off in\n"
      "both paths (same subscription state), so this is the hook's own cost\n");
  std::fflush(stdout);
  char dir[] = "/tmp/idlescope_bench_XXXXXX";
  if (mkdtemp(dir) == nullptr) return 2;
  struct Mode {
    const char* label;
    const char* depth;
  } modes[] = {{"cudaMemcpyAsync, no stacks", "0"}, {"cudaMemcpyAsync, stacks", "24"}};
  int rc = 0;
  for (const Mode& m : modes) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("LD_PRELOAD", argv[1], 1);
      setenv("IDLESCOPE_OUT", dir, 1);
      setenv("IDLESCOPE_STACK_DEPTH", m.depth, 1);
      setenv("IDLESCOPE_DISABLE", "cupti", 1);
      setenv("IDLESCOPE_QUIET", "1", 1);
      setenv("CUDA_MEMCPY_BENCH_CHILD", m.label, 1);
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  std::string cleanup = std::string("rm -rf ") + dir;
  if (std::system(cleanup.c_str()) != 0) rc = 1;
  return rc;
}
