// Shared pieces of the root-cause examples: error checks, flags, the "layer" kernel that stands
// for a model's forward/backward work, and timing. Each example is a training loop shaped like a
// real job; its fix is a flag (--fixed) so the bad and fixed twins are the same binary.
//
// Sizing: the layer kernel processes `elements` floats with `iters` dependent FMAs each. On an
// H200 (132 SMs) 54M elements x 512 iterations take about 1 ms; simgpu's default kernel model
// (3 us + 5 us per wave of 132 SMs x 8 blocks of 256 threads) also gives about 1 ms for the same
// grid, so one binary shows the same shape on both. Scale with --steps and the size flags.
#pragma once

#include <cuda_runtime.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CUDA_CHECK(call)                                                        \
  do {                                                                          \
    cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) {                                                  \
      fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, \
              cudaGetErrorName(err_), cudaGetErrorString(err_));                \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

// Fails the example (exit 1) with a message, for non-CUDA errors.
#define EXAMPLE_CHECK(cond, ...)                                               \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

namespace example {

constexpr int kThreadsPerBlock = 256;

// Flags of the form --name=value, --name value, or --name (a boolean).
class Flags {
 public:
  Flags(int argc, char** argv) : argc_(argc), argv_(argv) {
    for (int i = 1; i < argc; ++i) {
      if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) help_ = true;
    }
  }
  bool help() const { return help_; }
  bool Has(const char* name) const { return Find(name) != nullptr; }
  long Int(const char* name, long def) const {
    const char* v = Find(name);
    if (v == nullptr || *v == '\0') return def;
    char* end = nullptr;
    long x = strtol(v, &end, 10);
    EXAMPLE_CHECK(end != v && *end == '\0', "--%s=%s is not an integer", name, v);
    return x;
  }
  double Double(const char* name, double def) const {
    const char* v = Find(name);
    if (v == nullptr || *v == '\0') return def;
    char* end = nullptr;
    double x = strtod(v, &end);
    EXAMPLE_CHECK(end != v && *end == '\0', "--%s=%s is not a number", name, v);
    return x;
  }
  std::string Str(const char* name, const char* def) const {
    const char* v = Find(name);
    return v == nullptr || *v == '\0' ? def : v;
  }

 private:
  // Returns the value ("" for a bare boolean flag), or nullptr when absent.
  const char* Find(const char* name) const {
    size_t len = strlen(name);
    for (int i = 1; i < argc_; ++i) {
      const char* a = argv_[i];
      if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, len) != 0) continue;
      const char* rest = a + 2 + len;
      if (*rest == '=') return rest + 1;
      if (*rest != '\0') continue;
      if (i + 1 < argc_ && strncmp(argv_[i + 1], "--", 2) != 0) return argv_[i + 1];
      return "";
    }
    return nullptr;
  }
  int argc_;
  char** argv_;
  bool help_ = false;
};

inline double NowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Burns CPU for `us` microseconds: stands for host work a framework does per step or per
// operator (Python, dispatch, augmentation) that no traced call covers.
inline void BusyHostWork(double us) {
  double end = NowSeconds() + us * 1e-6;
  volatile uint64_t x = 0;
  while (NowSeconds() < end) x = x + 1;
}

// One "layer" of a model: each thread owns one activation, runs `iters` dependent FMAs seeded
// from its input sample and the step, and writes the activation. `in` holds the batch on the
// device (n_in floats, reused cyclically).
__global__ void layer_kernel(float* act, size_t n, const float* in, size_t n_in, int iters,
                             int step) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = (in != nullptr && n_in > 0 ? in[i % n_in] : 0.0f) + static_cast<float>(step) * 1e-3f;
  for (int k = 0; k < iters; ++k) v = fmaf(v, 0.9999f, 1e-4f);
  act[i] = v;
}

inline unsigned BlocksFor(size_t elements) {
  return static_cast<unsigned>((elements + kThreadsPerBlock - 1) / kThreadsPerBlock);
}

// A model's activations on one device: `elements` floats per layer.
struct Model {
  float* act = nullptr;
  size_t elements = 0;
  int iters = 512;

  void Allocate(double act_mb, int work_iters) {
    elements = static_cast<size_t>(act_mb * 1024 * 1024 / sizeof(float));
    if (elements < kThreadsPerBlock) elements = kThreadsPerBlock;
    iters = work_iters;
    CUDA_CHECK(cudaMalloc(&act, elements * sizeof(float)));
  }
  void Free() {
    CUDA_CHECK(cudaFree(act));
    act = nullptr;
  }
  // Enqueues one layer's kernel on `stream`.
  void Layer(cudaStream_t stream, const float* in, size_t n_in, int step) const {
    layer_kernel<<<BlocksFor(elements), kThreadsPerBlock, 0, stream>>>(act, elements, in, n_in,
                                                                       iters, step);
    CUDA_CHECK(cudaGetLastError());
  }
};

// Prints the figures every example ends with, one line, easy to grep.
inline void PrintSummary(const char* example, bool fixed, int steps, double seconds) {
  printf("%s (%s): %d steps in %.3f s (%.2f ms/step)\n", example, fixed ? "fixed" : "bad", steps,
         seconds, steps > 0 ? seconds * 1e3 / steps : 0.0);
  fflush(stdout);
}

}  // namespace example
