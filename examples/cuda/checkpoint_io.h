// Checkpoint writing shared by the checkpoint and mixed examples: the synchronous save on the
// training thread (the root cause) and the background writer (the fix).
#pragma once

#include <errno.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "train_common.h"

namespace example {

// The checkpoint's final name; it is written to NAME.tmp and renamed, so a crash mid-write never
// leaves a torn checkpoint (the usual torch.save pattern).
inline std::string CheckpointPath(const std::string& dir) { return dir + "/model.pt"; }

// Writes the snapshot like torch.save: a small header, then the tensor bytes, then fsync so the
// checkpoint survives a crash of the node.
__attribute__((noinline)) inline void write_checkpoint_file(const std::string& path,
                                                            const void* params, size_t bytes,
                                                            int step) {
  std::string tmp = path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "wb");
  EXAMPLE_CHECK(f != nullptr, "cannot create %s: %s", tmp.c_str(), strerror(errno));
  char header[64];
  int n = snprintf(header, sizeof header, "IDLESCOPE-CKPT step=%d bytes=%zu\n", step, bytes);
  EXAMPLE_CHECK(fwrite(header, 1, static_cast<size_t>(n), f) == static_cast<size_t>(n),
                "write %s: %s", path.c_str(), strerror(errno));
  // In 1 MiB pieces, as serializers write tensor storage.
  const char* p = static_cast<const char*>(params);
  for (size_t off = 0; off < bytes; off += 1 << 20) {
    size_t len = bytes - off < (1u << 20) ? bytes - off : (1u << 20);
    EXAMPLE_CHECK(fwrite(p + off, 1, len, f) == len, "write %s: %s", path.c_str(), strerror(errno));
  }
  EXAMPLE_CHECK(fflush(f) == 0, "flush %s: %s", path.c_str(), strerror(errno));
  EXAMPLE_CHECK(fsync(fileno(f)) == 0, "fsync %s: %s", path.c_str(), strerror(errno));
  EXAMPLE_CHECK(fclose(f) == 0, "close %s: %s", path.c_str(), strerror(errno));
  EXAMPLE_CHECK(rename(tmp.c_str(), path.c_str()) == 0, "rename %s: %s", tmp.c_str(),
                strerror(errno));
}

// The bad twin: copy and write on the training thread; the GPU idles until the file is on disk.
__attribute__((noinline)) inline void save_checkpoint_sync(const float* d_params, void* h_snapshot,
                                                           size_t bytes, const std::string& path,
                                                           int step) {
  CUDA_CHECK(cudaMemcpy(h_snapshot, d_params, bytes, cudaMemcpyDeviceToHost));
  write_checkpoint_file(path, h_snapshot, bytes, step);
}

// The fixed twin's writer: one snapshot in flight; the training thread waits only if the
// previous save has not finished when the next one is due.
class AsyncCheckpointWriter {
 public:
  AsyncCheckpointWriter(void* snapshot, size_t bytes)
      : snapshot_(snapshot), bytes_(bytes), thread_([this] { checkpoint_writer_loop(); }) {}
  ~AsyncCheckpointWriter() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // Stages the parameters into the snapshot (device-to-host copy) and hands them to the writer.
  __attribute__((noinline)) void save_checkpoint_async(const float* d_params,
                                                       const std::string& path, int step) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [this] { return !pending_; });
    CUDA_CHECK(cudaMemcpy(snapshot_, d_params, bytes_, cudaMemcpyDeviceToHost));
    path_ = path;
    step_ = step;
    pending_ = true;
    cv_.notify_all();
  }

  void Drain() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [this] { return !pending_; });
  }

 private:
  void checkpoint_writer_loop() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [this] { return pending_ || stop_; });
      if (!pending_) return;
      std::string path = path_;
      int step = step_;
      lk.unlock();
      write_checkpoint_file(path, snapshot_, bytes_, step);
      lk.lock();
      pending_ = false;
      cv_.notify_all();
    }
  }

  void* snapshot_;
  size_t bytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;
  bool stop_ = false;
  std::string path_;
  int step_ = 0;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace example
