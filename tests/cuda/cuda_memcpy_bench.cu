// Added cost per intercepted cudaMemcpyAsync (Done-when 6 of issue 4) or ncclAllReduce (issue 28).
// Run as
//   cuda_memcpy_bench /path/libidlescope.so [memcpy|allreduce]
// it re-runs itself under LD_PRELOAD with stacks off and on. Each child times, in the same run,
// batches of the call (cudaMemcpyAsync of 64 B pinned to the device, or ncclAllReduce of 64 floats
// on a one-rank communicator) through the hook (the program's own call) and through the real
// library function (dlsym on the already loaded libcudart or libnccl: no hook), interleaved, from
// a call site kDepth frames deep (so a captured stack has the default IDLESCOPE_STACK_DEPTH of 24
// frames, the same every call, as a training loop's), and prints the
// median per-call difference, in the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID: on a
// shared, loaded machine wall time also counts the time the thread waited for a core) and in
// wall time. CUPTI is disabled in these children so both paths see the same (absent) CUPTI
// subscription: with CUPTI on, the real call would reach our CUPTI callbacks too and record an
// event through the callback path, so it would no longer be an untraced baseline.
// So the CUPTI-on figure (hook + our CUPTI callbacks + our activity handling on the calling
// thread) compares two processes instead: one traced by idlescope with CUPTI on, one without
// idlescope that enables the same CUPTI activity kinds itself (what any CUPTI-based tool pays),
// alternated three times, median of each.
#include <cuda_runtime.h>
#include <cupti.h>
#include <dlfcn.h>
#include <nccl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using MemcpyAsyncFn = cudaError_t (*)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
using AllReduceFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);

// The call timed: one of the two is set.
struct Api {
  MemcpyAsyncFn memcpy = nullptr;
  AllReduceFn allreduce = nullptr;
};

static double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct PerCall {
  double cpu, wall;  // ns per call
};

struct Buffers {
  void *dev = nullptr, *pinned = nullptr;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
};

__attribute__((noinline)) static PerCall BatchNs(Api fn, const Buffers& b, int n) {
  double c0 = ThreadCpuNs();
  auto t0 = std::chrono::steady_clock::now();
  if (fn.memcpy != nullptr) {
    for (int i = 0; i < n; ++i) fn.memcpy(b.dev, b.pinned, 64, cudaMemcpyHostToDevice, b.stream);
  } else {
    for (int i = 0; i < n; ++i) {
      fn.allreduce(b.dev, b.dev, 64, ncclFloat, ncclSum, b.comm, b.stream);
    }
  }
  auto t1 = std::chrono::steady_clock::now();
  double c1 = ThreadCpuNs();
  cudaStreamSynchronize(b.stream);  // not timed: keeps the queue short
  return {(c1 - c0) / n, std::chrono::duration<double, std::nano>(t1 - t0).count() / n};
}

// The call site's frames: main, kDepth + 1 Deep frames and BatchNs (PairChild or SoloChild may be
// inlined into main), 25 at least, and 3 of libc below main: more than the 24 a stack keeps.
constexpr int kDepth = 22;

// BatchNs called `depth` frames deeper, the same call site every time (the empty asm after the
// call keeps each frame: no tail call).
__attribute__((noinline)) static PerCall Deep(int depth, Api fn, const Buffers& b, int n) {
  if (depth <= 0) return BatchNs(fn, b, n);
  PerCall r = Deep(depth - 1, fn, b, n);
  asm volatile("" ::: "memory");
  return r;
}

static double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A thread's event ring (IDLESCOPE_BUFFER_KB, default 1 MiB = 10922 96-byte slots) is mmap'ed
// and its pages are first touched by the events themselves: the first ring's worth of events of
// a thread pay a page fault every 42 events. kFirstPass rounds of hooked calls cover it, and the
// figure for them is printed apart from the steady state that follows.
constexpr int kBatch = 200, kRounds = 60, kFirstPass = 56;

static bool AllReduce() {
  const char* api = getenv("CUDA_MEMCPY_BENCH_API");
  return api != nullptr && std::strcmp(api, "allreduce") == 0;
}

