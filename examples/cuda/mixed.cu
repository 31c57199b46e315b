// A job with several root causes at once, the README's demo: each step copies its batch from
// pageable memory (host-GPU transfer), runs a backbone kernel and then a head of small kernels
// (a batch below the SM count: small batch), and every --every steps the training thread writes a
// checkpoint with fwrite + fsync (synchronous checkpointing). idlescope should rank the three and
// point at load_batch_pageable, save_checkpoint_sync and the small grids.
//
// Fix (--fixed): pinned batches copied on a second stream, 4x larger batches (grids above the SM
// count, a quarter of the steps for the same samples), and checkpoints written by a background
// thread.
//
//   mixed [--fixed] [--samples 38400] [--batch 64] [--layers 6] [--batch-mb 1] [--every 130]
//         [--model-mb 16] [--dispatch-us 20] [--iters 512] [--dir checkpoints]
#include <sys/stat.h>

#include <optional>

#include "checkpoint_io.h"

using example::AsyncCheckpointWriter;
using example::Flags;

namespace {

struct Options {
  bool fixed = false;
  long samples = 38400;
  int batch = 64;
  int layers = 6;
  double batch_mb = 1;  // host bytes per batch of --batch samples
  int every = 130;      // checkpoint period, in steps of the bad twin
  double model_mb = 16;
  double dispatch_us = 20;
  int iters = 512;
  std::string dir = "checkpoints";
};

constexpr int kFixedBatchFactor = 4;
// Backbone activations per sample: 64 samples fill 25 waves of an H200 (about 0.13 ms).
constexpr size_t kBackboneFloatsPerSample = 105600;

__attribute__((noinline)) void load_batch_pageable(float* d_batch, const float* h_batch,
                                                   size_t bytes, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(d_batch, h_batch, bytes, cudaMemcpyHostToDevice, stream));
}

__attribute__((noinline)) void load_batch_pinned(float* d_batch, const float* h_batch, size_t bytes,
                                                 cudaStream_t copy_stream) {
  CUDA_CHECK(cudaMemcpyAsync(d_batch, h_batch, bytes, cudaMemcpyHostToDevice, copy_stream));
}

// Framework dispatch for one operator, then its kernel: one block per sample.
__attribute__((noinline)) void dispatch_layer(float* act, const float* d_batch, size_t batch_floats,
                                              int batch, const Options& o, int step,
                                              cudaStream_t stream) {
  example::BusyHostWork(o.dispatch_us);
  size_t elements = static_cast<size_t>(batch) * example::kThreadsPerBlock;
  example::layer_kernel<<<static_cast<unsigned>(batch), example::kThreadsPerBlock, 0, stream>>>(
      act, elements, d_batch, batch_floats, o.iters, step);
  CUDA_CHECK(cudaGetLastError());
}

