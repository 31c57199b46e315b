// Added cost per intercepted cudaMemcpyAsync (Done-when 6 of issue 4). Run as
//   cuda_memcpy_bench /path/libidlescope.so
// it re-runs itself under LD_PRELOAD with stacks off and on. Each child times, in the same run,
// batches of cudaMemcpyAsync through the hook (the program's own call) and through the real
// libcudart function (dlsym on the already loaded library: no hook), interleaved, and prints the
// median per-call difference. CUPTI is disabled in the children so only the hook is measured
// (CUPTI's own per-call cost is the same with or without idlescope's hook).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using MemcpyAsyncFn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);

static double BatchNs(MemcpyAsyncFn fn, void* dst, const void* src, cudaStream_t s, int n) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) fn(dst, src, 64, cudaMemcpyHostToDevice, s);
  auto t1 = std::chrono::steady_clock::now();
  cudaStreamSynchronize(s);  // not timed: keeps the queue short
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
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
  constexpr int kBatch = 200, kRounds = 40;
  for (int i = 0; i < 3; ++i) {  // warm up both paths
    BatchNs(real, dev, pinned, s, kBatch);
    BatchNs(hooked, dev, pinned, s, kBatch);
  }
  std::vector<double> base, traced, diff;
  for (int r = 0; r < kRounds; ++r) {
    double b = BatchNs(real, dev, pinned, s, kBatch);
    double t = BatchNs(hooked, dev, pinned, s, kBatch);
    base.push_back(b);
    traced.push_back(t);
    diff.push_back(t - b);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("%-28s untraced %8.0f ns/call  traced %8.0f ns/call  added %7.0f ns/call\n", label,
              median(base), median(traced), median(diff));
  return 0;
}

int main(int argc, char** argv) {
  if (const char* label = getenv("CUDA_MEMCPY_BENCH_CHILD")) return Child(label);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s /path/libidlescope.so\n", argv[0]);
    return 2;
  }
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