static Buffers Setup() {
  Buffers b;
  cudaMalloc(&b.dev, 64 * sizeof(float));
  cudaMallocHost(&b.pinned, 64);
  cudaStreamCreate(&b.stream);
  int device = 0;
  if (AllReduce() && ncclCommInitAll(&b.comm, 1, &device) != ncclSuccess) {
    std::printf("ncclCommInitAll failed\n");
    std::exit(1);
  }
  return b;
}

// The program's own call: resolves to the preloaded hook when there is one.
static Api ProgramCall() {
  Api a;
  if (AllReduce()) {
    a.allreduce = &ncclAllReduce;
  } else {
    a.memcpy = &cudaMemcpyAsync;
  }
  return a;
}

// In-process pair: hooked vs real, CUPTI off.
static int PairChild(const char* label) {
  const bool nccl = AllReduce();
  void* lib = dlopen(nccl ? "libnccl.so.2" : "libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  void* sym = lib ? dlsym(lib, nccl ? "ncclAllReduce" : "cudaMemcpyAsync") : nullptr;
  Api hooked = ProgramCall(), real;
  if (nccl) {
    real.allreduce = reinterpret_cast<AllReduceFn>(sym);
  } else {
    real.memcpy = reinterpret_cast<MemcpyAsyncFn>(sym);
  }
  if (sym == nullptr ||
      (nccl ? real.allreduce == hooked.allreduce : real.memcpy == hooked.memcpy)) {
    std::printf("%s: cannot separate hook from %s\n", label, nccl ? "libnccl" : "libcudart");
    return 1;
  }
  Buffers b = Setup();
  for (int i = 0; i < 3; ++i) Deep(kDepth, real, b, kBatch);
  std::vector<double> first_diff;
  for (int phase = 0; phase < 2; ++phase) {
    std::vector<double> base, traced, diff, wall_diff;
    for (int r = 0; r < (phase == 0 ? kFirstPass : kRounds); ++r) {
      // Alternate which path goes first, so neither always follows the sync.
      PerCall u, t;
      if (r % 2 == 0) {
        u = Deep(kDepth, real, b, kBatch);
        t = Deep(kDepth, hooked, b, kBatch);
      } else {
        t = Deep(kDepth, hooked, b, kBatch);
        u = Deep(kDepth, real, b, kBatch);
      }
      base.push_back(u.cpu);
      traced.push_back(t.cpu);
      diff.push_back(t.cpu - u.cpu);
      wall_diff.push_back(t.wall - u.wall);
    }
    if (phase == 0) {
      first_diff = diff;
      continue;
    }
    std::printf(
        "%-40s untraced %6.0f  traced %6.0f  added %5.0f ns/call CPU time (wall: added %5.0f; "
        "first %d calls of the thread: added %5.0f)\n",
        label, Median(base), Median(traced), Median(diff), Median(wall_diff), kFirstPass * kBatch,
        Median(first_diff));
  }
  return 0;
}

// What a CUPTI activity client without idlescope does: the same kinds as
// interpose/cuda/cupti_layer.cc.
static void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 4 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}
static void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  free(buffer);
}
static bool EnableCuptiActivity() {
  void* lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  using RegisterFn =
      CUptiResult (*)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  using EnableFn = CUptiResult (*)(CUpti_ActivityKind);
  auto reg = reinterpret_cast<RegisterFn>(dlsym(lib, "cuptiActivityRegisterCallbacks"));
  auto enable = reinterpret_cast<EnableFn>(dlsym(lib, "cuptiActivityEnable"));
  if (reg == nullptr || enable == nullptr || reg(BufferRequested, BufferCompleted) != 0) {
    return false;
  }
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                               CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
                               CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD}) {
    enable(k);
  }
  return true;
}

// One path per process (CUPTI on): median CPU ns per call of the program's cudaMemcpyAsync,
// written to `out`.
static int SoloChild(const char* label, const char* out) {
  if (getenv("CUDA_MEMCPY_BENCH_OWN_CUPTI") != nullptr) {
    cudaFree(nullptr);  // CUPTI after the runtime is up, as idlescope starts it
    if (!EnableCuptiActivity()) {
      std::printf("%s: cannot enable CUPTI activity\n", label);
      return 1;
    }
  }
  Buffers b = Setup();
  for (int i = 0; i < kFirstPass; ++i) Deep(kDepth, ProgramCall(), b, kBatch);
  std::vector<double> cpu;
  for (int r = 0; r < kRounds; ++r) cpu.push_back(Deep(kDepth, ProgramCall(), b, kBatch).cpu);
  FILE* f = fopen(out, "w");
  if (f == nullptr) return 1;
  std::fprintf(f, "%f\n", Median(cpu));
  return fclose(f) == 0 ? 0 : 1;
}

