// Root cause: GPU oversubscription (Gao et al. ICSE'24, job dimension). The job is given two
// GPUs (both visible) but trains on one: the other sits idle for the whole run.
//
// Fix (--fixed): data parallel over every visible GPU, one host thread per device, each training
// its share of the steps (what DDP with one process per GPU does).
//
//   unused_gpus [--fixed] [--steps 600] [--act-mb 216] [--layers 2] [--iters 512]
#include <thread>
#include <vector>

#include "train_common.h"

using example::Flags;
using example::Model;

namespace {

struct Options {
  bool fixed = false;
  int steps = 600;
  double act_mb = 216;
  int layers = 2;
  int iters = 512;
};

__attribute__((noinline)) void train_on_device(int device, int steps, const Options& o) {
  CUDA_CHECK(cudaSetDevice(device));
  Model model;
  model.Allocate(o.act_mb, o.iters);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* h_loss = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_loss, sizeof(float)));
  for (int step = 0; step < steps; ++step) {
    for (int l = 0; l < o.layers; ++l) model.Layer(stream, nullptr, 0, step);
    if ((step + 1) % 50 == 0) {
      CUDA_CHECK(cudaMemcpyAsync(h_loss, model.act, sizeof(float), cudaMemcpyDeviceToHost, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaFreeHost(h_loss));
  CUDA_CHECK(cudaStreamDestroy(stream));
  model.Free();
}

int train(const Options& o) {
  int visible = 0;
  CUDA_CHECK(cudaGetDeviceCount(&visible));
  int used = o.fixed ? visible : 1;
  printf("%d visible GPUs, training on %d\n", visible, used);
  if (visible < 2)
    printf("note: only one GPU is visible; the example needs two to show the cause\n");
  double t0 = example::NowSeconds();
  std::vector<std::thread> workers;
  for (int d = 0; d < used; ++d) {
    int share = o.steps / used + (d < o.steps % used ? 1 : 0);
    workers.emplace_back([d, share, &o] { train_on_device(d, share, o); });
  }
  for (std::thread& t : workers) t.join();
  double seconds = example::NowSeconds() - t0;
  example::PrintSummary("unused_gpus", o.fixed, o.steps, seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv);
  if (flags.help()) {
    printf(
        "usage: unused_gpus [--fixed] [--steps N] [--act-mb MB] [--layers N] [--iters N]\n"
        "  bad: trains on GPU 0 of all visible GPUs; --fixed: data parallel over all of them\n");
    return 0;
  }
  Options o;
  o.fixed = flags.Has("fixed");
  o.steps = static_cast<int>(flags.Int("steps", o.steps));
  o.act_mb = flags.Double("act-mb", o.act_mb);
  o.layers = static_cast<int>(flags.Int("layers", o.layers));
  o.iters = static_cast<int>(flags.Int("iters", o.iters));
  EXAMPLE_CHECK(o.steps > 0 && o.act_mb > 0 && o.layers > 0, "bad sizes");
  return train(o);
}
