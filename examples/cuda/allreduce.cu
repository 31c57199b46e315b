// Root cause: data exchange between ranks (Gao et al. ICSE'24: communication, 7.1% of issues).
// Data-parallel training on 2-4 ranks, one process per GPU as torchrun starts them. Each step
// runs the forward and backward kernels, then all-reduces the whole gradient on the compute
// stream before the optimizer: the GPU computes nothing while the gradients cross the network.
// With --slow-rank R --delay-ms D rank R sleeps D ms more per step (a stand-in for a slow batch;
// the report names a sleep as an idle wait), and every other rank waits for it inside the
// all-reduce (a straggler). With --checkpoint-rank R --every N
// rank R saves a synchronous checkpoint (copy to the host, write, fsync: what torch.save on the
// training thread does) every N steps, and the other ranks wait for it in the next all-reduce;
// --async-checkpoint is that job's fix: rank R only copies the snapshot, a background thread
// writes it. With --crash-rank R --crash-step S rank R crashes at step S (SIGSEGV: a corrupt
// batch read through a null pointer); the launcher notices a failed rank --monitor-ms later (as
// torchrun's agent polls its workers) and only then stops the others, which meanwhile wait for
// the dead rank in the all-reduce.
//
// Fix (--fixed): gradients in buckets, each all-reduced on a communication stream as soon as its
// backward kernel is done, so communication overlaps the rest of the backward pass (DDP's
// gradient bucketing), and the optimizer updates bucket by bucket as each reduction completes,
// so the last bucket's reduction overlaps the other buckets' updates.
//
// Started without RANK in the environment, the program is its own launcher: it starts --ranks
// copies of itself with RANK, LOCAL_RANK, WORLD_SIZE and IDLESCOPE_EXAMPLE_NCCL_ID (the file
// through which rank 0 shares its ncclUniqueId) set, and waits for them.
//
// Sizes: the defaults suit simgpu with SIMGPU_NCCL_GBPS=0.5 (a slow network); on GPUs joined by
// NVLink use a gradient of a few hundred MB (--grad-mb 512) to see the same shape.
//
//   allreduce [--fixed] [--ranks 2] [--steps 200] [--grad-mb 1] [--act-mb 108] [--forward 2]
//             [--backward 8] [--iters 512] [--slow-rank R --delay-ms D]
//             [--checkpoint-rank R --every N [--model-mb 64] [--dir checkpoints]
//             [--async-checkpoint]] [--crash-rank R --crash-step S] [--monitor-ms M]
#include <limits.h>
#include <nccl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "checkpoint_io.h"
#include "train_common.h"

using example::Flags;
using example::Model;

#define NCCL_CHECK(call)                                                   \
  do {                                                                     \
    ncclResult_t res_ = (call);                                            \
    if (res_ != ncclSuccess) {                                             \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
              ncclGetErrorString(res_));                                   \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

namespace {

struct Options {
  bool fixed = false;
  int ranks = 2;
  int steps = 200;
  double grad_mb = 8;
  double act_mb = 108;
  int forward = 2;
  int backward = 8;
  int iters = 512;
  int slow_rank = -1;
  double delay_ms = 0;
  int checkpoint_rank = -1;
  int every = 20;
  double model_mb = 64;
  std::string dir = "checkpoints";
  bool async_checkpoint = false;
  int crash_rank = -1;
  int crash_step = 0;
  int monitor_ms = 0;
};

int EnvInt(const char* name, int def) {
  const char* v = getenv(name);
  return v == nullptr || *v == '\0' ? def : atoi(v);
}

// --- launcher (torchrun's role) ---

int launch_ranks(const Options& o, char** argv) {
  char dir_template[] = "/tmp/idlescope-allreduce-XXXXXX";
  char* dir = mkdtemp(dir_template);
  EXAMPLE_CHECK(dir != nullptr, "mkdtemp: %s", strerror(errno));
  std::string id_file = std::string(dir) + "/nccl-unique-id";
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  EXAMPLE_CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
  exe[n] = '\0';
  fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; ++r) {
    pid_t pid = fork();
    EXAMPLE_CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
      std::string rank = std::to_string(r), world = std::to_string(o.ranks);
      setenv("RANK", rank.c_str(), 1);
      setenv("LOCAL_RANK", rank.c_str(), 1);
      setenv("WORLD_SIZE", world.c_str(), 1);
      setenv("IDLESCOPE_EXAMPLE_NCCL_ID", id_file.c_str(), 1);
      execv(exe, argv);
      fprintf(stderr, "allreduce: exec %s: %s\n", exe, strerror(errno));
      _exit(127);
    }
    pids.push_back(pid);
  }
  // Like torchrun: when one rank fails, the others are stopped instead of waiting for it in a
  // collective until NCCL times out.
  int failed = 0;
  size_t running = pids.size();
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      EXAMPLE_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
      continue;
    }
    for (pid_t& p : pids) {
      if (p != pid) continue;
      p = -1;
      --running;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (failed++ == 0) {
          if (o.monitor_ms > 0) usleep(static_cast<useconds_t>(o.monitor_ms) * 1000);
          for (pid_t other : pids) {
            if (other > 0) kill(other, SIGTERM);
          }
        }
      }
    }
  }
  unlink(id_file.c_str());
  rmdir(dir);
  if (failed > 0) fprintf(stderr, "allreduce: %d rank(s) failed\n", failed);
  return failed > 0 ? 1 : 0;
}

