// Root cause: long library installation at job start (Gao et al. ICSE'24, library dimension). The
// job holds its GPU while it runs `pip install -r requirements.txt` before the first kernel, as
// jobs do that install their dependencies in the entry script. The installer is the bundled
// stand-in fake-pip/pip (next to this binary; it sleeps about as long as a small install), found
// through PATH exactly as a real pip would be.
//
// Fix (--fixed): the environment is prebuilt (a container image): no install at start.
//
//   startup_install [--fixed] [--steps 300] [--act-mb 216] [--layers 2] [--iters 512]
//                   [--pip-dir DIR]
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include "train_common.h"

using example::Flags;
using example::Model;

namespace {

struct Options {
  bool fixed = false;
  int steps = 300;
  double act_mb = 216;
  int layers = 2;
  int iters = 512;
  std::string pip_dir;
};

std::string DirOfExecutable() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  EXAMPLE_CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
  path[n] = '\0';
  std::string s(path);
  return s.substr(0, s.rfind('/'));
}

// Runs `pip install -r requirements.txt` with pip_dir first on PATH, and waits for it.
__attribute__((noinline)) void install_requirements(const std::string& pip_dir) {
  const char* old_path = getenv("PATH");
  std::string path = pip_dir + ":" + (old_path != nullptr ? old_path : "/usr/bin:/bin");
  EXAMPLE_CHECK(setenv("PATH", path.c_str(), 1) == 0, "setenv: %s", strerror(errno));
  fflush(stdout);
  pid_t pid = fork();
  EXAMPLE_CHECK(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    execlp("pip", "pip", "install", "-r", "requirements.txt", static_cast<char*>(nullptr));
    fprintf(stderr, "startup_install: exec pip: %s\n", strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    EXAMPLE_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
  }
  EXAMPLE_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "pip install failed (status %d)",
                status);
  if (old_path != nullptr) setenv("PATH", old_path, 1);
}

__attribute__((noinline)) void train_step(const Model& model, cudaStream_t stream, int layers,
                                          int step) {
  for (int l = 0; l < layers; ++l) model.Layer(stream, nullptr, 0, step);
}

int train(const Options& o) {
  double t0 = example::NowSeconds();
  // The GPU is the job's from here: CUDA is initialized (the device is allocated to the job)
  // before the entry script gets to installing packages.
  CUDA_CHECK(cudaFree(nullptr));
  if (!o.fixed) install_requirements(o.pip_dir);
  Model model;
  model.Allocate(o.act_mb, o.iters);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int step = 0; step < o.steps; ++step) train_step(model, stream, o.layers, step);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  double seconds = example::NowSeconds() - t0;
  example::PrintSummary("startup_install", o.fixed, o.steps, seconds);
  CUDA_CHECK(cudaStreamDestroy(stream));
  model.Free();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv);
  if (flags.help()) {
    printf(
        "usage: startup_install [--fixed] [--steps N] [--act-mb MB] [--layers N] [--iters N]\n"
        "                       [--pip-dir DIR]\n"
        "  bad: runs `pip install -r requirements.txt` (DIR/pip, default fake-pip/ next to this\n"
        "  binary) before the first kernel; --fixed: no install\n");
    return 0;
  }
  Options o;
  o.fixed = flags.Has("fixed");
  o.steps = static_cast<int>(flags.Int("steps", o.steps));
  o.act_mb = flags.Double("act-mb", o.act_mb);
  o.layers = static_cast<int>(flags.Int("layers", o.layers));
  o.iters = static_cast<int>(flags.Int("iters", o.iters));
  o.pip_dir = flags.Str("pip-dir", (DirOfExecutable() + "/fake-pip").c_str());
  EXAMPLE_CHECK(o.steps > 0 && o.act_mb > 0 && o.layers > 0, "bad sizes");
  return train(o);
}
