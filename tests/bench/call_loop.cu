// The per-call workload of tests/bench/run.sh: CALLS calls of one intercepted API in a loop, the
// same binary run bare, traced (stacks off / on), under `strace -f` and under `ltrace -f`, so the
// difference between two runs is what each tool adds per call. Usage:
//   call_loop write|read|memcpy|launch|allreduce CALLS [WARMUP]
// Prints one line: "call_loop KIND CALLS WALL_NS CPU_NS" (the timed loop only: wall time, and the
// process's CPU time, all threads, so a tracer's writer thread counts).
//
// Untimed: setup (file, buffers, stream, NCCL communicator), a warm-up of WARMUP calls (default
// 16384: process start, the first stack capture loading the unwinder, and a thread's event ring
// whose pages the first ~11,000 events touch for the first time; under ltrace, whose every call
// costs milliseconds on a loaded machine, a few hundred), and a cudaStreamSynchronize every kBatch
// calls (keeps simgpu's queue short; the sync is itself a hooked call, 1 per kBatch, and is timed
// out).
//   write/read: 4 KB to/from a file on tmpfs (/dev/shm), rewound every 16 MB.
//   memcpy:     cudaMemcpyAsync of 64 B from pinned memory to the device.
//   launch:     an empty kernel, <<<1, 32>>> on a stream.
//   allreduce:  ncclAllReduce of 64 floats on a one-rank communicator.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <nccl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kBatch = 256;
constexpr long kDefaultWarmup = 16384;
constexpr size_t kIoBlock = 4096;
constexpr long kIoRewind = 16 << 20;

long long Clock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__global__ void EmptyKernel() {}

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "call_loop: %s\n", what);
  std::exit(1);
}

struct Workload {
  std::string kind;
  int fd = -1;
  std::string path;
  char* io_buf = nullptr;
  long io_pos = 0;
  void* dev = nullptr;
  void* pinned = nullptr;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  bool gpu = false;

  void Setup() {
    if (kind == "write" || kind == "read") {
      path = "/dev/shm/idlescope-call-loop-" + std::to_string(getpid());
      if (posix_memalign(reinterpret_cast<void**>(&io_buf), 4096, kIoBlock) != 0) Fail("memalign");
      std::memset(io_buf, 'c', kIoBlock);
      fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
      if (fd < 0) Fail("cannot create a file in /dev/shm");
      for (long off = 0; off < kIoRewind; off += kIoBlock) {
        if (write(fd, io_buf, kIoBlock) != static_cast<ssize_t>(kIoBlock)) Fail("write");
      }
      lseek(fd, 0, SEEK_SET);
      return;
    }
    gpu = true;
    if (cudaStreamCreate(&stream) != cudaSuccess) Fail("cudaStreamCreate");
    if (kind == "memcpy") {
      if (cudaMalloc(&dev, 64) != cudaSuccess || cudaMallocHost(&pinned, 64) != cudaSuccess) {
        Fail("cudaMalloc");
      }
    } else if (kind == "allreduce") {
      if (cudaMalloc(&dev, 64 * sizeof(float)) != cudaSuccess) Fail("cudaMalloc");
      int device = 0;
      if (ncclCommInitAll(&comm, 1, &device) != ncclSuccess) Fail("ncclCommInitAll");
    } else if (kind != "launch") {
      Fail("unknown kind (write, read, memcpy, launch, allreduce)");
    }
  }

  // One intercepted call. noinline: the same call site for every mode, and a stack of its own.
  __attribute__((noinline)) void Call() {
    if (kind == "write" || kind == "read") {
      if (io_pos >= kIoRewind) {
        lseek(fd, 0, SEEK_SET);
        io_pos = 0;
      }
      ssize_t n = kind == "write" ? write(fd, io_buf, kIoBlock) : read(fd, io_buf, kIoBlock);
      if (n != static_cast<ssize_t>(kIoBlock)) Fail("short I/O");
      io_pos += n;
    } else if (kind == "memcpy") {
      cudaMemcpyAsync(dev, pinned, 64, cudaMemcpyHostToDevice, stream);
    } else if (kind == "launch") {
      EmptyKernel<<<1, 32, 0, stream>>>();
    } else {
      ncclAllReduce(dev, dev, 64, ncclFloat, ncclSum, comm, stream);
    }
  }

  void Drain() {
    if (gpu) cudaStreamSynchronize(stream);
  }

  void Teardown() {
    if (fd >= 0) {
      close(fd);
      unlink(path.c_str());
    }
    if (comm != nullptr) ncclCommDestroy(comm);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: call_loop write|read|memcpy|launch|allreduce CALLS [WARMUP]\n");
    return 2;
  }
  Workload w;
  w.kind = argv[1];
  long calls = std::atol(argv[2]);
  if (calls <= 0) Fail("CALLS must be a positive number");
  long warmup = argc == 4 ? std::atol(argv[3]) : kDefaultWarmup;
  if (warmup < 0) Fail("WARMUP must be a number");
  w.Setup();
  for (long i = 0; i < warmup; ++i) {
    w.Call();
    if (i % kBatch == kBatch - 1) w.Drain();
  }
  w.Drain();
  long long wall = 0, cpu = 0;
  for (long done = 0; done < calls;) {
    long n = calls - done < kBatch ? calls - done : kBatch;
    long long c0 = Clock(CLOCK_PROCESS_CPUTIME_ID), t0 = Clock(CLOCK_MONOTONIC);
    for (long i = 0; i < n; ++i) w.Call();
    long long t1 = Clock(CLOCK_MONOTONIC), c1 = Clock(CLOCK_PROCESS_CPUTIME_ID);
    wall += t1 - t0;
    cpu += c1 - c0;
    done += n;
    w.Drain();
  }
  w.Teardown();
  std::printf("call_loop %s %ld %lld %lld\n", w.kind.c_str(), calls, wall, cpu);
  return 0;
}
