// Root cause: synchronous model checkpointing (Gao et al. ICSE'24: 16.4% of low-utilization
// issues). Every --every steps the training thread copies the parameters to the host and writes
// them to checkpoints/model.pt with fwrite + fsync (what torch.save to a file does, plus
// the fsync a careful job adds): the GPU waits for the disk.
//
// Fix (--fixed): the training thread only copies the parameters into a host snapshot (a fast
// device-to-host copy into pinned memory); a background writer thread saves the snapshot while
// training continues (torch.distributed.checkpoint.async_save does the same).
//
//   checkpoint [--fixed] [--steps 400] [--every 70] [--model-mb 64] [--act-mb 216]
//              [--layers 2] [--iters 512] [--dir checkpoints]
#include <sys/stat.h>

#include <optional>

#include "checkpoint_io.h"

using example::AsyncCheckpointWriter;
using example::CheckpointPath;
using example::Flags;
using example::Model;
using example::save_checkpoint_sync;

namespace {

struct Options {
  bool fixed = false;
  int steps = 400;
  int every = 70;
  double model_mb = 64;
  double act_mb = 216;
  int layers = 2;
  int iters = 512;
  std::string dir = "checkpoints";
};

__attribute__((noinline)) void train_step(const Model& model, cudaStream_t stream,
                                          const float* d_params, size_t param_floats, int layers,
                                          int step) {
  for (int l = 0; l < layers; ++l) model.Layer(stream, d_params, param_floats, step);
}

int train(const Options& o) {
  EXAMPLE_CHECK(mkdir(o.dir.c_str(), 0755) == 0 || errno == EEXIST, "mkdir %s: %s", o.dir.c_str(),
                strerror(errno));
  size_t param_bytes =
      static_cast<size_t>(o.model_mb * 1024 * 1024) / sizeof(float) * sizeof(float);
  size_t param_floats = param_bytes / sizeof(float);
  Model model;
  model.Allocate(o.act_mb, o.iters);
  float* d_params = nullptr;
  CUDA_CHECK(cudaMalloc(&d_params, param_bytes));
  CUDA_CHECK(cudaMemset(d_params, 0, param_bytes));
  void* h_snapshot = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_snapshot, param_bytes));
  // Legacy default stream: the checkpoint's cudaMemcpy waits for the step's kernels, as
  // torch.save of CUDA tensors does.
  cudaStream_t stream = 0;

  double t0 = example::NowSeconds();
  int saved = 0;
  {
    std::optional<AsyncCheckpointWriter> writer;
    if (o.fixed) writer.emplace(h_snapshot, param_bytes);
    for (int step = 1; step <= o.steps; ++step) {
      train_step(model, stream, d_params, param_floats, o.layers, step);
      if (step % o.every == 0) {
        std::string path = CheckpointPath(o.dir);
        if (o.fixed) {
          writer->save_checkpoint_async(d_params, path, step);
        } else {
          save_checkpoint_sync(d_params, h_snapshot, param_bytes, path, step);
        }
        ++saved;
      }
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    if (writer) writer->Drain();
  }
  double seconds = example::NowSeconds() - t0;
  printf("%d checkpoints of %.1f MB in %s\n", saved, static_cast<double>(param_bytes) / 1048576.0,
         o.dir.c_str());
  example::PrintSummary("checkpoint", o.fixed, o.steps, seconds);
  CUDA_CHECK(cudaFreeHost(h_snapshot));
  CUDA_CHECK(cudaFree(d_params));
  model.Free();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv);
  if (flags.help()) {
    printf(
        "usage: checkpoint [--fixed] [--steps N] [--every N] [--model-mb MB] [--act-mb MB]\n"
        "                  [--layers N] [--iters N] [--dir DIR]\n"
        "  bad: checkpoint written (fwrite+fsync) on the training thread; --fixed: written by a\n"
        "  background thread from a host snapshot\n");
    return 0;
  }
  Options o;
  o.fixed = flags.Has("fixed");
  o.steps = static_cast<int>(flags.Int("steps", o.steps));
  o.every = static_cast<int>(flags.Int("every", o.every));
  o.model_mb = flags.Double("model-mb", o.model_mb);
  o.act_mb = flags.Double("act-mb", o.act_mb);
  o.layers = static_cast<int>(flags.Int("layers", o.layers));
  o.iters = static_cast<int>(flags.Int("iters", o.iters));
  o.dir = flags.Str("dir", "checkpoints");
  EXAMPLE_CHECK(o.steps > 0 && o.every > 0 && o.model_mb > 0 && o.layers > 0, "bad sizes");
  return train(o);
}
