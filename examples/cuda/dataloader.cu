// Root cause: data preprocessing on the critical path (Gao et al. ICSE'24, data dimension). A
// loader worker process (like a PyTorch DataLoader worker) decodes and augments each batch on the
// CPU and sends it through a pipe. The training thread asks for the next batch only when it needs
// it and waits in read() while the worker decodes: the GPU idles for the whole preprocessing time
// of every batch.
//
// Fix (--fixed): a producer thread prefetches batches (asks the worker for batch i+1 while the
// GPU runs step i) into a small queue of pinned buffers, so preprocessing overlaps compute
// (DataLoader's prefetch_factor).
//
//   dataloader [--fixed] [--steps 250] [--batch-mb 1] [--decode-ms 2] [--act-mb 216]
//              [--layers 3] [--iters 512] [--prefetch 2]
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "train_common.h"

using example::Flags;
using example::Model;

namespace {

struct Options {
  bool fixed = false;
  int steps = 250;
  double batch_mb = 1;
  double decode_ms = 2;
  double act_mb = 216;
  int layers = 3;
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

// The worker process: decodes and augments batch i on request (no CUDA here, as in a DataLoader
// worker).
__attribute__((noinline)) void decode_and_augment(float* batch, size_t floats, int index,
                                                  double decode_ms) {
  double end = example::NowSeconds() + decode_ms * 1e-3;
  uint32_t x = 2654435761u * static_cast<uint32_t>(index + 1);
  // Whole passes over the batch until the decode time is spent (at least one pass).
  do {
    for (size_t i = 0; i < floats; ++i) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      batch[i] = static_cast<float>(x & 0xffff) * (1.0f / 65536.0f);
    }
  } while (example::NowSeconds() < end);
}

[[noreturn]] void loader_worker_main(int request_fd, int batch_fd, size_t floats,
                                     double decode_ms) {
  std::vector<float> batch(floats);
  int32_t index = 0;
  while (ReadAll(request_fd, &index, sizeof index)) {
    decode_and_augment(batch.data(), floats, index, decode_ms);
    WriteAll(batch_fd, batch.data(), floats * sizeof(float));
  }
  _exit(0);
}

struct LoaderWorker {
  pid_t pid = -1;
  int request_fd = -1;  // training process -> worker: batch indices
  int batch_fd = -1;    // worker -> training process: decoded batches

  void Start(size_t floats, double decode_ms) {
    int req[2], resp[2];
    EXAMPLE_CHECK(pipe(req) == 0 && pipe(resp) == 0, "pipe: %s", strerror(errno));
    // Room for a whole batch in the pipe, when the kernel allows it (best effort).
    (void)fcntl(resp[1], F_SETPIPE_SZ, 1 << 20);
    fflush(stdout);
    pid = fork();
    EXAMPLE_CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
      close(req[1]);
      close(resp[0]);
      loader_worker_main(req[0], resp[1], floats, decode_ms);
    }
    close(req[0]);
    close(resp[1]);
    request_fd = req[1];
    batch_fd = resp[0];
  }
  void Stop() {
    close(request_fd);
    close(batch_fd);
    int status = 0;
    EXAMPLE_CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
    EXAMPLE_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "loader worker failed");
  }
};

// The bad twin: request batch i and wait for the worker to decode it.
__attribute__((noinline)) void load_batch_sync(const LoaderWorker& worker, float* batch,
                                               size_t floats, int32_t index) {
  WriteAll(worker.request_fd, &index, sizeof index);
  EXAMPLE_CHECK(ReadAll(worker.batch_fd, batch, floats * sizeof(float)), "worker exited");
}

// The fixed twin: a producer thread keeps `depth` decoded batches ready in pinned buffers.
class PrefetchQueue {
 public:
  PrefetchQueue(const LoaderWorker& worker, size_t floats, int depth, int batches)
      : worker_(worker), floats_(floats), buffers_(static_cast<size_t>(depth) + 1) {
    for (float*& b : buffers_) CUDA_CHECK(cudaMallocHost(&b, floats * sizeof(float)));
    for (float* b : buffers_) free_.push_back(b);
    thread_ = std::thread([this, batches] { prefetch_loop(batches); });
  }
  ~PrefetchQueue() {
    thread_.join();
    for (float* b : buffers_) CUDA_CHECK(cudaFreeHost(b));
  }
  // Returns the next decoded batch; Release() it once its copy to the device has completed.
  float* Next() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [this] { return !ready_.empty(); });
    float* b = ready_.front();
    ready_.pop_front();
    return b;
  }
  void Release(float* b) {
    std::lock_guard<std::mutex> lk(mu_);
    free_.push_back(b);
    cv_.notify_all();
  }

 private:
  void prefetch_loop(int batches) {
    for (int32_t i = 0; i < batches; ++i) {
      float* b;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [this] { return !free_.empty(); });
        b = free_.front();
        free_.pop_front();
      }
      load_batch_sync(worker_, b, floats_, i);
      std::lock_guard<std::mutex> lk(mu_);
      ready_.push_back(b);
      cv_.notify_all();
    }
  }

  const LoaderWorker& worker_;
  size_t floats_;
  std::vector<float*> buffers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<float*> free_, ready_;
  std::thread thread_;
};