// --- one rank ---

// Rank 0 creates the id and publishes it atomically (write + rename); the others wait for it.
ncclUniqueId share_unique_id(int rank, const std::string& path) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    std::string tmp = path + ".tmp";
    FILE* f = fopen(tmp.c_str(), "wb");
    EXAMPLE_CHECK(f != nullptr, "create %s: %s", tmp.c_str(), strerror(errno));
    EXAMPLE_CHECK(fwrite(&id, sizeof id, 1, f) == 1 && fclose(f) == 0, "write %s", tmp.c_str());
    EXAMPLE_CHECK(rename(tmp.c_str(), path.c_str()) == 0, "rename: %s", strerror(errno));
    return id;
  }
  double deadline = example::NowSeconds() + 60;
  for (;;) {
    FILE* f = fopen(path.c_str(), "rb");
    if (f != nullptr) {
      size_t got = fread(&id, sizeof id, 1, f);
      fclose(f);
      if (got == 1) return id;
    }
    EXAMPLE_CHECK(example::NowSeconds() < deadline, "rank %d: no NCCL id in %s after 60 s", rank,
                  path.c_str());
    usleep(2000);
  }
}

// Loads this rank's batch; on the slow rank it takes --delay-ms longer (a slow disk, a busy
// node): the other ranks wait for it in the next all-reduce.
__attribute__((noinline)) void load_batch(int rank, const Options& o) {
  if (rank == o.slow_rank && o.delay_ms > 0) usleep(static_cast<useconds_t>(o.delay_ms * 1e3));
}

// --crash-rank's batch at --crash-step: its header is read through a null pointer (SIGSEGV).
__attribute__((noinline)) float decode_batch(const float* volatile header) { return header[0]; }

// The bad twin: the whole gradient, all-reduced on the compute stream after the backward pass.
__attribute__((noinline)) void allreduce_gradients_blocking(float* grads, size_t floats,
                                                            ncclComm_t comm, cudaStream_t stream) {
  NCCL_CHECK(ncclAllReduce(grads, grads, floats, ncclFloat, ncclSum, comm, stream));
}

// The fixed twin: bucket b is all-reduced on the communication stream once the backward kernel
// that produced it is done.
__attribute__((noinline)) void allreduce_bucket_overlapped(float* bucket, size_t floats,
                                                           ncclComm_t comm,
                                                           cudaStream_t comm_stream,
                                                           cudaEvent_t grads_ready) {
  CUDA_CHECK(cudaStreamWaitEvent(comm_stream, grads_ready, 0));
  NCCL_CHECK(ncclAllReduce(bucket, bucket, floats, ncclFloat, ncclSum, comm, comm_stream));
}

// The optimizer's update of one gradient bucket: 1/buckets of a layer's work.
__attribute__((noinline)) void optimizer_step_bucket(const Model& model, int bucket, int buckets,
                                                     const float* grads, size_t bucket_floats,
                                                     cudaStream_t stream, int step) {
  size_t slice = model.elements / static_cast<size_t>(buckets);
  example::layer_kernel<<<example::BlocksFor(slice), example::kThreadsPerBlock, 0, stream>>>(
      model.act + static_cast<size_t>(bucket) * slice, slice, grads, bucket_floats, model.iters,
      step);
  CUDA_CHECK(cudaGetLastError());
}