int train(const Options& o) {
  EXAMPLE_CHECK(mkdir(o.dir.c_str(), 0755) == 0 || errno == EEXIST, "mkdir %s: %s", o.dir.c_str(),
                strerror(errno));
  int factor = o.fixed ? kFixedBatchFactor : 1;
  int batch = o.batch * factor;
  int steps = static_cast<int>(o.samples / batch);
  int every = o.every / factor > 0 ? o.every / factor : 1;
  size_t batch_floats = static_cast<size_t>(o.batch_mb * factor * 1024 * 1024 / sizeof(float));
  size_t batch_bytes = batch_floats * sizeof(float);
  size_t param_bytes = static_cast<size_t>(o.model_mb * 1024 * 1024) / 4 * 4;

  float* act = nullptr;
  CUDA_CHECK(cudaMalloc(&act, static_cast<size_t>(batch) * example::kThreadsPerBlock * 4));
  example::Model backbone;
  backbone.Allocate(
      static_cast<double>(batch * kBackboneFloatsPerSample * sizeof(float)) / 1048576.0, o.iters);
  float* d_params = nullptr;
  CUDA_CHECK(cudaMalloc(&d_params, param_bytes));
  CUDA_CHECK(cudaMemset(d_params, 0, param_bytes));
  float* d_batch[2];
  for (float*& d : d_batch) CUDA_CHECK(cudaMalloc(&d, batch_bytes));
  float* h_batch = nullptr;
  if (o.fixed) {
    CUDA_CHECK(cudaMallocHost(&h_batch, batch_bytes));
  } else {
    h_batch = static_cast<float*>(malloc(batch_bytes));
    EXAMPLE_CHECK(h_batch != nullptr, "out of host memory");
  }
  for (size_t i = 0; i < batch_floats; ++i) h_batch[i] = static_cast<float>(i % 977) * 1e-3f;
  void* h_snapshot = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_snapshot, param_bytes));
  float* h_loss = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_loss, sizeof(float)));
  // Legacy default stream for compute: the checkpoint's cudaMemcpy waits for the step.
  cudaStream_t compute = 0, copy;
  CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  cudaEvent_t copied[2];
  for (cudaEvent_t& e : copied) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));

  printf("batch %d (%s), %d steps, checkpoint every %d steps\n", batch,
         o.fixed ? "pinned, overlapped" : "pageable", steps, every);
  double t0 = example::NowSeconds();
  std::optional<AsyncCheckpointWriter> writer;
  if (o.fixed) writer.emplace(h_snapshot, param_bytes);
  if (o.fixed) {
    load_batch_pinned(d_batch[0], h_batch, batch_bytes, copy);
    CUDA_CHECK(cudaEventRecord(copied[0], copy));
  }
  for (int step = 0; step < steps; ++step) {
    int cur = step % 2;
    if (o.fixed) {
      CUDA_CHECK(cudaStreamWaitEvent(compute, copied[cur], 0));
    } else {
      load_batch_pageable(d_batch[cur], h_batch, batch_bytes, compute);
    }
    if (o.fixed && step + 1 < steps) {
      // Prefetch the next batch into the other buffer while this step computes. Its last
      // reader, step-1, is complete: the loss readback at the end of step-1 waited for it.
      int next = (step + 1) % 2;
      load_batch_pinned(d_batch[next], h_batch, batch_bytes, copy);
      CUDA_CHECK(cudaEventRecord(copied[next], copy));
    }
    backbone.Layer(compute, d_batch[cur], batch_floats, step);
    for (int l = 0; l < o.layers; ++l) {
      dispatch_layer(act, d_batch[cur], batch_floats, batch, o, step, compute);
    }
    CUDA_CHECK(cudaMemcpy(h_loss, act, sizeof(float), cudaMemcpyDeviceToHost));  // loss.item()
    if ((step + 1) % every == 0) {
      std::string path = example::CheckpointPath(o.dir);
      if (o.fixed) {
        writer->save_checkpoint_async(d_params, path, step + 1);
      } else {
        example::save_checkpoint_sync(d_params, h_snapshot, param_bytes, path, step + 1);
      }
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  writer.reset();
  double seconds = example::NowSeconds() - t0;
  printf("loss %.4f\n", *h_loss);
  example::PrintSummary("mixed", o.fixed, steps, seconds);

  for (int i = 0; i < 2; ++i) {
    CUDA_CHECK(cudaEventDestroy(copied[i]));
    CUDA_CHECK(cudaFree(d_batch[i]));
  }
  CUDA_CHECK(cudaStreamDestroy(copy));
  if (o.fixed) {
    CUDA_CHECK(cudaFreeHost(h_batch));
  } else {
    free(h_batch);
  }
  CUDA_CHECK(cudaFreeHost(h_snapshot));
  CUDA_CHECK(cudaFreeHost(h_loss));
  CUDA_CHECK(cudaFree(d_params));
  CUDA_CHECK(cudaFree(act));
  backbone.Free();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv);
  if (flags.help()) {
    printf(
        "usage: mixed [--fixed] [--samples N] [--batch N] [--layers N] [--batch-mb MB]\n"
        "             [--every N] [--model-mb MB] [--dispatch-us US] [--iters N] [--dir DIR]\n"
        "  bad: pageable copies, small batches, synchronous checkpoints; --fixed: all fixed\n");
    return 0;
  }
  Options o;
  o.fixed = flags.Has("fixed");
  o.samples = flags.Int("samples", o.samples);
  o.batch = static_cast<int>(flags.Int("batch", o.batch));
  o.layers = static_cast<int>(flags.Int("layers", o.layers));
  o.batch_mb = flags.Double("batch-mb", o.batch_mb);
  o.every = static_cast<int>(flags.Int("every", o.every));
  o.model_mb = flags.Double("model-mb", o.model_mb);
  o.dispatch_us = flags.Double("dispatch-us", o.dispatch_us);
  o.iters = static_cast<int>(flags.Int("iters", o.iters));
  o.dir = flags.Str("dir", "checkpoints");
  EXAMPLE_CHECK(o.samples >= o.batch * kFixedBatchFactor && o.batch > 0 && o.layers > 0 &&
                    o.batch_mb > 0 && o.every > 0 && o.model_mb > 0,
                "bad sizes");
  return train(o);
}
