#include "analyzer/cli/temporary_paths.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace idlescope {
namespace {

constexpr int kSlots = 8;
enum SlotState : int { kFree, kFilling, kReady };

struct Slot {
  std::atomic<int> state{kFree};
  bool directory = false;
  char path[PATH_MAX] = {};
};

Slot g_slots[kSlots];

// Threads making a path that is not registered yet (MakingPath), and whether a handler is
// removing the paths: a thread sees the one or the handler the other (both sequentially
// consistent), so no path is made after the handler removed the registered ones.
std::atomic<int> g_making{0};
std::atomic<bool> g_ending{false};

constexpr int kEnding[] = {SIGHUP,  SIGINT,    SIGQUIT, SIGABRT,   SIGUSR1, SIGUSR2, SIGALRM,
                           SIGTERM, SIGSTKFLT, SIGXCPU, SIGVTALRM, SIGPROF, SIGIO,   SIGPWR};

template <typename Fn>
void ForEachEndingSignal(Fn&& fn) {
  for (int sig : kEnding) fn(sig);
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) fn(sig);
}

// While a path is made and registered, the ending signals wait in this thread, and a handler
// running in another thread waits for the registration (RemoveAndDie): a signal that comes
// meanwhile removes the path rather than leave it behind.
class MakingPath {
 public:
  MakingPath() {
    sigset_t ending;
    sigemptyset(&ending);
    ForEachEndingSignal([&](int sig) { sigaddset(&ending, sig); });
    pthread_sigmask(SIG_BLOCK, &ending, &saved_);
    g_making.fetch_add(1);
  }
  // False when a handler is removing the paths (the process is ending): make none.
  bool allowed() const { return !g_ending.load(); }
  ~MakingPath() {
    const int saved_errno = errno;
    g_making.fetch_sub(1);
    pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
    errno = saved_errno;
  }
  MakingPath(const MakingPath&) = delete;
  MakingPath& operator=(const MakingPath&) = delete;

 private:
  sigset_t saved_;
};

bool IsDotOrDotDot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

// `dir`'s files, then `dir`. getdents64 rather than readdir, which allocates. A map thread may
// still be creating its summary while this runs: the directory is listed again until it can be
// removed (a few rounds; a thread that goes on creating files after that is stopped by the
// signal's default action in a moment).
void RemoveDirectoryOfFiles(const char* dir) {
  for (int round = 0; round < 16; ++round) {
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    alignas(struct dirent64) char buffer[4096];
    for (;;) {
      const long n = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        // struct dirent64 is the kernel's linux_dirent64.
        const auto* entry = reinterpret_cast<const struct dirent64*>(buffer + at);
        at += entry->d_reclen;
        if (!IsDotOrDotDot(entry->d_name)) unlinkat(fd, entry->d_name, 0);
      }
    }
    close(fd);
    if (rmdir(dir) == 0 || errno != ENOTEMPTY) return;
  }
}

void RemoveAndDie(int sig) {
  const int saved_errno = errno;
  // A path being made in another thread is registered in a few system calls; waited for a
  // bounded while (a thread stopped for good must not hold the end back).
  g_ending.store(true);
  for (int i = 0; i < 100000 && g_making.load() > 0; ++i) sched_yield();
  RemoveTemporaryPaths();
  // The signal's default action, as without this handler: raised again, it is delivered when
  // the handler returns (it is blocked until then).
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(sig, &default_action, nullptr);
  raise(sig);
  errno = saved_errno;
}

// Registers `path` (a file, or a directory of files) for removal; its slot, or -1 when the
// table is full. Only as part of making the path (MakingPath).
int RegisterTemporaryPath(const std::string& path, bool directory) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].directory = directory;
    g_slots[i].state.store(kReady, std::memory_order_release);
    return i;
  }
  return -1;
}

}  // namespace

void RemoveTemporaryPathsOnSignals() {
  struct sigaction handler = {};
  handler.sa_handler = RemoveAndDie;
  sigemptyset(&handler.sa_mask);
  auto install = [&](int sig) {
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) return;
    sigaction(sig, &handler, nullptr);
  };
  ForEachEndingSignal(install);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN);
}

bool MakeTemporaryDirectory(std::string& pattern, int* slot) {
  MakingPath making;
  if (!making.allowed()) {
    errno = EINTR;
    return false;
  }
  if (mkdtemp(pattern.data()) == nullptr) return false;
  *slot = RegisterTemporaryPath(pattern, true);
  return true;
}

int MakeTemporaryFile(std::string& pattern, int* slot) {
  MakingPath making;
  if (!making.allowed()) {
    errno = EINTR;
    return -1;
  }
  const int fd = mkostemp(pattern.data(), O_CLOEXEC);
  if (fd >= 0) *slot = RegisterTemporaryPath(pattern, false);
  return fd;
}

void ForgetTemporaryPath(int slot) {
  if (slot >= 0 && slot < kSlots) g_slots[slot].state.store(kFree, std::memory_order_release);
}

void RemoveTemporaryPaths() {
  for (Slot& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) != kReady) continue;
    if (slot.directory) {
      RemoveDirectoryOfFiles(slot.path);
    } else {
      unlink(slot.path);
    }
  }
}

}  // namespace idlescope
