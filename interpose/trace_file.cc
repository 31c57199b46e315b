// The trace file: identity, descriptor placement and protection, header, creation, writes.
#include "interpose/trace_file.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

#include "interpose/python/pystacks.h"
#include "interpose/recorder.h"

#ifndef IDLESCOPE_VERSION
#define IDLESCOPE_VERSION "0.0.0"
#endif

namespace idlescope {

namespace detail {
std::atomic<int> g_program_trace_fd{-1};
__thread bool t_own_fd_table __attribute__((tls_model("initial-exec"))) = false;
}  // namespace detail

namespace trace_file {
namespace {

// Never destroyed (hooks may run after static destructors). Under the flush lock, except `pid`
// and `origin`, written before any thread but the one writing them can read them (Init, and the
// fork child, where the forking thread is alone).
struct TraceFile {
  const internal::Config* config = nullptr;
  std::string* out_dir = nullptr;  // IDLESCOPE_OUT, made absolute by Open
  std::string* path = nullptr;     // the file's, for reopening it and for messages
  uint64_t ring_bytes = 0;         // Header.config.buffer_bytes
  uint32_t pid = 0;
  uint32_t parent_pid = 0;  // a forked child's parent (Header.ppid)
  trace::Origin origin = trace::kOriginPreload;
  int program_fd = -1;  // the file in the program's table (shared-table fallback), or -1
  int writer_fd = -1;   // the same file in the writer's own table (TakeOwnFdTable), or -1
  int flush_fd = -1;    // threadless: the file, opened by the flushing thread for one flush
  dev_t dev = 0;
  ino_t ino = 0;
  uint64_t bytes = 0;
  uint64_t footer_at = 0;  // file size before the footer (exec support)
  bool closed = true;      // no file open yet, or footer written: nothing goes into the file
  bool lost_said = false;  // the file was lost or reopened, and that was said
};
static_assert(std::is_trivially_destructible_v<TraceFile>);
constinit TraceFile g_file;

// Our own closes of our own descriptors: the raw syscall, since `close` binds to our hook, which
// refuses to close the trace file.
void CloseOwnFd(int fd) { syscall(SYS_close, fd); }

void SetProgramFd(int fd) {
  g_file.program_fd = fd;
  detail::g_program_trace_fd.store(fd, std::memory_order_relaxed);
}

// The trace file's descriptor in the calling thread's table: the writer's own once it has one.
int& TraceFd() { return detail::t_own_fd_table ? g_file.writer_fd : g_file.program_fd; }

// The file is in the writer's table: no other thread can write it.
bool FileInWriterTable() { return g_file.writer_fd >= 0 && g_file.program_fd < 0; }

bool FdStillOurs() {
  if (FileInWriterTable()) return detail::t_own_fd_table;
  struct stat st;
  int fd = TraceFd();
  if (fd < 0 || fstat(fd, &st) != 0) return false;
  return st.st_dev == g_file.dev && st.st_ino == g_file.ino;
}

// Moves `fd` above the range programs use, so a program that dup2()s onto low numbers or opens
// many files does not meet it (heaptrack and uftrace protect their fd the same way). Only for the
// shared-table fallback: in the writer's own table no number is the program's.
int MoveFdHigh(int fd) {
  struct rlimit rl;
  long floor = 1000;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      static_cast<long>(rl.rlim_cur) <= floor + 16) {
    floor = static_cast<long>(rl.rlim_cur) * 3 / 4;
  }
  if (floor <= fd) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(floor));
  if (high < 0) return fd;
  CloseOwnFd(fd);
  return high;
}

// `fd` becomes the trace file's descriptor in the calling thread's table: the writer's own, or
// (shared table) the program's, moved high.
void AdoptFd(int fd) {
  if (detail::t_own_fd_table) {
    g_file.writer_fd = fd;
    SetProgramFd(-1);
  } else {
    SetProgramFd(MoveFdHigh(fd));
    g_file.writer_fd = -1;
  }
  struct stat st;
  if (fstat(TraceFd(), &st) == 0) {
    g_file.dev = st.st_dev;
    g_file.ino = st.st_ino;
  }
}

// Stops tracing for good (the file cannot be written): said once.
void StopTracing(const std::string& why) {
  detail::g_recorder_active.store(false, std::memory_order_relaxed);
  g_file.closed = true;
  if (!g_file.lost_said) {
    g_file.lost_said = true;
    internal::Say(why.c_str());
  }
}

// The file Create made, opened again (O_APPEND), checked to be that file: a descriptor, or -1 with
// errno set.
int OpenAgain() {
  int fd = open(g_file.path->c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != g_file.dev || st.st_ino != g_file.ino)) {
    CloseOwnFd(fd);
    fd = -1;
    errno = ESTALE;
  }
  return fd;
}

