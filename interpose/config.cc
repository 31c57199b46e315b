// IDLESCOPE_* environment variables. getenv only: this runs in the library constructor, before
// the program's main, and must not allocate through anything hooked.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "interpose/hooks/process_env.h"
#include "interpose/recorder.h"
#include "interpose/recorder_internal.h"

namespace idlescope::internal {

namespace {

constexpr const char* kFamilyNames[] = {"cuda", "cupti", "nccl", "io", "net", "proc"};
constexpr uint32_t kAllFamilies = (1u << static_cast<uint32_t>(Family::kCount)) - 1;
static_assert(sizeof(kFamilyNames) / sizeof(kFamilyNames[0]) ==
              static_cast<size_t>(Family::kCount));

bool g_quiet = false;

// Who may write idlescope's own lines to stderr (docs/architecture.md, "Messages"). A traced
// program's stderr is its data as much as its stdout is (a child's captured stderr, a file it
// reopened as fd 2), so: only the job's first process, at start (before the program runs, in
// the library constructor), and after start only under `idlescope run`, while the process's
// fd 2 is still the file idlescope's own stderr was. IDLESCOPE_STDERR=PID:DEV:INO says which:
// `idlescope run` sets it (its command's pid, its own stderr's device and inode); a process that
// finds none is the job's first and hands its pid on with 0:0 ("at start only") to the programs
// it execs (interpose/hooks/process.cc).
struct StderrPolicy {
  uint32_t pid = 0;  // the only process that may print
  uint64_t dev = 0, ino = 0;
};
StderrPolicy g_stderr;
std::atomic<bool> g_starting{false};
// The start is the library constructor's thread until it returns, and the writer until it tried
// the file (StartupDone). A message from any other moment is not "at start", even while the writer
// has not run yet: the program's first CUDA call, which starts CUPTI, can come before it.
thread_local bool t_constructor = false;
std::vector<std::string>* g_warnings = nullptr;  // ParseConfig's, for Config::warnings

void Warn(const std::string& text) {
  Say(text.c_str());
  if (g_warnings != nullptr) g_warnings->push_back(text);
}

bool ParseStderrPolicy(const char* v, StderrPolicy* out) {
  unsigned long long pid = 0, dev = 0, ino = 0;
  int end = 0;
  if (v == nullptr || sscanf(v, "%llu:%llu:%llu%n", &pid, &dev, &ino, &end) != 3 ||
      v[end] != '\0' || pid == 0 || pid > UINT32_MAX) {
    return false;
  }
  *out = {static_cast<uint32_t>(pid), dev, ino};
  return true;
}

// The program's stderr, for a thread with a descriptor table of its own (the writer, which keeps
// no copy of it: a copy would hold a pipe open after the program closed it): the same open file,
// taken from the program's table with pidfd_getfd (Linux 5.6), else reopened through /proc. -1 if
// neither works (the message is lost). /proc/self is the thread group leader, whose table is the
// program's.
int ProgramStderr() {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd >= 0) {
    int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, STDERR_FILENO, 0));
    syscall(SYS_close, pidfd);
    if (fd >= 0) return fd;
  }
  return open("/proc/self/fd/2", O_WRONLY | O_APPEND | O_CLOEXEC);
}

// Unsigned integer in [lo, hi]; anything else keeps the default, with one warning.
uint32_t ParseNumber(const char* name, uint32_t def, uint32_t lo, uint32_t hi) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return def;
  char* end = nullptr;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi || v[0] == '-') {
    Warn(std::string(name) + "=" + v + " is not a number in [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]; using " + std::to_string(def));
    return def;
  }
  return static_cast<uint32_t>(n);
}

// Comma list of family names; unknown names are reported and ignored.
uint32_t ParseFamilies(const char* name, const char* v) {
  uint32_t mask = 0;
  std::string list(v);
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    bool known = false;
    for (uint32_t i = 0; i < static_cast<uint32_t>(Family::kCount); ++i) {
      if (item == kFamilyNames[i]) {
        mask |= 1u << i;
        known = true;
      }
    }
    if (!known) {
      Warn(std::string(name) + ": unknown family '" + item +
           "' ignored (known: cuda,cupti,nccl,io,net,proc)");
    }
  }
  return mask;
}

}  // namespace

const char* FamilyName(uint32_t family) {
  return family < static_cast<uint32_t>(Family::kCount) ? kFamilyNames[family] : "?";
}

// Whether a line may go to this process's stderr now, and on which descriptor of the calling
// thread's table (-1: none). *close_after: the descriptor was opened for this (the writer's).
int StderrForMessage(bool* close_after) {
  *close_after = false;
  if (g_quiet || g_stderr.pid == 0 || static_cast<uint32_t>(getpid()) != g_stderr.pid) return -1;
  bool starting = g_starting.load(std::memory_order_acquire) && (t_constructor || OwnFdTable());
  if (!starting && g_stderr.dev == 0 && g_stderr.ino == 0) return -1;
  int fd = STDERR_FILENO;
  if (OwnFdTable()) {  // the writer thread: its fd 2 is not the program's
    fd = ProgramStderr();
    if (fd < 0) return -1;
    *close_after = true;
  }
  if (!starting) {
    struct stat st;
    if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_dev) != g_stderr.dev ||
        static_cast<uint64_t>(st.st_ino) != g_stderr.ino) {
      if (*close_after) syscall(SYS_close, fd);
      return -1;
    }
  }
  return fd;
}

