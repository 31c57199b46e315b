// Root cause: data loading on the critical path (Gao et al. ICSE'24, data dimension: data
// preprocessing / remote data reading). A loader worker process (like a PyTorch DataLoader
// worker) fetches each batch's raw samples (storage latency) and decodes and augments them on the
// CPU into shared memory, then sends the batch index through a pipe, as DataLoader workers pass
// tensors in shared memory through a queue. The training thread asks for the next batch only when
// it needs it and waits in read() while the worker loads it: the GPU idles for the whole loading
// time of every batch.
//
// Fix (--fixed): a producer thread prefetches batches (asks the worker for batch i+1 while the
// GPU runs step i) into a small queue of pinned buffers, so preprocessing overlaps compute
// (DataLoader's prefetch_factor), and the next batch is copied to the device during the step.
//
//   dataloader [--fixed] [--steps 250] [--batch-mb 0.25] [--load-ms 2] [--act-mb 216]
//              [--layers 4] [--iters 512] [--prefetch 2]
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "train_common.h"

using example::Flags;
using example::Model;

namespace {

struct Options {
  bool fixed = false;
  int steps = 250;
  double batch_mb = 0.25;
  double load_ms = 2;
  double act_mb = 216;
  int layers = 4;
  int iters = 512;
  int prefetch = 2;
};

void WriteAll(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    EXAMPLE_CHECK(n > 0, "pipe write: %s", strerror(errno));
    p += n;
    len -= static_cast<size_t>(n);
  }
}

