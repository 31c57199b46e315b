// Job shapes of issue 24's identity classes, one per mode, each a training loop whose GPU idles
// while the training thread does one planted thing between its steps; the program measures that
// time itself and prints it ("planted_ms=X"), identity_shapes.py checks the report names it.
//
//   mmap_ckpt      weights copied from the GPU straight into a shared mapping of optimizer.pt,
//                  then msync'ed (no write call at all)
//   copy_ckpt      the last checkpoint copied to best.pth with copy_file_range (cp)
//   sendfile_ckpt  the checkpoint archived with sendfile (Python's shutil.copy)
//   atomic_save    weights written to a mkstemp file, fsync'ed, renamed over weights.safetensors
//   resume_state   resume.dat (no model name) read back whole before the first kernel, written
//                  again every few steps: the job's own checkpoint by what it does with it
//   dir_logs       run from a directory named ckpt-experiments: metrics appended and fsync'ed
//                  there are uploads, not checkpoints
//   tcp_ranks      gradients exchanged over loopback TCP with a second rank (no NCCL): rank 1
//                  is this program spawned again, and takes --peer-ms before it answers
//   http_fetch     a shard fetched by HTTP from a server on loopback that is no process of the
//                  job (--port: the test's server)
//   stdin_feed     records read from stdin, a pipe the test writes slowly
//   child_tool     a media tool (--tool, named ffmpeg) run with fork+exec and waitpid
//   system_tool    the same tool run through system()
//   child_compiler a compiler (--tool, named ptxas) run between steps with posix_spawn, waited
//                  for with waitid (a JIT recompiling for a new shape)
//   signal_handler a helper thread signals the training thread while it is in
//                  cudaDeviceSynchronize; the handler computes for --handler-ms
//   cpu_augment    the batch augmented on the training thread, on the CPU, between steps (no
//                  call at all: the thread sampler's runs)
//   crowded_cpu    four threads of the job spin beside the training thread (more busy threads
//                  than the machine's cores): its own CPU work between steps waits for a CPU
//   mapped_dataset tokens read through a read-only mapping of train.bin (np.memmap, nanoGPT; the
//                  test writes the file, 128 MiB of bytes 3, before the job):
//                  each step touches its shard's pages, which come from the disk (the shard is
//                  dropped from the page cache after its step): the training thread waits in page
//                  faults, in no call. Prints major_faults=N: 0 where the file system keeps every
//                  page in memory (tmpfs), and then nothing was planted
//
// At the end the program prints how many descriptors it has open and how many of the signals the
// profilers of other tools send (SIGPROF, SIGALRM, SIGURG, SIGUSR2) it received: the sampler adds
// no descriptor and sends no signal.
//
//   identity_shapes MODE [--steps N] [--work-ms M] [--tool PATH] [--port P] [--peer-ms M]
#include <arpa/inet.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "identity_shapes: %s failed (%s)\n", #cond, strerror(errno)); \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)
#define CUDA_CHECK(call) CHECK((call) == cudaSuccess)