void Say(const char* text) {
  int saved = errno;
  bool close_after = false;
  int fd = StderrForMessage(&close_after);
  if (fd < 0) {
    errno = saved;
    return;
  }
  char buf[512];
  size_t n = 0;
  auto put = [&](const char* s) {
    size_t len = strlen(s);
    if (len > sizeof(buf) - 1 - n) len = sizeof(buf) - 1 - n;
    memcpy(buf + n, s, len);
    n += len;
  };
  put("idlescope: ");
  put(text);
  put("\n");
  ssize_t r;
  do {
    r = write(fd, buf, n);
  } while (r < 0 && errno == EINTR);
  if (close_after) syscall(SYS_close, fd);
  errno = saved;
}

constexpr const char* kStartVarNames[] = {"RANK",
                                          "LOCAL_RANK",
                                          "WORLD_SIZE",
                                          "OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "OMPI_COMM_WORLD_SIZE",
                                          "PMIX_RANK",
                                          "PMI_RANK",
                                          "MPI_LOCALRANKID",
                                          "PMI_SIZE",
                                          "SLURM_PROCID",
                                          "SLURM_LOCALID",
                                          "SLURM_NTASKS",
                                          "CUDA_VISIBLE_DEVICES",
                                          "IDLESCOPE_CUPTI_LIB",
                                          "IDLESCOPE_CUPTI_FLUSH_MS",
                                          "IDLESCOPE_CUPTI_BUFFER_MB"};
static_assert(sizeof(kStartVarNames) / sizeof(kStartVarNames[0]) ==
              static_cast<size_t>(StartVar::kCount));
// Never freed: readers may hold a value while a forked child copies the variables again (its one
// thread, in the atfork handler: no reader runs then); the previous copies are left behind.
const char* g_start_env[static_cast<size_t>(StartVar::kCount)] = {};

void StartupDone() { g_starting.store(false, std::memory_order_release); }

void ConstructorDone() { t_constructor = false; }

void CaptureStartEnv() {
  for (size_t i = 0; i < static_cast<size_t>(StartVar::kCount); ++i) {
    const char* v = getenv(kStartVarNames[i]);
    g_start_env[i] = v != nullptr && *v != '\0' ? strdup(v) : nullptr;
  }
}

Config ParseConfig() {
  CaptureStartEnv();
  Config c;
  g_warnings = &c.warnings;
  const char* quiet = getenv("IDLESCOPE_QUIET");
  c.quiet = quiet != nullptr && *quiet != '\0' && strcmp(quiet, "0") != 0;
  g_quiet = c.quiet;
  if (!ParseStderrPolicy(getenv("IDLESCOPE_STDERR"), &g_stderr)) {
    g_stderr = {static_cast<uint32_t>(getpid()), 0, 0};  // the job's first process
  }
  g_starting.store(true, std::memory_order_release);
  t_constructor = true;
  if (const char* out = getenv("IDLESCOPE_OUT"); out != nullptr && *out != '\0') c.out_dir = out;
  // At most 1 s between flushes: after a SIGKILL the file holds everything up to the last one.
  c.flush_ms = ParseNumber("IDLESCOPE_FLUSH_MS", 500, 1, 1000);
  c.buffer_kb = ParseNumber("IDLESCOPE_BUFFER_KB", 1024, 16, 1u << 20);
  c.stack_depth = ParseNumber("IDLESCOPE_STACK_DEPTH", 24, 0, 128);
  c.python_stacks = ParseNumber("IDLESCOPE_PYTHON_STACKS", 1, 0, 1) != 0;
  c.sample_hz = ParseNumber("IDLESCOPE_SAMPLE_HZ", 200, 0, 1000);
  c.sample_python_hz = ParseNumber("IDLESCOPE_SAMPLE_PYTHON_HZ", 50, 0, 1000);
  // Where the flushes run (writer.h): `auto`, a writer thread once the process issues device work;
  // `thread`, one from the start.
  if (const char* v = getenv("IDLESCOPE_WRITER"); v != nullptr && *v != '\0') {
    if (strcmp(v, "thread") == 0) {
      c.writer_at_start = true;
    } else if (strcmp(v, "auto") != 0) {
      Warn(std::string("IDLESCOPE_WRITER=") + v + " is not auto or thread; using auto");
    }
  }
  uint32_t mask = kAllFamilies;
  if (const char* v = getenv("IDLESCOPE_ENABLE"); v != nullptr && *v != '\0') {
    mask = ParseFamilies("IDLESCOPE_ENABLE", v);
  }
  if (const char* v = getenv("IDLESCOPE_DISABLE"); v != nullptr && *v != '\0') {
    mask &= ~ParseFamilies("IDLESCOPE_DISABLE", v);
  }
  c.family_mask = mask;
  if (const char* bad = redact::BadValue(); *bad != '\0') {
    Warn(std::string("IDLESCOPE_REDACT: unknown '") + bad + "' ignored (known: paths,cmdline,all)");
  }
  // Read by the process hooks themselves (process_env.h, captured before main); said here.
  if (const char* v = getenv("IDLESCOPE_CHILDREN"); v != nullptr && *v != '\0') {
    proc::ChildrenPolicy policy;
    if (!proc::ParseChildrenPolicy(v, &policy)) {
      Warn(std::string("IDLESCOPE_CHILDREN=") + v + " is not all, env or none; using all");
    }
  }
  for (uint32_t i = 0; i < static_cast<uint32_t>(Family::kCount); ++i) {
    if (mask & (1u << i)) c.families.push_back(kFamilyNames[i]);
  }
  g_warnings = nullptr;
  return c;
}

}  // namespace idlescope::internal

namespace idlescope {
const char* StartEnv(StartVar var) { return internal::g_start_env[static_cast<size_t>(var)]; }

const char* StartVarName(StartVar var) {
  return internal::kStartVarNames[static_cast<size_t>(var)];
}
}  // namespace idlescope