int run_rank(const Options& o) {
  int rank = EnvInt("RANK", 0), world = EnvInt("WORLD_SIZE", 1);
  int local_rank = EnvInt("LOCAL_RANK", rank);
  const char* id_path = getenv("IDLESCOPE_EXAMPLE_NCCL_ID");
  EXAMPLE_CHECK(id_path != nullptr, "IDLESCOPE_EXAMPLE_NCCL_ID is not set");
  int devices = 0;
  CUDA_CHECK(cudaGetDeviceCount(&devices));
  EXAMPLE_CHECK(local_rank < devices, "rank %d needs its own GPU, %d visible", local_rank, devices);
  CUDA_CHECK(cudaSetDevice(local_rank));
  ncclUniqueId id = share_unique_id(rank, id_path);
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, world, id, rank));

  Model model;
  model.Allocate(o.act_mb, o.iters);
  int buckets = o.backward;
  size_t bucket_floats = static_cast<size_t>(o.grad_mb * 1024 * 1024 / sizeof(float)) / buckets;
  if (bucket_floats == 0) bucket_floats = 1;
  size_t grad_floats = bucket_floats * buckets;
  float* grads = nullptr;
  CUDA_CHECK(cudaMalloc(&grads, grad_floats * sizeof(float)));
  CUDA_CHECK(cudaMemset(grads, 0, grad_floats * sizeof(float)));
  cudaStream_t compute, comm_stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
  std::vector<cudaEvent_t> ready(buckets);
  for (cudaEvent_t& e : ready) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  std::vector<cudaEvent_t> reduced(buckets);
  for (cudaEvent_t& e : reduced) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  float* h_loss = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_loss, sizeof(float)));
  // The checkpointing rank's parameters, their host snapshot and (fixed) background writer.
  const bool checkpoints = rank == o.checkpoint_rank;
  const size_t param_bytes = static_cast<size_t>(o.model_mb * 1024 * 1024);
  float* d_params = nullptr;
  void* h_snapshot = nullptr;
  std::optional<example::AsyncCheckpointWriter> writer;
  std::string checkpoint_path;
  if (checkpoints) {
    CUDA_CHECK(cudaMalloc(&d_params, param_bytes));
    CUDA_CHECK(cudaMemset(d_params, 0, param_bytes));
    CUDA_CHECK(cudaMallocHost(&h_snapshot, param_bytes));
    mkdir(o.dir.c_str(), 0755);
    checkpoint_path = example::CheckpointPath(o.dir);
    if (o.async_checkpoint) writer.emplace(h_snapshot, param_bytes);
  }

  CUDA_CHECK(cudaStreamSynchronize(compute));
  double t0 = example::NowSeconds();
  for (int step = 0; step < o.steps; ++step) {
    load_batch(rank, o);
    if (rank == o.crash_rank && step == o.crash_step) printf("%g\n", decode_batch(nullptr));
    for (int l = 0; l < o.forward; ++l) model.Layer(compute, grads, grad_floats, step);
    for (int b = 0; b < buckets; ++b) {
      model.Layer(compute, nullptr, 0, step);  // backward of one layer: its gradients
      if (o.fixed) {
        CUDA_CHECK(cudaEventRecord(ready[b], compute));
        allreduce_bucket_overlapped(grads + b * bucket_floats, bucket_floats, comm, comm_stream,
                                    ready[b]);
        CUDA_CHECK(cudaEventRecord(reduced[b], comm_stream));
      }
    }
    if (!o.fixed) allreduce_gradients_blocking(grads, grad_floats, comm, compute);
    // The optimizer step reads the reduced gradients, bucket by bucket.
    for (int b = 0; b < buckets; ++b) {
      if (o.fixed) CUDA_CHECK(cudaStreamWaitEvent(compute, reduced[b], 0));
      optimizer_step_bucket(model, b, buckets, grads + b * bucket_floats, bucket_floats, compute,
                            step);
    }
    // The checkpointing rank saves every --every steps; the others meet it at the next
    // all-reduce.
    if (checkpoints && (step + 1) % o.every == 0) {
      CUDA_CHECK(cudaStreamSynchronize(compute));
      if (writer) {
        writer->save_checkpoint_async(d_params, checkpoint_path, step + 1);
      } else {
        example::save_checkpoint_sync(d_params, h_snapshot, param_bytes, checkpoint_path, step + 1);
      }
    }
    // The loss is read back every 50 steps.
    if ((step + 1) % 50 == 0) {
      CUDA_CHECK(
          cudaMemcpyAsync(h_loss, model.act, sizeof(float), cudaMemcpyDeviceToHost, compute));
      CUDA_CHECK(cudaStreamSynchronize(compute));
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(compute));
  CUDA_CHECK(cudaStreamSynchronize(comm_stream));
  if (writer) writer->Drain();
  double seconds = example::NowSeconds() - t0;
  if (rank == 0) {
    example::PrintSummary("allreduce", o.fixed || o.async_checkpoint, o.steps, seconds);
  }
  if (rank == o.slow_rank) printf("rank %d was slow by %.1f ms per step\n", rank, o.delay_ms);

  NCCL_CHECK(ncclCommDestroy(comm));
  for (cudaEvent_t e : ready) CUDA_CHECK(cudaEventDestroy(e));
  for (cudaEvent_t e : reduced) CUDA_CHECK(cudaEventDestroy(e));
  CUDA_CHECK(cudaStreamDestroy(compute));
  CUDA_CHECK(cudaStreamDestroy(comm_stream));
  CUDA_CHECK(cudaFreeHost(h_loss));
  writer.reset();
  if (checkpoints) {
    CUDA_CHECK(cudaFreeHost(h_snapshot));
    CUDA_CHECK(cudaFree(d_params));
  }
  CUDA_CHECK(cudaFree(grads));
  model.Free();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv);
  if (flags.help()) {
    printf(
        "usage: allreduce [--fixed] [--ranks N] [--steps N] [--grad-mb MB] [--act-mb MB]\n"
        "                 [--forward N] [--backward N] [--iters N] [--slow-rank R --delay-ms D]\n"
        "                 [--checkpoint-rank R --every N [--model-mb MB] [--dir D]\n"
        "                 [--async-checkpoint]] [--crash-rank R --crash-step S]\n"
        "                 [--monitor-ms M]\n"
        "  bad: one all-reduce of all gradients after the backward pass; --fixed: bucketed\n"
        "  all-reduces overlapped with the backward pass. Without RANK set, starts --ranks\n"
        "  processes (one GPU each).\n");
    return 0;
  }
  Options o;
  o.fixed = flags.Has("fixed");
  o.ranks = static_cast<int>(flags.Int("ranks", o.ranks));
  o.steps = static_cast<int>(flags.Int("steps", o.steps));
  o.grad_mb = flags.Double("grad-mb", o.grad_mb);
  o.act_mb = flags.Double("act-mb", o.act_mb);
  o.forward = static_cast<int>(flags.Int("forward", o.forward));
  o.backward = static_cast<int>(flags.Int("backward", o.backward));
  o.iters = static_cast<int>(flags.Int("iters", o.iters));
  o.slow_rank = static_cast<int>(flags.Int("slow-rank", o.slow_rank));
  o.delay_ms = flags.Double("delay-ms", o.delay_ms);
  o.checkpoint_rank = static_cast<int>(flags.Int("checkpoint-rank", o.checkpoint_rank));
  o.every = static_cast<int>(flags.Int("every", o.every));
  o.model_mb = flags.Double("model-mb", o.model_mb);
  o.dir = flags.Str("dir", o.dir.c_str());
  o.async_checkpoint = flags.Has("async-checkpoint");
  o.crash_rank = static_cast<int>(flags.Int("crash-rank", o.crash_rank));
  o.crash_step = static_cast<int>(flags.Int("crash-step", o.crash_step));
  o.monitor_ms = static_cast<int>(flags.Int("monitor-ms", o.monitor_ms));
  EXAMPLE_CHECK(o.ranks >= 1 && o.ranks <= 64 && o.steps > 0 && o.grad_mb > 0 && o.backward > 0 &&
                    o.every > 0 && o.model_mb > 0,
                "bad sizes");
  if (getenv("RANK") == nullptr) return launch_ranks(o, argv);
  return run_rank(o);
}
