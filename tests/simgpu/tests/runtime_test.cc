// Done-when 1 of issue 3: the device model's blocking rules, measured in wall-clock time.
// Environment (set by CMakeLists.txt): SIMGPU_KERNEL_US=sim_sleep=@0, SIMGPU_PAGEABLE_GBPS=1,
// SIMGPU_PINNED_GBPS=2, SIMGPU_MEM_BYTES=1G, SIMGPU_DEVICES=2.
// Tolerances are generous (a loaded 2-core CI machine): "returns early" means well under the
// modelled time; "blocks" means at least the modelled time minus 1 ms.
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim_kernels.h"

using simgpu_test::LaunchSleep;
using simgpu_test::MsSince;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t k8MB = 8u << 20;  // 8 MB: 8.4 ms pageable (1 GB/s), 4.2 ms pinned (2 GB/s)

TEST(SimgpuRuntime, DevicesAndProperties) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 2);
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_EQ(p.multiProcessorCount, 132);
  EXPECT_EQ(p.totalGlobalMem, size_t{1} << 30);
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 1), cudaSuccess);
  EXPECT_EQ(sms, 132);
  EXPECT_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(SimgpuRuntime, AsyncLaunchReturnsBeforeKernelEnds) {
  auto t0 = Clock::now();
  ASSERT_EQ(LaunchSleep(50'000'000), cudaSuccess);  // 50 ms kernel
  double launch_ms = MsSince(t0);
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  double total_ms = MsSince(t0);
  EXPECT_LT(launch_ms, 25.0);
  EXPECT_GE(total_ms, 49.0);
  EXPECT_LT(total_ms, 1000.0);
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaSuccess);
}

TEST(SimgpuRuntime, SyncCopyBlocksUntilModelledCompletion) {
  std::vector<char> host(k8MB, 7), back(k8MB, 0);
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, k8MB), cudaSuccess);
  // From before the launch: the kernel starts after it was enqueued, and a loaded host may take
  // the CPU from this thread between the enqueue and the launch's return (failed at 26.3 ms).
  auto t0 = Clock::now();
  ASSERT_EQ(LaunchSleep(20'000'000), cudaSuccess);  // the copy queues behind a 20 ms kernel
  ASSERT_EQ(cudaMemcpy(dev, host.data(), k8MB, cudaMemcpyHostToDevice), cudaSuccess);
  double ms = MsSince(t0);
  EXPECT_GE(ms, 20.0 + 8.3 - 1.0);  // kernel + 8 MB at 1 GB/s
  ASSERT_EQ(cudaMemcpy(back.data(), dev, k8MB, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(memcmp(host.data(), back.data(), k8MB), 0);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
}

TEST(SimgpuRuntime, StreamSynchronizeBlocks) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  auto t0 = Clock::now();
  ASSERT_EQ(LaunchSleep(30'000'000, s), cudaSuccess);
  ASSERT_EQ(LaunchSleep(30'000'000, s), cudaSuccess);
  EXPECT_LT(MsSince(t0), 30.0);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_GE(MsSince(t0), 59.0);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(SimgpuRuntime, PageableAsyncCopyBlocksPinnedDoesNot) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void* dev = nullptr;
  void* pinned = nullptr;
  std::vector<char> pageable(k8MB, 1);
  ASSERT_EQ(cudaMalloc(&dev, k8MB), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, k8MB), cudaSuccess);

  auto t0 = Clock::now();
  ASSERT_EQ(cudaMemcpyAsync(dev, pageable.data(), k8MB, cudaMemcpyHostToDevice, s), cudaSuccess);
  double pageable_ms = MsSince(t0);
  EXPECT_GE(pageable_ms, 8.3 - 1.0);  // returned only after the 8.4 ms transfer

  t0 = Clock::now();
  ASSERT_EQ(LaunchSleep(100'000'000, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev, pinned, k8MB, cudaMemcpyHostToDevice, s), cudaSuccess);
  double pinned_ms = MsSince(t0);
  EXPECT_LT(pinned_ms, 60.0);  // did not wait for the 100 ms kernel queued before it
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_GE(MsSince(t0), 100.0 + 4.1 - 1.0);

  // cudaHostRegister'ed memory counts as pinned too.
  ASSERT_EQ(cudaHostRegister(pageable.data(), k8MB, cudaHostRegisterDefault), cudaSuccess);
  cudaPointerAttributes a;
  ASSERT_EQ(cudaPointerGetAttributes(&a, pageable.data()), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  t0 = Clock::now();
  ASSERT_EQ(LaunchSleep(100'000'000, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev, pageable.data(), k8MB, cudaMemcpyHostToDevice, s), cudaSuccess);
  EXPECT_LT(MsSince(t0), 60.0);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaHostUnregister(pageable.data()), cudaSuccess);
  ASSERT_EQ(cudaPointerGetAttributes(&a, pageable.data()), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);

  cudaFreeHost(pinned);
  cudaFree(dev);
  cudaStreamDestroy(s);
}

TEST(SimgpuRuntime, OverCapacityAllocationFails) {
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, size_t{768} << 20), cudaSuccess);  // of SIMGPU_MEM_BYTES=1G
  EXPECT_EQ(cudaMalloc(&b, size_t{512} << 20), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  size_t free_b = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_b, &total), cudaSuccess);
  EXPECT_EQ(total, size_t{1} << 30);
  EXPECT_EQ(free_b, size_t{256} << 20);
  ASSERT_EQ(cudaFree(a), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, size_t{512} << 20), cudaSuccess);
  cudaFree(b);
}