// False on end of file before the first byte.
bool ReadAll(int fd, void* data, size_t len) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, p + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    EXAMPLE_CHECK(n >= 0, "pipe read: %s", strerror(errno));
    if (n == 0) {
      EXAMPLE_CHECK(got == 0, "pipe closed mid-message");
      return false;
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

// The worker process loads batch i on request (no CUDA here, as in a DataLoader worker): the raw
// samples arrive after the storage latency (a sleep, so that the example's timing does not hinge
// on a free CPU core), then one decode/augment pass over the batch runs on the CPU.
__attribute__((noinline)) void fetch_raw_samples(double latency_ms) {
  uint64_t ns = static_cast<uint64_t>(latency_ms * 1e6);
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

__attribute__((noinline)) void decode_and_augment(float* batch, size_t floats, int index) {
  uint32_t x = 2654435761u * static_cast<uint32_t>(index + 1);
  for (size_t i = 0; i < floats; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    batch[i] = static_cast<float>(x & 0xffff) * (1.0f / 65536.0f);
  }
}

// Batch slots in memory shared with the worker (mapped before fork). The training process
// registers them with CUDA (pinned), as DataLoader's pin-memory thread provides pinned batches.
struct SharedBatches {
  float* base = nullptr;
  size_t floats = 0;  // per slot
  int slots = 0;
  float* Slot(int index) const { return base + static_cast<size_t>(index % slots) * floats; }
  size_t bytes() const { return static_cast<size_t>(slots) * floats * sizeof(float); }
};

[[noreturn]] void loader_worker_main(int request_fd, int ready_fd, const SharedBatches& batches,
                                     double load_ms) {
  int32_t index = 0;
  while (ReadAll(request_fd, &index, sizeof index)) {
    fetch_raw_samples(load_ms);
    decode_and_augment(batches.Slot(index), batches.floats, index);
    WriteAll(ready_fd, &index, sizeof index);
  }
  _exit(0);
}

struct LoaderWorker {
  pid_t pid = -1;
  int request_fd = -1;  // training process -> worker: batch indices to decode
  int ready_fd = -1;    // worker -> training process: indices of decoded batches
  SharedBatches batches;

  void Start(size_t floats, int slots, double load_ms) {
    batches.floats = floats;
    batches.slots = slots;
    void* p =
        mmap(nullptr, batches.bytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    EXAMPLE_CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
    batches.base = static_cast<float*>(p);
    int req[2], ready[2];
    EXAMPLE_CHECK(pipe(req) == 0 && pipe(ready) == 0, "pipe: %s", strerror(errno));
    fflush(stdout);
    pid = fork();
    EXAMPLE_CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
      close(req[1]);
      close(ready[0]);
      loader_worker_main(req[0], ready[1], batches, load_ms);
    }
    close(req[0]);
    close(ready[1]);
    request_fd = req[1];
    ready_fd = ready[0];
  }
  void Stop() {
    close(request_fd);
    close(ready_fd);
    int status = 0;
    EXAMPLE_CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
    EXAMPLE_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "loader worker failed");
    munmap(batches.base, batches.bytes());
  }
};

// The bad twin: request batch i and wait for the worker to decode it; returns its slot.
__attribute__((noinline)) const float* load_batch_sync(const LoaderWorker& worker, int32_t index) {
  WriteAll(worker.request_fd, &index, sizeof index);
  int32_t done = -1;
  EXAMPLE_CHECK(ReadAll(worker.ready_fd, &done, sizeof done), "loader worker exited");
  EXAMPLE_CHECK(done == index, "loader worker sent batch %d, expected %d", done, index);
  return worker.batches.Slot(index);
}

// The fixed twin: a producer thread keeps up to `depth` decoded batches ready ahead of the
// training thread (slots = depth + 1: one more for the batch being copied).
class PrefetchQueue {
 public:
  PrefetchQueue(const LoaderWorker& worker, int depth, int batches)
      : worker_(worker), depth_(depth), thread_([this, batches] { prefetch_loop(batches); }) {}
  ~PrefetchQueue() { thread_.join(); }
  // Returns the next decoded batch; Release() it once its copy to the device has completed.
  const float* Next() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [this] { return !ready_.empty(); });
    const float* b = ready_.front();
    ready_.pop_front();
    return b;
  }
  void Release() {
    std::lock_guard<std::mutex> lk(mu_);
    --in_use_;
    cv_.notify_all();
  }

 private:
  void prefetch_loop(int batches) {
    for (int32_t i = 0; i < batches; ++i) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [this] { return in_use_ <= depth_; });
        ++in_use_;
      }
      const float* b = load_batch_sync(worker_, i);
      std::lock_guard<std::mutex> lk(mu_);
      ready_.push_back(b);
      cv_.notify_all();
    }
  }

  const LoaderWorker& worker_;
  int depth_;
  int in_use_ = 0;  // slots decoded or being decoded, not yet released
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<const float*> ready_;
  std::thread thread_;  // last: starts after the members it uses
};

__attribute__((noinline)) void forward_backward(const Model& model, cudaStream_t stream,
                                                const float* d_batch, size_t floats, int layers,
                                                int step) {
  for (int l = 0; l < layers; ++l) model.Layer(stream, d_batch, floats, step);
}

// The fixed twin's copy of a prefetched batch to the device, on the copy stream.
__attribute__((noinline)) void prefetch_to_device(float* d_batch, const float* h_batch,
                                                  size_t bytes, cudaStream_t copy_stream,
                                                  cudaEvent_t copied) {
  CUDA_CHECK(cudaMemcpyAsync(d_batch, h_batch, bytes, cudaMemcpyHostToDevice, copy_stream));
  CUDA_CHECK(cudaEventRecord(copied, copy_stream));
}