static int RunChild(char** argv, const char* label, const char* preload, const char* depth,
                    const char* dir, const char* solo_out, bool own_cupti) {
  pid_t pid = fork();
  if (pid == 0) {
    if (preload != nullptr) setenv("LD_PRELOAD", preload, 1);
    setenv("IDLESCOPE_OUT", dir, 1);
    setenv("IDLESCOPE_STACK_DEPTH", depth, 1);
    if (solo_out == nullptr) setenv("IDLESCOPE_DISABLE", "cupti", 1);
    setenv("IDLESCOPE_QUIET", "1", 1);
    setenv("CUDA_MEMCPY_BENCH_CHILD", label, 1);
    if (solo_out != nullptr) setenv("CUDA_MEMCPY_BENCH_SOLO", solo_out, 1);
    if (own_cupti) setenv("CUDA_MEMCPY_BENCH_OWN_CUPTI", "1", 1);
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static double ReadNs(const std::string& path) {
  double v = -1;
  if (FILE* f = fopen(path.c_str(), "r")) {
    if (std::fscanf(f, "%lf", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

int main(int argc, char** argv) {
  if (const char* label = getenv("CUDA_MEMCPY_BENCH_CHILD")) {
    if (const char* out = getenv("CUDA_MEMCPY_BENCH_SOLO")) return SoloChild(label, out);
    return PairChild(label);
  }
  const char* api = argc >= 3 ? argv[2] : "memcpy";
  if (argc < 2 || argc > 3 || (std::strcmp(api, "memcpy") != 0 && std::strcmp(api, "allreduce"))) {
    std::fprintf(stderr, "usage: %s /path/libidlescope.so [memcpy|allreduce]\n", argv[0]);
    return 2;
  }
  setenv("CUDA_MEMCPY_BENCH_API", api, 1);
  std::printf(
      "added cost per intercepted %s (simgpu), CPU time of the\n"
      "calling thread, batches of %d, median of %d, after the thread's first %d calls,\n"
      "from a call site at least %d frames deep:\n"
      " CUPTI off: hooked vs real function in the same process, batches interleaved\n"
      " CUPTI on: traced process vs a process enabling the same CUPTI activity kinds itself\n",
      AllReduce() ? "ncclAllReduce (64 floats, one-rank communicator)"
                  : "cudaMemcpyAsync (64 B pinned H2D)",
      kBatch, kRounds, kFirstPass * kBatch, kDepth + 3);
  std::fflush(stdout);
  char dir[] = "/tmp/idlescope_bench_XXXXXX";
  if (mkdtemp(dir) == nullptr) return 2;
  int rc = 0;
  rc |= RunChild(argv, "CUPTI off, no stacks", argv[1], "0", dir, nullptr, false);
  rc |=
      RunChild(argv, "CUPTI off, stacks (24 frames, repeated)", argv[1], "24", dir, nullptr, false);
  std::vector<double> traced, untraced;
  const std::string out = std::string(dir) + "/solo.ns";
  for (int rep = 0; rep < 3; ++rep) {
    rc |= RunChild(argv, "untraced", nullptr, "0", dir, out.c_str(), true);
    untraced.push_back(ReadNs(out));
    rc |= RunChild(argv, "traced", argv[1], "0", dir, out.c_str(), false);
    traced.push_back(ReadNs(out));
  }
  if (rc == 0) {
    double u = Median(untraced), t = Median(traced);
    std::printf("%-40s untraced %6.0f  traced %6.0f  added %5.0f ns/call CPU time\n",
                "CUPTI on, no stacks", u, t, t - u);
  }
  std::string cleanup = std::string("rm -rf ") + dir;
  if (std::system(cleanup.c_str()) != 0) rc = 1;
  return rc;
}