// Shared-table fallback: the program closed (or replaced) our fd. Reopen the file (never through a
// symlink, and only if it is still the same file) in append mode and go on, or stop.
bool RecoverFd() {
  if (FileInWriterTable()) {  // a program thread: it has no descriptor of the file to recover
    return false;
  }
  const std::string& path = *g_file.path;
  int fd = OpenAgain();
  if (fd < 0) {
    StopTracing("the program closed the trace file descriptor and " + path +
                " cannot be reopened (" + strerror(errno) + "); tracing stopped");
    return false;
  }
  AdoptFd(fd);
  if (!g_file.lost_said) {
    g_file.lost_said = true;
    internal::Say(
        ("the program closed the trace file descriptor; reopened " + path + " and went on")
            .c_str());
  }
  return true;
}

// A write of ours on a program thread (the writer blocks every signal): a file that reaches
// RLIMIT_FSIZE makes the kernel send SIGXFSZ to the writing thread, whose default action would
// kill the program for our write. Held pending meanwhile, and taken back if our write raised it.
class XfszHeld {
 public:
  XfszHeld() {
    sigemptyset(&xfsz_);
    sigaddset(&xfsz_, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz_, &saved_);
    sigset_t pending;
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
  }
  ~XfszHeld() {
    sigset_t pending;
    if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ)) {
      const timespec now{0, 0};
      sigtimedwait(&xfsz_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  XfszHeld(const XfszHeld&) = delete;
  XfszHeld& operator=(const XfszHeld&) = delete;

 private:
  sigset_t xfsz_, saved_;
  bool was_pending_ = false;
};

// write(2) until done; false (errno set) on an error other than EINTR.
bool WriteFully(int fd, const uint8_t* p, size_t n) {
  std::optional<XfszHeld> held;
  if (!detail::t_own_fd_table) held.emplace();
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A thread without a descriptor of the file (a process without a writer thread): the one opened
// for this flush (BeginWrites), or the file opened for this write and closed again.
bool WriteTransient(const uint8_t* p, size_t n) {
  const std::string& path = *g_file.path;
  int fd = g_file.flush_fd >= 0 ? g_file.flush_fd : OpenAgain();
  if (fd < 0) {
    StopTracing("cannot open " + path + " (" + strerror(errno) + "); tracing stopped");
    return false;
  }
  bool written = WriteFully(fd, p, n);
  int err = errno;
  if (fd != g_file.flush_fd) CloseOwnFd(fd);
  if (!written) {
    StopTracing("cannot write " + path + ": " + strerror(err) + "; tracing stopped");
    return false;
  }
  g_file.bytes += n;
  return true;
}

// No descriptor of the file anywhere: a process without a writer thread.
bool NoDescriptor() { return g_file.program_fd < 0 && g_file.writer_fd < 0; }

bool WriteAll(const uint8_t* p, size_t n) {
  if (!WriteFully(TraceFd(), p, n)) {
    StopTracing("cannot write " + *g_file.path + ": " + strerror(errno) + "; tracing stopped");
    return false;
  }
  g_file.bytes += n;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Header.

std::optional<int32_t> EnvInt(StartVar var) {
  const char* v = StartEnv(var);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < INT32_MIN || n > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(n);
}

// Rank, local rank and world size from the first launcher whose rank variable is set
// (trace.proto, Header.rank). kCount: the launcher does not set that one.
void SetRank(trace::Header* h) {
  struct Launcher {
    StartVar rank, local_rank, size;
  };
  constexpr Launcher kLaunchers[] = {
      {StartVar::kRank, StartVar::kLocalRank, StartVar::kWorldSize},
      {StartVar::kOmpiRank, StartVar::kOmpiLocalRank, StartVar::kOmpiSize},
      {StartVar::kPmixRank, StartVar::kCount, StartVar::kCount},
      {StartVar::kPmiRank, StartVar::kMpiLocalRankId, StartVar::kPmiSize},
      {StartVar::kSlurmProcid, StartVar::kSlurmLocalId, StartVar::kSlurmNtasks},
  };
  for (const Launcher& l : kLaunchers) {
    std::optional<int32_t> rank = EnvInt(l.rank);
    if (!rank) continue;
    h->rank = rank;
    if (l.local_rank != StartVar::kCount) h->local_rank = EnvInt(l.local_rank);
    if (l.size != StartVar::kCount) h->world_size = EnvInt(l.size);
    h->rank_variable = StartVarName(l.rank);
    return;
  }
}

uint64_t ProcessStartNs() {
  std::string stat;
  if (!internal::ReadFile("/proc/self/stat", &stat)) return 0;
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  // Fields after the command name start at field 3 (state); starttime is field 22, in clock
  // ticks since boot, measured on CLOCK_BOOTTIME (proc(5)). Map it onto CLOCK_MONOTONIC.
  const char* p = stat.c_str() + paren + 2;
  for (int field = 3; field < 22 && *p; ++field) {
    p = strchr(p, ' ');
    if (p == nullptr) return 0;
    ++p;
  }
  unsigned long long ticks = strtoull(p, nullptr, 10);
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return 0;
  timespec mono, boot;
  ReadClock(CLOCK_MONOTONIC, &mono);
  ReadClock(CLOCK_BOOTTIME, &boot);
  int64_t boot_minus_mono =
      (boot.tv_sec - mono.tv_sec) * 1000000000ll + (boot.tv_nsec - mono.tv_nsec);
  int64_t start_boot = static_cast<int64_t>(ticks) * (1000000000ll / hz);
  int64_t start_mono = start_boot - boot_minus_mono;
  return start_mono > 0 ? static_cast<uint64_t>(start_mono) : 0;
}

trace::Header BuildHeader() {
  trace::Header h;
  h.pid = g_file.pid;
  h.ppid =
      g_file.origin == trace::kOriginFork ? g_file.parent_pid : static_cast<uint32_t>(getppid());
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) h.host = host;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));
  if (n > 0)
    h.exe = redact::Path(std::string_view(exe, static_cast<size_t>(n)), redact::PathKind::kProgram);
  std::string cmdline;
  if (internal::ReadFile("/proc/self/cmdline", &cmdline)) {
    if (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    cmdline = redact::Argv(cmdline);
    size_t pos = 0;
    while (pos < cmdline.size()) {
      size_t end = cmdline.find('\0', pos);
      if (end == std::string::npos) end = cmdline.size();
      h.cmdline.push_back(cmdline.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  SetRank(&h);
  h.slurm_procid = EnvInt(StartVar::kSlurmProcid);
  timespec mono, real;
  ReadClock(CLOCK_MONOTONIC, &mono);
  ReadClock(CLOCK_REALTIME, &real);
  h.clock.monotonic_ns = mono.tv_sec * 1000000000ull + mono.tv_nsec;
  h.clock.realtime_ns = real.tv_sec * 1000000000ull + real.tv_nsec;
  h.origin = g_file.origin;
  h.tool_version = IDLESCOPE_VERSION;
  if (const char* v = StartEnv(StartVar::kCudaVisibleDevices)) h.cuda_visible_devices = v;
  h.process_start_ns = ProcessStartNs();
  h.main_tid = g_file.pid;
  std::string boot_id;
  if (internal::ReadFile("/proc/sys/kernel/random/boot_id", &boot_id)) {
    h.boot_id = internal::Trim(boot_id);
  }
  const internal::Config& config = *g_file.config;
  h.config.flush_interval_ms = config.flush_ms;
  h.config.buffer_bytes = g_file.ring_bytes;
  h.config.stack_depth = config.stack_depth;
  h.config.families = config.families;
  if (redact::Paths()) h.config.redacted.push_back("paths");
  if (redact::Cmdline()) h.config.redacted.push_back("cmdline");
  if (redact::Secrets()) h.config.redacted.push_back("secrets");
  h.config.python_version = python::Version();
  // The sampler runs on the writer thread, once one runs with a descriptor table of its own
  // (sampler.h).
  h.config.sample_hz = config.sample_hz;
  return h;
}

// ---------------------------------------------------------------------------------------------
// Creating the file.

// mkdir -p. A directory that exists (every process after the job's first) costs one stat and no
// mkdir. `may_create` false (under a seccomp filter, whose worker may be killed at a mkdir it never
// makes itself): a missing directory is an error (ENOENT), not made.
bool MakeDirs(const std::string& dir, bool may_create) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return true;
  if (!may_create) {
    errno = ENOENT;
    return false;
  }
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) return false;
  }
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Whether the process runs under a seccomp filter (a sandbox that exec'd its worker; every process
// of a container). Nothing can ask a filter what it allows without risking what it does to a call
// it does not list, so the file is then made with the calls any program that writes a file makes
// (open O_CREAT, write): no mkdir (the job's first process, or `idlescope run`, made the
// directory), no O_TMPFILE and linkat. PR_GET_SECCOMP answers 2 under a filter; an error (a filter
// that refuses the option, a kernel without seccomp) counts as one. The option is prctl's, which
// the clock already calls at load (call_clock.cc, PR_GET_TSC).
bool UnderSeccompFilter() { return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0; }

// Creates the first free name of <base>.idlescope, <base>-1.idlescope, ... (exec keeps the pid)
// holding `header`, such that the name never appears without it: a process killed at start, or a
// full disk, leaves no empty file behind. O_TMPFILE (Linux 3.11; ext4, xfs, btrfs, tmpfs) makes an
// unnamed file that linkat() names once the header is in; elsewhere (NFS, FUSE, or !unnamed_first:
// under a seccomp filter) the name is created O_EXCL and the header written at once, and the file
// removed again if that fails.
// O_EXCL|O_NOFOLLOW: a name someone else made (a symlink planted in a shared /tmp) is never
// opened, only skipped. Mode 0600 (less what the umask takes): a trace holds the job's paths and
// command lines, for its owner to read (chmod to share it).
// Returns the descriptor, or -1 with errno set.
int CreateTraceFile(const std::string& dir, const std::string& base, const wire::Buffer& header,
                    bool unnamed_first, std::string* path) {
  auto name = [&](int i) { return base + (i == 0 ? "" : "-" + std::to_string(i)) + ".idlescope"; };
  // O_APPEND: in the shared-table fallback the program's descriptor and the writer's may end up
  // two descriptions of the file (RecoverFd); neither may write over the other's packets.
  int fd =
      unnamed_first ? open(dir.c_str(), O_TMPFILE | O_WRONLY | O_APPEND | O_CLOEXEC, 0600) : -1;
  if (fd >= 0) {
    if (!WriteFully(fd, header.data(), header.size())) {
      int err = errno;
      CloseOwnFd(fd);
      errno = err;
      return -1;
    }
    // The writer's own descriptor: /proc/thread-self/fd names this thread's table (/proc/self is
    // the thread group leader's).
    char link[64];
    snprintf(link, sizeof(link), "/proc/thread-self/fd/%d", fd);
    for (int i = 0; i < 10000; ++i) {
      std::string candidate = name(i);
      if (linkat(AT_FDCWD, link, AT_FDCWD, candidate.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        *path = candidate;
        return fd;
      }
      if (errno != EEXIST) break;
    }
    int err = errno;
    CloseOwnFd(fd);
    if (err == EEXIST) {
      errno = err;
      return -1;
    }
    // No /proc, or a filesystem that refuses the link: the O_EXCL way below.
  }
  for (int i = 0; i < 10000; ++i) {
    std::string candidate = name(i);
    fd = open(candidate.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      return -1;
    }
    if (!WriteFully(fd, header.data(), header.size())) {
      int err = errno;
      unlink(candidate.c_str());
      CloseOwnFd(fd);
      errno = err;
      return -1;
    }
    *path = candidate;
    return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

void Init(const internal::Config* config, uint64_t ring_bytes) {
  g_file.config = config;
  g_file.out_dir = new std::string(config->out_dir);
  g_file.path = new std::string();
  g_file.ring_bytes = ring_bytes;
  g_file.pid = static_cast<uint32_t>(getpid());
  // CUDA_INJECTION64_PATH loads us with dlopen, without LD_PRELOAD naming us.
  const char* preload = getenv("LD_PRELOAD");
  g_file.origin = preload != nullptr && strstr(preload, "idlescope") != nullptr
                      ? trace::kOriginPreload
                      : trace::kOriginInjection;
}

uint32_t Pid() { return g_file.pid; }
trace::Origin Origin() { return g_file.origin; }

// Gives the writer a descriptor table of its own, empty: the trace file is opened into it next
// (Open), so the program's table never holds a descriptor of ours. Two reasons besides that one.
// While a second thread shares the program's table, the kernel takes a reference on the file and
// its f_pos_lock on every read/write of the program (fdget_pos; ~35 ns per call on the build VMs,
// 5% of a 4 KB tmpfs write): a single-threaded program traced by us would pay that on every call,
// which an untraced one does not. And the copies of the program's descriptors are closed at once,
// so we never hold a pipe or socket open after the program closed it (a reader waiting for EOF
// gets it). close_range (Linux 5.9) unshares and closes in one call; a raw syscall, since the
// close_range hook would clear the program's fd table entries. Without it (older kernel, seccomp)
// the table stays shared: slower, and the trace file sits in the program's table (MoveFdHigh,
// IsTraceFd).
void TakeOwnFdTable() {
  if (syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) == 0) detail::t_own_fd_table = true;
}

// The host name as part of the file's name: a host may be named anything sethostname(2) takes
// (a container's `../../x`, control characters), and the file must stay in IDLESCOPE_OUT. What is
// not a letter, digit, '-' or '_' becomes '_' (dots too: no `..`); the header keeps the name as
// it is.
std::string HostForFileName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string name(host);
  for (char& c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_';
    if (!keep) c = '_';
  }
  return name.empty() ? "host" : name;
}

// On the starting thread (Init, or a forked child's atfork handler).
bool Create() {
  // Absolute, so that reopening the file still finds it after the program's chdir().
  std::string& dir = *g_file.out_dir;
  if (dir[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) != nullptr) {
      dir = std::string(cwd) + (dir == "." ? "" : "/" + dir);
    }
  }
  const bool filtered = UnderSeccompFilter();
  if (!MakeDirs(dir, !filtered)) {
    internal::Say(("cannot create output directory " + dir + ": " + strerror(errno) +
                   (filtered ? " (not made under a seccomp filter)" : "") + "; not tracing")
                      .c_str());
    return false;
  }
  wire::Buffer header;
  trace::WriteHeaderPacket(header, BuildHeader());
  std::string path;
  int fd = CreateTraceFile(dir, dir + "/" + HostForFileName() + "-" + std::to_string(g_file.pid),
                           header, !filtered, &path);
  if (fd < 0) {
    internal::Say(
        ("cannot create a trace file in " + dir + ": " + strerror(errno) + "; not tracing")
            .c_str());
    return false;
  }
  *g_file.path = path;
  struct stat st;
  if (fstat(fd, &st) == 0) {
    g_file.dev = st.st_dev;
    g_file.ino = st.st_ino;
  }
  CloseOwnFd(fd);
  SetProgramFd(-1);
  g_file.writer_fd = -1;
  g_file.bytes = header.size();
  g_file.closed = false;
  g_file.lost_said = false;
  return true;
}

// On the writer thread, after TakeOwnFdTable (the descriptor goes into the writer's own table, or,
// where it has none, into the program's, moved high).
bool AdoptForWriter() {
  if (g_file.path->empty()) return false;
  if (!NoDescriptor()) return true;
  int fd = OpenAgain();
  if (fd < 0) {
    StopTracing("cannot open " + *g_file.path + " (" + strerror(errno) + "); tracing stopped");
    return false;
  }
  AdoptFd(fd);
  return true;
}

bool Closed() { return g_file.closed; }

WritesBegin BeginWrites() {
  if (g_file.closed || !NoDescriptor() || g_file.flush_fd >= 0) return WritesBegin::kReady;
  g_file.flush_fd = OpenAgain();
  if (g_file.flush_fd >= 0) return WritesBegin::kReady;
  if (errno == EMFILE || errno == ENFILE) return WritesBegin::kNoDescriptor;
  StopTracing("cannot open " + *g_file.path + " (" + strerror(errno) + "); tracing stopped");
  return WritesBegin::kReady;
}

void EndWrites() {
  if (g_file.flush_fd >= 0) CloseOwnFd(g_file.flush_fd);
  g_file.flush_fd = -1;
}

bool Write(const wire::Buffer& b) {
  if (g_file.closed || b.empty()) return !g_file.closed;
  if (NoDescriptor()) return WriteTransient(b.data(), b.size());
  if (!FdStillOurs()) {
    if (!RecoverFd()) return false;
    trace::Notice n{NowNs(), static_cast<uint32_t>(NoticeSeverity::kWarning), "trace_fd_closed",
                    "the program closed the trace file descriptor; the file was reopened "
                    "(events of the last interval may be missing)"};
    wire::Buffer nb;
    trace::WriteNoticePacket(nb, n);
    if (!WriteAll(nb.data(), nb.size())) return false;
  }
  return WriteAll(b.data(), b.size());
}

void WriteFooter(trace::Footer footer) {
  if (g_file.closed) return;
  g_file.footer_at = g_file.bytes;
  footer.bytes = g_file.bytes;
  wire::Buffer b;
  trace::WriteFooterPacket(b, footer);
  Write(b);
  g_file.closed = true;
}

void RemoveFooter() {
  if (!g_file.closed || g_file.lost_said) return;
  const bool transient = NoDescriptor();
  int fd = transient ? open(g_file.path->c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW) : TraceFd();
  if (fd >= 0 && ftruncate(fd, g_file.footer_at) == 0) {
    g_file.bytes = g_file.footer_at;
    g_file.closed = false;
  }
  if (transient && fd >= 0) CloseOwnFd(fd);
}

void MoveProgramFdAwayFrom(int fd) {
  if (g_file.program_fd != fd) return;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
  SetProgramFd(moved);  // -1 if no number was free: the next write recovers or stops
  CloseOwnFd(fd);
}

void ResetInChild() {
  g_file.closed = true;  // nothing is written until the child's own file is open
  g_file.parent_pid = g_file.pid;
  g_file.pid = static_cast<uint32_t>(getpid());
  g_file.origin = trace::kOriginFork;
  if (g_file.program_fd >= 0) CloseOwnFd(g_file.program_fd);  // the parent's file stays its own
  SetProgramFd(-1);
  g_file.writer_fd = -1;  // the parent writer's table is not the child's
  g_file.flush_fd = -1;   // none: the fork handlers hold the flush lock
}

}  // namespace trace_file

// ---------------------------------------------------------------------------------------------
// Public API (recorder.h).

int TraceFdIn(unsigned first, unsigned last) {
  int fd = detail::g_program_trace_fd.load(std::memory_order_relaxed);
  return fd >= 0 && static_cast<unsigned>(fd) >= first && static_cast<unsigned>(fd) <= last ? fd
                                                                                            : -1;
}

}  // namespace idlescope
