// Root cause: inappropriate batch size (Gao et al. ICSE'24: 25.6% of low-utilization issues).
// With a small batch each layer's kernel has fewer blocks than the GPU has SMs, finishes in a
// few microseconds, and the GPU waits for the host to dispatch the next layer (framework overhead:
// a layer is ~10 eager PyTorch operators at ~25 us each). Device
// memory is mostly free: the batch could be much larger.
//
// Fix (--fixed): the same samples in larger batches (--fixed-batch, default 1024 samples: grids
// well above the SM count), so there are 32x fewer steps and operators for the same work.
//
//   small_batch [--fixed] [--samples 16384] [--batch 32] [--fixed-batch 1024] [--layers 8]
//               [--iters 512] [--dispatch-us 250]
#include "train_common.h"

using example::Flags;

namespace {

struct Options {
  bool fixed = false;
  long samples = 16384;
  int batch = 32;
  int fixed_batch = 1024;
  int layers = 8;
  int iters = 512;
  double dispatch_us = 250;
  long log_every = 1600;  // samples between loss readbacks
};

// One sample = one block of 256 features, so a batch of B samples is a grid of B blocks.
struct Net {
  float* act = nullptr;
  float* loss = nullptr;  // pinned: the per-step readback
  size_t max_elements = 0;
};

// The host work of a framework for one layer (argument checks, dispatch, autograd bookkeeping of
// its operators), then the launch. With a small batch this, not the GPU, sets the pace.
__attribute__((noinline)) void dispatch_layer(const Net& net, int batch, int iters, int step,
                                              double dispatch_us) {
  example::BusyHostWork(dispatch_us);
  size_t elements = static_cast<size_t>(batch) * example::kThreadsPerBlock;
  example::layer_kernel<<<static_cast<unsigned>(batch), example::kThreadsPerBlock>>>(
      net.act, elements, nullptr, 0, iters, step);
  CUDA_CHECK(cudaGetLastError());
}

__attribute__((noinline)) void train_step_small_batch(const Net& net, const Options& o, int batch,
                                                      int step) {
  for (int l = 0; l < o.layers; ++l) dispatch_layer(net, batch, o.iters, step, o.dispatch_us);
}

// loss.item() every `log_every` samples: the host waits for the GPU.
__attribute__((noinline)) float log_loss(const Net& net) {
  CUDA_CHECK(cudaMemcpy(net.loss, net.act, sizeof(float), cudaMemcpyDeviceToHost));
  return *net.loss;
}

int train(const Options& o) {
  int batch = o.fixed ? o.fixed_batch : o.batch;
  int steps = static_cast<int>(o.samples / batch);
  cudaDeviceProp prop;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  printf("batch %d samples = %d blocks on %d SMs (%s), %d steps\n", batch, batch,
         prop.multiProcessorCount, batch < prop.multiProcessorCount ? "under-filled" : "filled",
         steps);
  Net net;
  net.max_elements = static_cast<size_t>(batch) * example::kThreadsPerBlock;
  CUDA_CHECK(cudaMalloc(&net.act, net.max_elements * sizeof(float)));
  CUDA_CHECK(cudaMallocHost(&net.loss, sizeof(float)));

  double t0 = example::NowSeconds();
  float loss = 0;
  long samples_since_log = 0;
  for (int step = 0; step < steps; ++step) {
    train_step_small_batch(net, o, batch, step);
    samples_since_log += batch;
    if (samples_since_log >= o.log_every) {
      loss = log_loss(net);
      samples_since_log = 0;
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  double seconds = example::NowSeconds() - t0;
  printf("loss %.4f, %ld samples\n", loss, static_cast<long>(steps) * batch);
  example::PrintSummary("small_batch", o.fixed, steps, seconds);
  CUDA_CHECK(cudaFreeHost(net.loss));
  CUDA_CHECK(cudaFree(net.act));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv);
  if (flags.help()) {
    printf(
        "usage: small_batch [--fixed] [--samples N] [--batch N] [--fixed-batch N] [--layers N]\n"
        "                   [--iters N] [--dispatch-us US]\n"
        "  bad: batches of --batch samples (grid below the SM count); --fixed: --fixed-batch\n");
    return 0;
  }
  Options o;
  o.fixed = flags.Has("fixed");
  o.samples = flags.Int("samples", o.samples);
  o.batch = static_cast<int>(flags.Int("batch", o.batch));
  o.fixed_batch = static_cast<int>(flags.Int("fixed-batch", o.fixed_batch));
  o.layers = static_cast<int>(flags.Int("layers", o.layers));
  o.iters = static_cast<int>(flags.Int("iters", o.iters));
  o.dispatch_us = flags.Double("dispatch-us", o.dispatch_us);
  EXAMPLE_CHECK(o.batch > 0 && o.fixed_batch > 0 && o.samples >= o.fixed_batch && o.layers > 0,
                "bad sizes");
  return train(o);
}