TEST(SimgpuRuntime, LegacyDefaultStreamSynchronizesBlockingStreams) {
  cudaStream_t blocking, nonblocking;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  auto t0 = Clock::now();
  ASSERT_EQ(LaunchSleep(30'000'000, blocking), cudaSuccess);
  ASSERT_EQ(LaunchSleep(1'000'000, nullptr), cudaSuccess);  // waits for `blocking`
  ASSERT_EQ(cudaEventRecord(stop, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  EXPECT_GE(MsSince(t0), 30.0);

  t0 = Clock::now();
  ASSERT_EQ(LaunchSleep(100'000'000, nonblocking), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start, nullptr), cudaSuccess);
  ASSERT_EQ(LaunchSleep(1'000'000, nullptr), cudaSuccess);  // does not wait for `nonblocking`
  ASSERT_EQ(cudaEventRecord(stop, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  EXPECT_LT(MsSince(t0), 70.0);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GE(ms, 0.9f);
  EXPECT_LT(ms, 20.0f);
  cudaDeviceSynchronize();
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
}

TEST(SimgpuRuntime, PerThreadDefaultStreamIsSeparate) {
  void* dev = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 4096), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 4096), cudaSuccess);
  auto t0 = Clock::now();
  std::thread other([] { LaunchSleep(100'000'000, cudaStreamPerThread); });
  other.join();
  // The legacy stream synchronizes with per-thread default streams (they are blocking streams).
  ASSERT_EQ(cudaMemcpyAsync_ptsz(dev, pinned, 4096, cudaMemcpyHostToDevice, nullptr), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize_ptsz(nullptr), cudaSuccess);
  EXPECT_LT(MsSince(t0), 70.0);  // this thread's stream did not wait for the other's kernel
  cudaDeviceSynchronize();
  EXPECT_GE(MsSince(t0), 99.0);
  cudaFree(dev);
  cudaFreeHost(pinned);
}

TEST(SimgpuRuntime, SmallGridsUnderfillTheDevice) {
  simgpu_test::RegisterKernels();
  float* p = nullptr;
  void* args[] = {&p};
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  auto run = [&](unsigned blocks) {
    cudaEventRecord(a, nullptr);
    cudaLaunchKernel(&simgpu_test::kWaveKernel, dim3(blocks), dim3(256), args, 0, nullptr);
    cudaEventRecord(b, nullptr);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return ms;
  };
  float one_block = run(1), full = run(132 * 8), ten_waves = run(132 * 8 * 10);
  // 1 block and a full wave cost the same (3 + 5 us): small grids waste the device.
  EXPECT_LT(one_block, 5.0f);
  EXPECT_LT(full, 5.0f);
  EXPECT_GT(ten_waves, 0.05f);  // 3 + 10 * 5 us = 53 us
}

TEST(SimgpuRuntime, GraphCaptureReplays) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(LaunchSleep(10'000'000, s), cudaSuccess);
  ASSERT_EQ(LaunchSleep(10'000'000, s), cudaSuccess);
  cudaGraph_t g;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphExec_t x;
  ASSERT_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  auto t0 = Clock::now();
  ASSERT_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_GE(MsSince(t0), 19.0);
  cudaStreamDestroy(s);
}

// The scheduling policy of each of this process's threads whose name starts with `prefix`
// (/proc/self/task/*/stat, field 41).
std::vector<int> PoliciesOf(const std::string& prefix) {
  std::vector<int> out;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string dir = std::string("/proc/self/task/") + e->d_name;
    std::string comm;
    std::getline(std::ifstream(dir + "/comm"), comm);
    if (comm.rfind(prefix, 0) != 0) continue;
    std::ifstream f(dir + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // from field 3, the state
    std::string field;
    for (int i = 3; i <= 41 && fields >> field; ++i) {
    }
    out.push_back(std::stoi(field));
  }
  closedir(d);
  return out;
}

// Device threads take a CPU before the host's (SCHED_FIFO where the process may: a loaded host
// must not hold back the device); a host function is the application's code and runs as its
// threads do.
TEST(SimgpuRuntime, DeviceThreadsRunFirstHostFuncsDoNot) {
  bool may_fifo = false;
  std::thread([&] {
    sched_param sp{};
    sp.sched_priority = sched_get_priority_min(SCHED_FIFO);
    may_fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
  }).join();
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(LaunchSleep(1'000'000, s), cudaSuccess);
  int host_fn_policy = -1;
  auto read_policy = [](void* p) { *static_cast<int*>(p) = sched_getscheduler(0); };
  ASSERT_EQ(cudaLaunchHostFunc(s, read_policy, &host_fn_policy), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::vector<int> workers = PoliciesOf("simgpu-d");  // before the destroy ends s's worker
  cudaStreamDestroy(s);
  EXPECT_EQ(host_fn_policy, SCHED_OTHER);
  ASSERT_FALSE(workers.empty());
  const char* rt = getenv("SIMGPU_DEVICE_RT");
  if (rt != nullptr && strcmp(rt, "0") == 0) GTEST_SKIP() << "SIMGPU_DEVICE_RT=0";
  if (!may_fifo) GTEST_SKIP() << "this process may not use SCHED_FIFO: device threads as host's";
  for (int policy : workers) EXPECT_EQ(policy, SCHED_FIFO);  // the host function's restored
}

}  // namespace