__global__ void train_step(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

namespace {

constexpr size_t kStateBytes = 8 << 20;   // the weights a checkpoint holds
constexpr size_t kMappedBytes = 1 << 20;  // mmap_ckpt's share of them (msync writes each page)

struct Options {
  std::string mode;
  int steps = 12;
  std::string tool;
  int port = 0;
  int peer_ms = 40;
  int handler_ms = 40;
  int connect = 0;  // rank 1: the port rank 0 listens on
};

std::atomic<int> g_foreign_signals{0};
void on_foreign_signal(int) { g_foreign_signals.fetch_add(1); }

int OpenDescriptors() {
  int n = 0;
  for (int fd = 0; fd < 4096; ++fd) n += fcntl(fd, F_GETFD) >= 0;
  return n;
}

// The thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), in ms.
double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Augments `image` on the CPU until the thread has computed for `cpu_ms` of its own CPU time
// (a flip and a brightness jitter, again and again): a transform with no call in it.
volatile float g_sink = 0;
void augment_on_cpu(std::vector<float>& image, double cpu_ms) {
  const double until = ThreadCpuMs() + cpu_ms;
  float jitter = 1.0001f;
  while (ThreadCpuMs() < until) {
    for (size_t i = 0, j = image.size() - 1; i < j; ++i, --j) {
      const float a = image[i] * jitter, b = image[j] * jitter;
      image[i] = b;
      image[j] = a;
    }
    jitter = 2.0f - jitter;
  }
  g_sink = image[0];
}

std::atomic<bool> g_spin{false};
void* Spinner(void*) {
  volatile uint64_t n = 0;
  while (g_spin.load(std::memory_order_relaxed)) ++n;
  return nullptr;
}

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

long MajorFaults() {
  rusage u{};
  CHECK(getrusage(RUSAGE_THREAD, &u) == 0);
  return u.ru_majflt;
}

void SpinMs(double ms) {
  const double until = NowMs() + ms;
  volatile double sink = 1;
  while (NowMs() < until) sink = sink * 1.0000001 + 1;
}

void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    CHECK(w > 0 || errno == EINTR);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
}

bool ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r == 0) return false;
    CHECK(r > 0 || errno == EINTR);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
    }
  }
  return true;
}

void WriteFile(const char* path, const std::vector<char>& data) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  WriteAll(fd, data.data(), data.size());
  CHECK(fsync(fd) == 0);
  close(fd);
}

// --- the planted things, each between two steps on the training thread

constexpr size_t kShardBytes = 64 << 20;  // mapped_dataset: a step's tokens

// mapped_dataset's file, train.bin: two shards the test wrote before the job (a dataset prepared
// beforehand, nanoGPT's prepare.py), dropped from the page cache and mapped for reading.
struct MappedDataset {
  int fd = -1;
  const volatile char* base = nullptr;
};