__attribute__((noinline)) void forward_backward(const Model& model, cudaStream_t stream,
                                                const float* d_batch, size_t floats, int layers,
                                                int step) {
  for (int l = 0; l < layers; ++l) model.Layer(stream, d_batch, floats, step);
}

int train(const Options& o, LoaderWorker& worker, size_t floats) {
  size_t bytes = floats * sizeof(float);
  Model model;
  model.Allocate(o.act_mb, o.iters);
  float* d_batch = nullptr;
  CUDA_CHECK(cudaMalloc(&d_batch, bytes));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  double t0 = example::NowSeconds();
  if (o.fixed) {
    PrefetchQueue queue(worker, floats, o.prefetch, o.steps);
    cudaEvent_t copied;
    CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    for (int step = 0; step < o.steps; ++step) {
      float* h_batch = queue.Next();
      CUDA_CHECK(cudaMemcpyAsync(d_batch, h_batch, bytes, cudaMemcpyHostToDevice, stream));
      CUDA_CHECK(cudaEventRecord(copied, stream));
      forward_backward(model, stream, d_batch, floats, o.layers, step);
      // The pinned buffer goes back to the producer once its copy is done; the copy waits for the
      // previous step's kernels, so the host stays one step ahead of the GPU.
      CUDA_CHECK(cudaEventSynchronize(copied));
      queue.Release(h_batch);
    }
    CUDA_CHECK(cudaEventDestroy(copied));
  } else {
    float* h_batch = nullptr;
    CUDA_CHECK(cudaMallocHost(&h_batch, bytes));
    for (int step = 0; step < o.steps; ++step) {
      load_batch_sync(worker, h_batch, floats, step);
      CUDA_CHECK(cudaMemcpyAsync(d_batch, h_batch, bytes, cudaMemcpyHostToDevice, stream));
      forward_backward(model, stream, d_batch, floats, o.layers, step);
      // h_batch is refilled next step: wait for this step (a DataLoader hands out fresh tensors).
      CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    CUDA_CHECK(cudaFreeHost(h_batch));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  double seconds = example::NowSeconds() - t0;
  example::PrintSummary("dataloader", o.fixed, o.steps, seconds);
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(d_batch));
  model.Free();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags(argc, argv);
  if (flags.help()) {
    printf(
        "usage: dataloader [--fixed] [--steps N] [--batch-mb MB] [--decode-ms MS] [--act-mb MB]\n"
        "                  [--layers N] [--iters N] [--prefetch N]\n"
        "  bad: the training thread waits for the loader worker to decode each batch; --fixed:\n"
        "  a producer thread prefetches batches while the GPU computes\n");
    return 0;
  }
  Options o;
  o.fixed = flags.Has("fixed");
  o.steps = static_cast<int>(flags.Int("steps", o.steps));
  o.batch_mb = flags.Double("batch-mb", o.batch_mb);
  o.decode_ms = flags.Double("decode-ms", o.decode_ms);
  o.act_mb = flags.Double("act-mb", o.act_mb);
  o.layers = static_cast<int>(flags.Int("layers", o.layers));
  o.iters = static_cast<int>(flags.Int("iters", o.iters));
  o.prefetch = static_cast<int>(flags.Int("prefetch", o.prefetch));
  EXAMPLE_CHECK(o.steps > 0 && o.batch_mb > 0 && o.layers > 0 && o.prefetch > 0, "bad sizes");
  size_t floats = static_cast<size_t>(o.batch_mb * 1024 * 1024 / sizeof(float));
  // The worker starts before any CUDA call: a CUDA context does not survive fork().
  LoaderWorker worker;
  worker.Start(floats, o.decode_ms);
  int rc = train(o, worker, floats);
  worker.Stop();
  return rc;
}
