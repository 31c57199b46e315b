// One NCCL rank (its own process, like a torchrun worker), driven by nccl_test.cc:
//   simgpu_nccl_rank <unique id> <nranks> <rank> <slow rank> <delay ms>
// Prints "RESULT rank=<r> base_ms=<allreduce kernel ms> delayed_ms=<ms> ok=<0|1>".
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CHECK(x)                                                                  \
  do {                                                                            \
    if (!(x)) {                                                                   \
      fprintf(stderr, "rank check failed: %s (%s:%d)\n", #x, __FILE__, __LINE__); \
      return 2;                                                                   \
    }                                                                             \
  } while (0)

static float TimedAllReduce(float* d, size_t n, ncclComm_t comm, cudaStream_t s, int delay_ms) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  cudaEventRecord(a, s);
  ncclAllReduce(d, d, n, ncclFloat32, ncclSum, comm, s);
  cudaEventRecord(b, s);
  cudaStreamSynchronize(s);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  return ms;
}

int main(int argc, char** argv) {
  if (argc != 6) return 1;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  snprintf(id.internal, sizeof id.internal, "%s", argv[1]);
  int nranks = atoi(argv[2]), rank = atoi(argv[3]), slow = atoi(argv[4]), delay = atoi(argv[5]);
  int ndev = 0;
  CHECK(cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0);
  CHECK(cudaSetDevice(rank % ndev) == cudaSuccess);
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, nranks, id, rank) == ncclSuccess);
  int count = 0, me = -1;
  ncclCommCount(comm, &count);
  ncclCommUserRank(comm, &me);
  CHECK(count == nranks && me == rank);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);

  // AllReduce of 3 MB (several staging chunks): values checked exactly.
  const size_t n = 3 << 18;
  std::vector<float> h(n), out(n);
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<float>(rank + 1) + static_cast<float>(i % 7);
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)) == cudaSuccess);
  cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  CHECK(ncclAllReduce(d, d, n, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  cudaMemcpyAsync(out.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    float want = static_cast<float>(nranks * (nranks + 1) / 2 + nranks * static_cast<int>(i % 7));
    ok = ok && out[i] == want;
  }

  // AllGather, Broadcast and a send/recv ring on int32.
  const size_t m = 1000;
  int32_t *g_send, *g_recv;
  cudaMalloc(reinterpret_cast<void**>(&g_send), m * sizeof(int32_t));
  cudaMalloc(reinterpret_cast<void**>(&g_recv), m * nranks * sizeof(int32_t));
  std::vector<int32_t> hs(m, rank * 10), hr(m * nranks);
  cudaMemcpy(g_send, hs.data(), m * sizeof(int32_t), cudaMemcpyHostToDevice);
  CHECK(ncclAllGather(g_send, g_recv, m, ncclInt32, comm, s) == ncclSuccess);
  cudaMemcpyAsync(hr.data(), g_recv, hr.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  for (size_t i = 0; i < hr.size(); ++i) ok = ok && hr[i] == static_cast<int32_t>(i / m) * 10;
  CHECK(ncclBroadcast(g_send, g_send, m, ncclInt32, nranks - 1, comm, s) == ncclSuccess);
  ncclGroupStart();
  ncclSend(g_send, m, ncclInt32, (rank + 1) % nranks, comm, s);
  ncclRecv(g_recv, m, ncclInt32, (rank + nranks - 1) % nranks, comm, s);
  CHECK(ncclGroupEnd() == ncclSuccess);
  cudaMemcpyAsync(hr.data(), g_recv, m * sizeof(int32_t), cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  for (size_t i = 0; i < m; ++i) ok = ok && hr[i] == (nranks - 1) * 10;

  // Timing: aligned by the collectives above, then one rank arrives `delay` ms late.
  // A small buffer, so the kernels' own (CPU-bound here) data movement stays negligible.
  float base = TimedAllReduce(d, 256, comm, s, 0);
  float delayed = TimedAllReduce(d, 256, comm, s, rank == slow ? delay : 0);
  printf("RESULT rank=%d base_ms=%.3f delayed_ms=%.3f ok=%d\n", rank, base, delayed, ok ? 1 : 0);
  ncclCommDestroy(comm);
  return ok ? 0 : 3;
}