MappedDataset map_dataset() {
  MappedDataset d;
  d.fd = open("train.bin", O_RDONLY);
  CHECK(d.fd >= 0 && posix_fadvise(d.fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  void* p = mmap(nullptr, 2 * kShardBytes, PROT_READ, MAP_PRIVATE, d.fd, 0);
  CHECK(p != MAP_FAILED);
  d.base = static_cast<const volatile char*>(p);
  return d;
}

__attribute__((noinline)) long read_mapped_shard(const MappedDataset& d, int shard) {
  long sum = 0;
  const volatile char* s = d.base + static_cast<size_t>(shard) * kShardBytes;
  for (size_t off = 0; off < kShardBytes; off += 4096) sum += s[off];
  return sum;
}

// After the step: the shard leaves the page cache, so the next read of it faults from the disk.
void drop_shard(const MappedDataset& d, int shard) {
  const size_t off = static_cast<size_t>(shard) * kShardBytes;
  CHECK(madvise(const_cast<char*>(d.base) + off, kShardBytes, MADV_DONTNEED) == 0);
  CHECK(posix_fadvise(d.fd, static_cast<off_t>(off), kShardBytes, POSIX_FADV_DONTNEED) == 0);
}

__attribute__((noinline)) void checkpoint_through_mapping(const float* d_state) {
  int fd = open("optimizer.pt", O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0 && ftruncate(fd, kMappedBytes) == 0);
  void* map = mmap(nullptr, kMappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(map != MAP_FAILED);
  close(fd);
  CUDA_CHECK(cudaMemcpy(map, d_state, kMappedBytes, cudaMemcpyDeviceToHost));
  CHECK(msync(map, kMappedBytes, MS_SYNC) == 0);
  CHECK(munmap(map, kMappedBytes) == 0);
}

__attribute__((noinline)) void copy_checkpoint(const char* from, const char* to,
                                               bool use_sendfile) {
  int in = open(from, O_RDONLY);
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(in >= 0 && out >= 0);
  size_t left = kStateBytes;
  while (left > 0) {
    ssize_t n = use_sendfile ? sendfile(out, in, nullptr, left)
                             : copy_file_range(in, nullptr, out, nullptr, left, 0);
    CHECK(n > 0);
    left -= static_cast<size_t>(n);
  }
  CHECK(fsync(out) == 0);
  close(in);
  close(out);
}

__attribute__((noinline)) void save_atomically(const std::vector<char>& state) {
  char tmp[] = "tmpXXXXXX";
  int fd = mkstemp(tmp);
  CHECK(fd >= 0);
  WriteAll(fd, state.data(), state.size());
  CHECK(fsync(fd) == 0);
  close(fd);
  CHECK(rename(tmp, "weights.safetensors") == 0);
}

__attribute__((noinline)) void append_metrics(int fd, int step, double work_ms) {
  char line[4096];
  memset(line, ' ', sizeof line);
  int n = snprintf(line, sizeof line, "{\"step\": %d, \"loss\": %.3f}", step, 1.0 / (step + 1));
  line[n] = ' ';
  line[sizeof line - 1] = '\n';
  const double until = NowMs() + work_ms;
  while (NowMs() < until) {
    WriteAll(fd, line, sizeof line);
    CHECK(fdatasync(fd) == 0);
  }
}

__attribute__((noinline)) void exchange_gradients(int sock, std::vector<char>& grads) {
  WriteAll(sock, grads.data(), grads.size());
  CHECK(ReadAll(sock, grads.data(), grads.size()));
}

__attribute__((noinline)) void fetch_shard(int port) {
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(sock >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const char request[] = "GET /shard HTTP/1.0\r\nHost: data\r\n\r\n";
  WriteAll(sock, request, sizeof request - 1);
  char buf[65536];
  size_t total = 0;
  for (;;) {
    ssize_t n = read(sock, buf, sizeof buf);
    if (n == 0) break;
    CHECK(n > 0 || errno == EINTR);
    if (n > 0) total += static_cast<size_t>(n);
  }
  CHECK(total > 0);
  close(sock);
}

__attribute__((noinline)) void read_record(std::vector<char>& record) {
  CHECK(ReadAll(STDIN_FILENO, record.data(), record.size()));
}

__attribute__((noinline)) void run_tool(const std::string& tool, int ms) {
  const std::string base = tool.substr(tool.rfind('/') + 1);
  const std::string seconds = std::to_string(ms / 1000.0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    execl(tool.c_str(), base.c_str(), seconds.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

__attribute__((noinline)) void run_tool_with_system(const std::string& tool, int ms) {
  // The tool's own name on the command line (its directory on PATH), as a script would say it.
  const std::string dir = tool.substr(0, tool.rfind('/'));
  const std::string base = tool.substr(tool.rfind('/') + 1);
  const std::string command = "PATH=" + dir + ":$PATH " + base + " " + std::to_string(ms / 1000.0);
  CHECK(system(command.c_str()) == 0);
}

__attribute__((noinline)) void recompile(const std::string& tool, int ms) {
  const std::string base = tool.substr(tool.rfind('/') + 1);
  const std::string seconds = std::to_string(ms / 1000.0);
  char* argv[] = {const_cast<char*>(base.c_str()), const_cast<char*>(seconds.c_str()), nullptr};
  pid_t pid = 0;
  CHECK(posix_spawn(&pid, tool.c_str(), nullptr, nullptr, argv, environ) == 0);
  siginfo_t info{};
  CHECK(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED) == 0 && info.si_status == 0);
}

// --- signal_handler: the handler's time, summed (written only by the handler, read after)
std::atomic<double> g_handler_ms{0};
int g_handler_work_ms = 40;
std::atomic<int> g_syncing{0};
pthread_t g_trainer;

extern "C" __attribute__((noinline)) void on_checkpoint_signal(int) {
  const double t0 = NowMs();
  SpinMs(g_handler_work_ms);  // a handler that saves state, flushes logs, dumps stacks
  g_handler_ms.store(g_handler_ms.load() + NowMs() - t0);
}

void* Signaller(void*) {
  for (;;) {
    int step = g_syncing.load();
    if (step < 0) return nullptr;
    if (step > 0) {
      pthread_kill(g_trainer, SIGUSR1);
      while (g_syncing.load() == step) usleep(100);
    } else {
      usleep(100);
    }
  }
}

// Rank 1 of tcp_ranks: answers every exchange after its own --peer-ms of work.
int RunPeerRank(const Options& o) {
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(sock >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(o.connect));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  std::vector<char> grads(1 << 20);
  while (ReadAll(sock, grads.data(), grads.size())) {
    SleepMs(o.peer_ms);  // its backward pass
    WriteAll(sock, grads.data(), grads.size());
  }
  close(sock);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CHECK(argc >= 2);
  o.mode = argv[1];
  double work_ms = 40;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0) o.steps = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--work-ms") == 0) work_ms = atof(argv[i + 1]);
    if (strcmp(argv[i], "--tool") == 0) o.tool = argv[i + 1];
    if (strcmp(argv[i], "--port") == 0) o.port = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--peer-ms") == 0) o.peer_ms = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--connect") == 0) o.connect = atoi(argv[i + 1]);
  }
  if (o.mode == "peer_rank") return RunPeerRank(o);
  const std::string& m = o.mode;

  std::vector<char> state(kStateBytes, 7);
  // Before the first kernel: files the planted work starts from.
  if (m == "copy_ckpt" || m == "sendfile_ckpt") WriteFile("last.ckpt", state);
  if (m == "resume_state") {
    WriteFile("resume.dat", state);
    int fd = open("resume.dat", O_RDONLY);
    CHECK(fd >= 0 && ReadAll(fd, state.data(), state.size()));
    close(fd);
  }
  int metrics = -1;
  if (m == "dir_logs") {
    CHECK(mkdir("ckpt-experiments", 0755) == 0 || errno == EEXIST);
    CHECK(chdir("ckpt-experiments") == 0);
    metrics = open("metrics.jsonl", O_WRONLY | O_CREAT | O_APPEND, 0644);
    CHECK(metrics >= 0);
  }
  int rank_sock = -1;
  pid_t rank1 = 0;
  if (m == "tcp_ranks") {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(listener >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    CHECK(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    CHECK(listen(listener, 1) == 0);
    CHECK(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    const std::string port = std::to_string(ntohs(addr.sin_port));
    const std::string peer_ms = std::to_string(o.peer_ms);
    char* args[] = {argv[0],
                    const_cast<char*>("peer_rank"),
                    const_cast<char*>("--connect"),
                    const_cast<char*>(port.c_str()),
                    const_cast<char*>("--peer-ms"),
                    const_cast<char*>(peer_ms.c_str()),
                    nullptr};
    CHECK(posix_spawn(&rank1, argv[0], nullptr, nullptr, args, environ) == 0);
    rank_sock = accept(listener, nullptr, nullptr);
    CHECK(rank_sock >= 0);
    close(listener);
  }
  pthread_t signaller{};
  if (m == "signal_handler") {
    g_handler_work_ms = static_cast<int>(work_ms);
    g_trainer = pthread_self();
    struct sigaction sa {};
    sa.sa_handler = on_checkpoint_signal;
    sa.sa_flags = SA_RESTART;
    CHECK(sigaction(SIGUSR1, &sa, nullptr) == 0);
    CHECK(pthread_create(&signaller, nullptr, Signaller, nullptr) == 0);
  }
  std::vector<char> grads(1 << 20, 1), record(64 << 10);
  std::vector<float> image(256 << 10, 0.5f);
  for (int sig : {SIGPROF, SIGALRM, SIGURG, SIGUSR2}) {
    struct sigaction sa {};
    sa.sa_handler = on_foreign_signal;
    CHECK(sigaction(sig, &sa, nullptr) == 0);
  }
  MappedDataset dataset;
  if (m == "mapped_dataset") dataset = map_dataset();
  long major_faults = 0;
  std::vector<pthread_t> spinners(m == "crowded_cpu" ? 4 : 0);
  g_spin.store(true);
  for (pthread_t& t : spinners) CHECK(pthread_create(&t, nullptr, Spinner, nullptr) == 0);

  const int n = static_cast<int>(kStateBytes / sizeof(float));
  float* x = nullptr;
  CUDA_CHECK(cudaMalloc(&x, kStateBytes));
  CUDA_CHECK(cudaMemset(x, 0, kStateBytes));
  double planted = 0, t_start = NowMs();
  for (int step = 0; step < o.steps; ++step) {
    train_step<<<n / 256, 256>>>(x, n);
    CUDA_CHECK(cudaGetLastError());
    if (m == "signal_handler") {
      g_syncing.store(step + 1);
      CUDA_CHECK(cudaDeviceSynchronize());
      g_syncing.store(0);
      continue;
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    // Every other step for the checkpoints, every step for the rest.
    const bool checkpoint_step = step % 2 == 1;
    const double t0 = NowMs();
    if (m == "mmap_ckpt" && checkpoint_step) {
      checkpoint_through_mapping(x);
    } else if (m == "copy_ckpt" && checkpoint_step) {
      copy_checkpoint("last.ckpt", "best.pth", false);
    } else if (m == "sendfile_ckpt" && checkpoint_step) {
      copy_checkpoint("last.ckpt", "archive.ckpt", true);
    } else if (m == "atomic_save" && checkpoint_step) {
      save_atomically(state);
    } else if (m == "resume_state" && checkpoint_step) {
      WriteFile("resume.dat", state);
    } else if (m == "dir_logs") {
      append_metrics(metrics, step, work_ms);
    } else if (m == "tcp_ranks") {
      exchange_gradients(rank_sock, grads);
    } else if (m == "http_fetch") {
      fetch_shard(o.port);
    } else if (m == "stdin_feed") {
      read_record(record);
    } else if (m == "child_tool") {
      run_tool(o.tool, static_cast<int>(work_ms));
    } else if (m == "system_tool") {
      run_tool_with_system(o.tool, static_cast<int>(work_ms));
    } else if (m == "child_compiler" && checkpoint_step) {
      recompile(o.tool, static_cast<int>(work_ms));
    } else if (m == "cpu_augment") {
      augment_on_cpu(image, work_ms);
    } else if (m == "crowded_cpu") {
      augment_on_cpu(image, work_ms / 4);
    } else if (m == "mapped_dataset") {
      const long before = MajorFaults();
      if (read_mapped_shard(dataset, step % 2) != 3L * (kShardBytes / 4096)) return 3;
      major_faults += MajorFaults() - before;
    } else if (!checkpoint_step) {
    } else {
      fprintf(stderr, "identity_shapes: unknown mode %s\n", m.c_str());
      return 2;
    }
    // cpu_augment plants CPU time (on a loaded machine its wall time also holds the waits for a
    // CPU, which the report names apart).
    planted += m == "cpu_augment" ? work_ms : NowMs() - t0;
    if (m == "mapped_dataset") drop_shard(dataset, step % 2);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  g_spin.store(false);
  for (pthread_t t : spinners) pthread_join(t, nullptr);
  if (m == "signal_handler") {
    g_syncing.store(-1);
    pthread_join(signaller, nullptr);
    planted = g_handler_ms.load();
  }
  if (rank_sock >= 0) {
    shutdown(rank_sock, SHUT_WR);
    close(rank_sock);
    int status = 0;
    CHECK(waitpid(rank1, &status, 0) == rank1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  if (metrics >= 0) close(metrics);
  CUDA_CHECK(cudaFree(x));
  if (dataset.fd >= 0) {
    munmap(const_cast<char*>(dataset.base), 2 * kShardBytes);
    close(dataset.fd);
    printf("identity_shapes %s: major_faults=%ld\n", m.c_str(), major_faults);
  }
  printf("identity_shapes %s: fds=%d foreign_signals=%d\n", m.c_str(), OpenDescriptors(),
         g_foreign_signals.load());
  printf("identity_shapes %s: %d steps in %.1f ms, planted_ms=%.1f\n", m.c_str(), o.steps,
         NowMs() - t_start, planted);
  return 0;
}
