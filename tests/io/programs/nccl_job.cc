// A 4-rank NCCL job in the torchrun shape: `nccl_job launch N` spawns N copies of itself
// (`nccl_job rank <unique id> N R`), each its own process on its own (simulated) GPU, and waits.
// Every rank runs the same sequence of collectives, so the n-th collective of a communicator is
// the same operation everywhere:
//   world comm: AllReduce x3 (1M floats), AllGather (1000 int32), ReduceScatter (1000 floats
//   per rank), Broadcast (root 1, 4096 bytes), a Send/Recv ring in a group;
//   split comm (color = rank % 2): one AllReduce (1000 doubles); then both are destroyed.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

#define CHECK(x)                                                                       \
  do {                                                                                 \
    if (!(x)) {                                                                        \
      fprintf(stderr, "nccl_job: check failed: %s (%s:%d)\n", #x, __FILE__, __LINE__); \
      return 2;                                                                        \
    }                                                                                  \
  } while (0)

static int Launch(const char* self, int nranks) {
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id) == ncclSuccess);
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    std::string n = std::to_string(nranks), rank = std::to_string(r);
    char* argv[] = {const_cast<char*>(self),
                    const_cast<char*>("rank"),
                    id.internal,
                    n.data(),
                    rank.data(),
                    nullptr};
    pid_t pid;
    CHECK(posix_spawn(&pid, self, nullptr, nullptr, argv, environ) == 0);
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed;
}

static int Rank(const char* id_text, int nranks, int rank) {
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  snprintf(id.internal, sizeof id.internal, "%s", id_text);
  int ndev = 0;
  CHECK(cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0);
  CHECK(cudaSetDevice(rank % ndev) == cudaSuccess);
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, nranks, id, rank) == ncclSuccess);
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s) == cudaSuccess);

  const size_t n = 1 << 20;
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * nranks * sizeof(float)) == cudaSuccess);
  CHECK(cudaMemset(d, 0, n * nranks * sizeof(float)) == cudaSuccess);
  for (int i = 0; i < 3; ++i) {
    CHECK(ncclAllReduce(d, d, n, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  }
  CHECK(ncclAllGather(d, d + n, 1000, ncclInt32, comm, s) == ncclSuccess);
  CHECK(ncclReduceScatter(d, d + n, 1000, ncclFloat32, ncclSum, comm, s) == ncclSuccess);
  CHECK(ncclBroadcast(d, d, 1024, ncclFloat32, 1, comm, s) == ncclSuccess);
  CHECK(ncclGroupStart() == ncclSuccess);
  CHECK(ncclSend(d, 256, ncclFloat32, (rank + 1) % nranks, comm, s) == ncclSuccess);
  CHECK(ncclRecv(d + n, 256, ncclFloat32, (rank + nranks - 1) % nranks, comm, s) == ncclSuccess);
  CHECK(ncclGroupEnd() == ncclSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);

  ncclComm_t half;
  CHECK(ncclCommSplit(comm, rank % 2, rank, &half, nullptr) == ncclSuccess);
  CHECK(ncclAllReduce(d, d, 1000, ncclFloat64, ncclMax, half, s) == ncclSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(ncclCommDestroy(half) == ncclSuccess);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "launch") == 0) return Launch(argv[0], atoi(argv[2]));
  if (argc == 5 && strcmp(argv[1], "rank") == 0) {
    return Rank(argv[2], atoi(argv[3]), atoi(argv[4]));
  }
  fprintf(stderr, "usage: nccl_job launch N | nccl_job rank ID N R\n");
  return 1;
}