// loss.item() at the end of every step: the host waits for the step's kernels.
__attribute__((noinline)) float read_loss(const Model& model, float* h_loss, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(h_loss, model.act, sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return *h_loss;
}

int train(const Options& o, LoaderWorker& worker) {
  size_t floats = worker.batches.floats;
  size_t bytes = floats * sizeof(float);
  CUDA_CHECK(
      cudaHostRegister(worker.batches.base, worker.batches.bytes(), cudaHostRegisterDefault));
  Model model;
  model.Allocate(o.act_mb, o.iters);
  float* d_batch = nullptr;
  CUDA_CHECK(cudaMalloc(&d_batch, bytes));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* h_loss = nullptr;
  CUDA_CHECK(cudaMallocHost(&h_loss, sizeof(float)));

  float loss = 0;
  double t0 = example::NowSeconds();
  if (o.fixed) {
    // Batches come decoded from the producer thread and are copied to the device on a second
    // stream during the previous step, into alternating device buffers.
    PrefetchQueue queue(worker, o.prefetch, o.steps);
    float* d_next = nullptr;
    CUDA_CHECK(cudaMalloc(&d_next, bytes));
    float* d_buffers[2] = {d_batch, d_next};
    cudaStream_t copy_stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking));
    cudaEvent_t copied[2];
    for (cudaEvent_t& e : copied) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    prefetch_to_device(d_buffers[0], queue.Next(), bytes, copy_stream, copied[0]);
    for (int step = 0; step < o.steps; ++step) {
      int cur = step % 2;
      CUDA_CHECK(cudaStreamWaitEvent(stream, copied[cur], 0));
      forward_backward(model, stream, d_buffers[cur], floats, o.layers, step);
      // d_buffers[1 - cur] was last read by step-1, which the previous read_loss waited for.
      if (step + 1 < o.steps) {
        prefetch_to_device(d_buffers[1 - cur], queue.Next(), bytes, copy_stream, copied[1 - cur]);
      }
      loss = read_loss(model, h_loss, stream);
      queue.Release();  // this step's batch: its copy completed before the step's kernels ran
    }
    CUDA_CHECK(cudaStreamSynchronize(copy_stream));
    for (cudaEvent_t e : copied) CUDA_CHECK(cudaEventDestroy(e));
    CUDA_CHECK(cudaStreamDestroy(copy_stream));
    CUDA_CHECK(cudaFree(d_next));
  } else {
    for (int step = 0; step < o.steps; ++step) {
      const float* h_batch = load_batch_sync(worker, step);
      CUDA_CHECK(cudaMemcpyAsync(d_batch, h_batch, bytes, cudaMemcpyHostToDevice, stream));
      forward_backward(model, stream, d_batch, floats, o.layers, step);
      loss = read_loss(model, h_loss, stream);
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  double seconds = example::NowSeconds() - t0;
  example::PrintSummary("dataloader", o.fixed, o.steps, seconds);
  printf("loss %.4f\n", loss);
  CUDA_CHECK(cudaFreeHost(h_loss));
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(d_batch));
  CUDA_CHECK(cudaHostUnregister(worker.batches.base));
  model.Free();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv);
  if (flags.help()) {
    printf(
        "usage: dataloader [--fixed] [--steps N] [--batch-mb MB] [--load-ms MS] [--act-mb MB]\n"
        "                  [--layers N] [--iters N] [--prefetch N]\n"
        "  bad: the training thread waits for the loader worker to decode each batch; --fixed:\n"
        "  a producer thread prefetches batches while the GPU computes\n");
    return 0;
  }
  Options o;
  o.fixed = flags.Has("fixed");
  o.steps = static_cast<int>(flags.Int("steps", o.steps));
  o.batch_mb = flags.Double("batch-mb", o.batch_mb);
  o.load_ms = flags.Double("load-ms", o.load_ms);
  o.act_mb = flags.Double("act-mb", o.act_mb);
  o.layers = static_cast<int>(flags.Int("layers", o.layers));
  o.iters = static_cast<int>(flags.Int("iters", o.iters));
  o.prefetch = static_cast<int>(flags.Int("prefetch", o.prefetch));
  EXAMPLE_CHECK(o.steps > 0 && o.batch_mb > 0 && o.layers > 0 && o.prefetch > 0, "bad sizes");
  size_t floats = static_cast<size_t>(o.batch_mb * 1024 * 1024 / sizeof(float));
  // The worker starts before any CUDA call: a CUDA context does not survive fork().
  LoaderWorker worker;
  worker.Start(floats, o.prefetch + 1, o.load_ms);
  int rc = train(o, worker);
  worker.Stop();
  return rc;
}
