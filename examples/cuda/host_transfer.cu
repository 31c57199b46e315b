// Root cause: inefficient host-GPU transfer (Gao et al. ICSE'24: 27.9% of low-utilization
// issues). Each step copies a batch host-to-device from malloc'd (pageable) memory: the driver
// stages pageable copies through its own pinned buffer, so cudaMemcpyAsync blocks the host for
// the whole copy and the GPU computes nothing meanwhile.
//
// Fix (--fixed): batches in pinned memory (cudaMallocHost, what DataLoader(pin_memory=True)
// gives), copied on a separate stream into a double buffer so the copy of batch i+1 overlaps the
// compute of step i.
//
//   host_transfer [--fixed] [--steps 300] [--batch-mb 16] [--act-mb 216] [--layers 2]
//                 [--iters 512]
#include "train_common.h"

using example::Flags;
using example::Model;

namespace {

struct Options {
  bool fixed = false;
  int steps = 300;
  double batch_mb = 16;
  double act_mb = 216;
  int layers = 2;
  int iters = 512;
  int log_every = 50;
};

constexpr int kHostBatches = 2;  // the "dataset": batches rotated through

// Copies batch `step` from pageable memory: blocks this thread for the whole transfer.
__attribute__((noinline)) void load_batch_pageable(float* d_batch, float* const* h_batches,
                                                   size_t bytes, int step, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(d_batch, h_batches[step % kHostBatches], bytes, cudaMemcpyHostToDevice,
                             stream));
}

// Queues the copy of batch `step` from pinned memory on the copy stream; returns at once.
__attribute__((noinline)) void load_batch_pinned(float* d_batch, float* const* h_batches,
                                                 size_t bytes, int step, cudaStream_t copy_stream) {
  CUDA_CHECK(cudaMemcpyAsync(d_batch, h_batches[step % kHostBatches], bytes, cudaMemcpyHostToDevice,
                             copy_stream));
}

__attribute__((noinline)) void forward_backward(const Model& model, cudaStream_t stream,
                                                const float* d_batch, size_t batch_floats,
                                                int layers, int step) {
  for (int l = 0; l < layers; ++l) model.Layer(stream, d_batch, batch_floats, step);
}

// Reads the "loss" back, as a training loop logs it every few steps.
__attribute__((noinline)) float log_loss(const Model& model, float* h_loss, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(h_loss, model.act, sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return *h_loss;
}

void FillBatch(float* batch, size_t floats, int seed) {
  for (size_t i = 0; i < floats; ++i) batch[i] = static_cast<float>((i * 31 + seed) % 1000) * 1e-3f;
}

int train(const Options& o) {
  size_t batch_floats = static_cast<size_t>(o.batch_mb * 1024 * 1024 / sizeof(float));
  size_t batch_bytes = batch_floats * sizeof(float);
  Model model;
  model.Allocate(o.act_mb, o.iters);

  float* h_batches[kHostBatches];
  for (int b = 0; b < kHostBatches; ++b) {
    if (o.fixed) {
      CUDA_CHECK(cudaMallocHost(&h_batches[b], batch_bytes));
    } else {
      h_batches[b] = static_cast<float*>(malloc(batch_bytes));
      EXAMPLE_CHECK(h_batches[b] != nullptr, "out of host memory");
    }
    FillBatch(h_batches[b], batch_floats, b);
  }
  float* h_loss = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_loss, sizeof(float)));
  float* d_batch[2];
  for (float*& d : d_batch) CUDA_CHECK(cudaMalloc(&d, batch_bytes));
  cudaStream_t compute, copy;
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  cudaEvent_t copied[2], consumed[2];
  for (int i = 0; i < 2; ++i) {
    CUDA_CHECK(cudaEventCreateWithFlags(&copied[i], cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&consumed[i], cudaEventDisableTiming));
  }

  double t0 = example::NowSeconds();
  float loss = 0;
  if (o.fixed) load_batch_pinned(d_batch[0], h_batches, batch_bytes, 0, copy);
  if (o.fixed) CUDA_CHECK(cudaEventRecord(copied[0], copy));
  for (int step = 0; step < o.steps; ++step) {
    int cur = step % 2;
    if (o.fixed) {
      CUDA_CHECK(cudaStreamWaitEvent(compute, copied[cur], 0));
      forward_backward(model, compute, d_batch[cur], batch_floats, o.layers, step);
      CUDA_CHECK(cudaEventRecord(consumed[cur], compute));
      if (step + 1 < o.steps) {
        int next = (step + 1) % 2;
        // d_batch[next] was read by step-1: wait for that before overwriting it.
        CUDA_CHECK(cudaStreamWaitEvent(copy, consumed[next], 0));
        load_batch_pinned(d_batch[next], h_batches, batch_bytes, step + 1, copy);
        CUDA_CHECK(cudaEventRecord(copied[next], copy));
      }
    } else {
      load_batch_pageable(d_batch[0], h_batches, batch_bytes, step, compute);
      forward_backward(model, compute, d_batch[0], batch_floats, o.layers, step);
    }
    if ((step + 1) % o.log_every == 0) loss = log_loss(model, h_loss, compute);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  double seconds = example::NowSeconds() - t0;
  printf("loss %.4f\n", loss);
  example::PrintSummary("host_transfer", o.fixed, o.steps, seconds);

  for (int i = 0; i < 2; ++i) {
    CUDA_CHECK(cudaEventDestroy(copied[i]));
    CUDA_CHECK(cudaEventDestroy(consumed[i]));
    CUDA_CHECK(cudaFree(d_batch[i]));
  }
  CUDA_CHECK(cudaStreamDestroy(compute));
  CUDA_CHECK(cudaStreamDestroy(copy));
  for (float* h : h_batches) {
    if (o.fixed) {
      CUDA_CHECK(cudaFreeHost(h));
    } else {
      free(h);
    }
  }
  CUDA_CHECK(cudaFreeHost(h_loss));
  model.Free();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv);
  if (flags.help()) {
    printf(
        "usage: host_transfer [--fixed] [--steps N] [--batch-mb MB] [--act-mb MB] [--layers N] "
        "[--iters N]\n"
        "  bad: batches copied from pageable (malloc) memory; --fixed: pinned memory, copies\n"
        "  overlapped with compute on a second stream\n");
    return 0;
  }
  Options o;
  o.fixed = flags.Has("fixed");
  o.steps = static_cast<int>(flags.Int("steps", o.steps));
  o.batch_mb = flags.Double("batch-mb", o.batch_mb);
  o.act_mb = flags.Double("act-mb", o.act_mb);
  o.layers = static_cast<int>(flags.Int("layers", o.layers));
  o.iters = static_cast<int>(flags.Int("iters", o.iters));
  EXAMPLE_CHECK(o.steps > 0 && o.batch_mb > 0 && o.act_mb > 0 && o.layers > 0, "bad sizes");
  return train(o);
}
