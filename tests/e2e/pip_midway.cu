// A training job that installs a missing package between steps, reading the installer's output
// (issue 13, "an installer whose output is read through a pipe"): --via popen (fgets on popen's
// FILE), system, or pipe (fork + exec with the output on a pipe, read with read(2), as Python's
// subprocess.run(["pip", ...], capture_output=True) does). The GPU idles for the installation:
// the report must say library_installation with install_missing_package's stack, not
// data_loading (the pipe read) or unknown.
//
//   pip_midway --pip DIR/pip [--via popen|system|pipe] [--steps 20]
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK(cond, ...)                           \
  do {                                             \
    if (!(cond)) {                                 \
      fprintf(stderr, "pip_midway: " __VA_ARGS__); \
      fprintf(stderr, "\n");                       \
      exit(1);                                     \
    }                                              \
  } while (0)
#define CUDA_CHECK(call) CHECK((call) == cudaSuccess, "%s failed", #call)

__global__ void train_step(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

namespace {

// Installs a package the job found missing; returns the installer's output lines.
__attribute__((noinline)) int install_missing_package(const std::string& pip,
                                                      const std::string& via) {
  int lines = 0;
  if (via == "popen") {
    std::string command = pip + " install einops";
    FILE* f = popen(command.c_str(), "r");
    CHECK(f != nullptr, "popen %s", command.c_str());
    char line[256];
    while (fgets(line, sizeof line, f) != nullptr) ++lines;
    CHECK(pclose(f) == 0, "%s failed", command.c_str());
  } else if (via == "system") {
    std::string command = pip + " install einops > /dev/null";
    CHECK(system(command.c_str()) == 0, "%s failed", command.c_str());
    lines = 2;
  } else {
    int out[2];
    CHECK(pipe(out) == 0, "pipe");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      execl(pip.c_str(), pip.c_str(), "install", "einops", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    char buf[256];
    ssize_t n;
    while ((n = read(out[0], buf, sizeof buf)) > 0) {
      for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n';
    }
    close(out[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "%s failed", pip.c_str());
  }
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  std::string pip, via = "popen";
  int steps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--pip") == 0) pip = argv[i + 1];
    if (strcmp(argv[i], "--via") == 0) via = argv[i + 1];
    if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
  }
  CHECK(!pip.empty(), "usage: pip_midway --pip DIR/pip [--via popen|system|pipe] [--steps N]");
  const int n = 1 << 20;
  float* x = nullptr;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  int lines = 0;
  for (int step = 0; step < steps; ++step) {
    train_step<<<n / 256, 256>>>(x, n);
    CUDA_CHECK(cudaGetLastError());
    if (step == steps / 2) {
      CUDA_CHECK(cudaDeviceSynchronize());
      lines = install_missing_package(pip, via);
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaFree(x));
  printf("pip_midway (%s): %d steps, installer said %d lines\n", via.c_str(), steps, lines);
  return 0;
}
