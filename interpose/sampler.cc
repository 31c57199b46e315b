// The thread sampler (sampler.h).
#include "interpose/sampler.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <type_traits>

#include "interpose/python/pystacks.h"
#include "interpose/raw_syscall.h"

namespace idlescope::sampler {
namespace {

constexpr uint32_t kMaxThreads = 64;
// A run is cut after this long, so that its event reaches the file within about one flush.
constexpr uint64_t kMaxRunNs = 250'000'000;
// Runs ended and not yet flushed; past this many (a flush that cannot write) they are dropped.
constexpr uint32_t kMaxEnded = 2048;

enum Kind : uint8_t { kNone = 0, kOnCpu = 1, kRunnable = 2, kBlocked = 3 };

// A look at a thread: when, its CPU time and its time runnable waiting for a CPU so far.
struct Reading {
  uint64_t ns = 0, cpu = 0, wait = 0;
};
constexpr uint32_t kMaxDeferredLooks = 3;

// The innermost Python frames a look reads (LookAtPython): the line that computes, its callers.
constexpr int kPythonFrames = 4;
// The stacks a run's Python looks found, with how many looks found each; a fifth one counts
// nowhere.
constexpr uint32_t kRunStacks = 4;
struct RunStack {
  uint32_t stack = 0, looks = 0;
};

// Worker processes of the family (docs/architecture.md, "The sampler", *Worker processes*):
// children the program forked, looked at from this process's writer while they run its program
// (no exec) and have no writer thread of their own.
constexpr uint32_t kMaxPendingChildren = 64;  // forked, not yet looked at
constexpr uint32_t kMaxWorkers = 16;          // worker processes sampled at once
constexpr uint32_t kMaxWorkerThreads = 16;    // their threads, all together
// A worker thread is looked at on every 4th tick of the grid (50 Hz at the default 200): a look
// costs 2-3 us of the writer's CPU, and DataLoader workers are many.
constexpr uint64_t kWorkerEvery = 4;
// A worker's main thread's Python frames are read at most every this many Python periods (about
// 17 Hz at the default IDLESCOPE_SAMPLE_PYTHON_HZ=50): 3-5 process_vm_readv calls a read.
constexpr uint64_t kWorkerPythonEvery = 3;
// How often the family is checked: children adopted, workers' threads listed, an exec or a
// writer of a worker's own noticed (one process_vm_readv per child, one getdents per worker).
constexpr uint64_t kFamilyCheckNs = 100'000'000;
// A child is adopted once it has lived this long: a shell loop's short-lived children cost one
// process_vm_readv each, and no files.
constexpr uint64_t kAdoptAfterNs = 100'000'000;

// What a forked child says of itself, at the same address in its memory as in its parent's (fork
// copies it): its own pid (set in the child as it starts, sampler::ResetInChild; an image that
// exec'd has 0 there, or nothing mapped) and whether it started a writer thread of its own
// (MarkOwnWriter: it then samples itself). The parent's writer reads it with process_vm_readv.
struct FamilyMark {
  std::atomic<uint32_t> pid{0};
  std::atomic<uint32_t> own_writer{0};
};
static_assert(sizeof(FamilyMark) == 8 && std::is_standard_layout_v<FamilyMark>);
constinit FamilyMark g_family_mark;
// The mark's pid while this process forks (MarkForking): a child that has not yet run its atfork
// handler holds this copy, not its parent's mark (whose writer flag is set), and is read as still
// starting.
constexpr uint32_t kForkingPid = UINT32_MAX;
uint32_t g_mark_pid_before_fork = 0;  // under the fork handlers' locks

// A child forked by the program (NoteChild): its pid is published last.
struct PendingChild {
  std::atomic<uint32_t> pid{0};  // 0: free
  std::atomic<uint64_t> forked_ns{0};
  // The forking thread's PyThreadState (0: none we read): fork copies it to the same address,
  // the child's main thread's (python::ReadThreadFrames of the child).
  std::atomic<uintptr_t> py_tstate{0};
  std::atomic<unsigned long> py_thread_id{0};
  std::atomic<uint32_t> forking_tid{0};
};

// A worker process adopted: its /proc/PID/task, kept open for listing its threads.
struct Worker {
  uint32_t pid = 0;  // 0: free
  int task_fd = -1;
  uintptr_t py_tstate = 0;  // its main thread's PyThreadState (PendingChild)
  unsigned long py_thread_id = 0;
  uint32_t forking_tid = 0;
};

// One sampled thread. `tid` is published by the thread itself (AddThisThread); everything else is
// the writer's alone.
struct Slot {
  std::atomic<uint32_t> tid{0};  // 0: free
  // Set by the thread after it took the slot (0: not yet): when it joined and its CPU time then
  // (CLOCK_THREAD_CPUTIME_ID, the same sum as schedstat's first field), so that the first run
  // starts at its first call that feeds the GPU, not at the writer's first look.
  std::atomic<uint64_t> joined_ns{0};
  std::atomic<uint64_t> joined_cpu{0};
  // Set by the thread as it ends (ThisThreadExits; 0: not yet): the time and its CPU time then.
  std::atomic<uint64_t> exited_ns{0};
  std::atomic<uint64_t> exited_cpu{0};
  // Set by the thread as it joins (0: it runs no Python we read): its PyThreadState, and the id
  // CPython keeps in it, for reading its frames from the writer (python::ReadThreadFrames).
  std::atomic<uintptr_t> py_tstate{0};
  std::atomic<unsigned long> py_thread_id{0};
  uint32_t py_forked_from = 0;   // a worker's main thread: ThreadStateRef::forked_from
  uint64_t py_next_ns = 0;       // the next look that may read its Python frames
  uintptr_t py_gone_tstate = 0;  // a state that no longer named it: not read again
  RunStack run_stacks[kRunStacks];
  // The next look at this thread (0: at the next look): the grid's next tick, or its next even
  // one while the thread is steady (Look).
  uint64_t due_ns = 0;
  bool steady = false;    // its last look was at least the third of its open run
  uint32_t open_tid = 0;  // the thread the descriptors below were opened for
  uint32_t pid = 0;       // a worker process's thread (0: a thread of this process)
  int schedstat_fd = -1, stat_fd = -1, syscall_fd = -1;
  bool failed = false;  // its files could not be opened: not looked at again
  bool have_last = false;
  Reading last;  // the last look whose interval is decided
  // Looks whose interval read as blocked while the thread was runnable: decided later (LookAt).
  Reading deferred_at[kMaxDeferredLooks];
  uint32_t deferred = 0;
  // Waiting for a CPU already counted in runs that schedstat has not charged yet (LookAt).
  uint64_t wait_credit = 0;
  // The waits charged before the first look, while its interval (from the thread's join) is
  // deferred: they may be that interval's (LookAt).
  uint64_t first_wait_bound = 0;
  // The open run.
  Kind kind = kNone;
  int32_t syscall = kSampleNotBlocked;
  int32_t fd = -1;
  RawEvent run;
};

// Never destroyed: the writer may look while the process ends.
struct Sampler {
  uint32_t hz = 200;
  uint64_t period_ns = 5'000'000;
  // A Python thread's frames are read at most this often (IDLESCOPE_SAMPLE_PYTHON_HZ: each read
  // costs a system call per frame, docs/architecture.md, "The sampler"), at looks whose interval
  // was mostly on a CPU; 0: never.
  uint64_t python_period_ns = 0;
  std::atomic<bool> started{false};
  uint32_t writer_tid = 0;
  int pid = 0;  // ours, for process_vm_readv (python::ReadThreadFrames)
  uint64_t next_look = 0;
  uint64_t grid0 = 0;             // the first look's time: the looks' grid is grid0 + k * period_ns
  std::atomic<uint32_t> used{0};  // slots ever handed out (a high-water mark)
  Slot slots[kMaxThreads];
  // Worker processes (writer-only but for `pending`, which the fork hook fills).
  bool family = false;  // the writer may look at workers: no seccomp filter
  uint64_t next_family_check = 0;
  bool family_active = false;  // children pending or workers adopted at the last check
  std::atomic<bool> child_noted{false};
  PendingChild pending[kMaxPendingChildren];
  Worker workers[kMaxWorkers];
  Slot worker_slots[kMaxWorkerThreads];
  // Ended runs, for the flush.
  std::mutex ended_mu;
  uint32_t ended_count = 0;
  uint64_t ended_dropped = 0;
  RawEvent ended[kMaxEnded];
};
static_assert(std::is_trivially_destructible_v<Sampler>);
constinit Sampler g_sampler;

uint32_t ThisTid() { return static_cast<uint32_t>(RawSyscall(SYS_gettid)); }

// The calling thread's slot, and its tid when it took it (NoteThisThreadState): the slot is still
// its own only while it holds that tid (a forked child's table is emptied; a slot is freed only
// once its thread is gone).
struct OwnSlot {
  Slot* slot;
  uint32_t tid;
};
__thread OwnSlot t_own_slot __attribute__((tls_model("initial-exec"))) = {nullptr, 0};

// Decimal of `v` into `out`, returning its end.
char* Decimal(char* out, uint64_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

// "/proc/self/task/" or "/proc/PID/task/" (pid 0: this process) into `out`, returning its end.
char* TaskDir(char* out, uint32_t pid) {
  if (pid == 0) {
    memcpy(out, "/proc/self/task/", 16);
    return out + 16;
  }
  memcpy(out, "/proc/", 6);
  char* p = Decimal(out + 6, pid);
  memcpy(p, "/task/", 6);
  return p + 6;
}

int OpenTaskFile(uint32_t pid, uint32_t tid, const char* name) {
  char path[80];
  char* p = Decimal(TaskDir(path, pid), tid);
  *p++ = '/';
  memcpy(p, name, strlen(name) + 1);
  return static_cast<int>(
      RawSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC));
}

void CloseFiles(Slot& s) {
  for (int* fd : {&s.schedstat_fd, &s.stat_fd, &s.syscall_fd}) {
    if (*fd >= 0) RawSyscall(SYS_close, *fd);
    *fd = -1;
  }
}

// The whole small /proc file at `fd` from offset 0, NUL-terminated; its length, or -1 when the
// thread is gone (ESRCH) or the read failed.
long ReadAt(int fd, char* buf, size_t size) {
  long n = RawSyscall(SYS_pread64, fd, reinterpret_cast<long>(buf), static_cast<long>(size - 1), 0);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

// The system calls whose first argument is a descriptor (x86_64 numbers where they differ: the
// names come from <sys/syscall.h>).
bool TakesFd(long nr) {
  switch (nr) {
    case SYS_read:
    case SYS_write:
    case SYS_pread64:
    case SYS_pwrite64:
    case SYS_readv:
    case SYS_writev:
    case SYS_preadv:
    case SYS_pwritev:
    case SYS_preadv2:
    case SYS_pwritev2:
    case SYS_recvfrom:
    case SYS_sendto:
    case SYS_recvmsg:
    case SYS_sendmsg:
    case SYS_recvmmsg:
    case SYS_sendmmsg:
    case SYS_accept:
    case SYS_accept4:
    case SYS_connect:
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_sync_file_range:
    case SYS_flock:
    case SYS_fcntl:
    case SYS_ioctl:
    case SYS_ftruncate:
    case SYS_fallocate:
    case SYS_sendfile:
    case SYS_splice:
    case SYS_copy_file_range:
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
    case SYS_getdents64:
      return true;
    default:
      return false;
  }
}

// The run's stack: the Python stack most of its looks found (the latest of those found as often).
void TakeRunStack(Slot& s) {
  uint32_t best = 0;
  for (uint32_t k = 0; k < kRunStacks && s.run_stacks[k].looks > 0; ++k) {
    if (s.run_stacks[k].looks >= s.run_stacks[best].looks) best = k;
  }
  s.run.stack = s.run_stacks[best].stack;
  for (RunStack& r : s.run_stacks) r = RunStack();
}

void EndRun(Slot& s) {
  TakeRunStack(s);
  if (s.kind == kNone) return;
  {
    std::lock_guard<std::mutex> lock(g_sampler.ended_mu);
    if (g_sampler.ended_count < kMaxEnded) {
      g_sampler.ended[g_sampler.ended_count++] = s.run;
    } else {
      ++g_sampler.ended_dropped;
    }
  }
  s.kind = kNone;
}

// What the descriptor `fd` of thread `tid` (of process `pid`, 0: this one) is, interned (0:
// unknown).
uint32_t DescriptorPath(uint32_t pid, uint32_t tid, int fd) {
  char link[96];
  char* p = Decimal(TaskDir(link, pid), tid);
  memcpy(p, "/fd/", 4);
  p = Decimal(p + 4, static_cast<uint64_t>(fd));
  *p = '\0';
  char target[512];
  long n = RawSyscall(SYS_readlinkat, AT_FDCWD, reinterpret_cast<long>(link),
                      reinterpret_cast<long>(target), sizeof(target) - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  return InternPath(std::string_view(target, static_cast<size_t>(n)),
                    target[0] == '/' ? redact::PathKind::kFile : redact::PathKind::kAddress);
}

// Thread `tid`'s CPU time now, from its CPU clock (the kernel's
// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED): a thread of this process only). schedstat's own
// figure lags up to a scheduler tick behind a thread that is running; the clock brings it up to
// date first. False when the clock cannot be read (the thread is gone).
bool ThreadCpuNs(uint32_t tid, uint64_t* out) {
  const long clock = static_cast<long>((~static_cast<uint64_t>(tid)) << 3) | 6;
  timespec ts{};
  if (RawSyscall(SYS_clock_gettime, clock, reinterpret_cast<long>(&ts)) != 0) return false;
  *out = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  return true;
}

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID: the same sum as schedstat's first
// field), as it joins the sampler and as it ends.
uint64_t CallingThreadCpuNs() {
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  return static_cast<uint64_t>(cpu.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(cpu.tv_nsec);
}

// What one interval between two looks at a thread held: its length, CPU time and charged waits
// for a CPU (the rest it was blocked).
struct Interval {
  uint64_t start = 0, dt = 0, cpu = 0, wait = 0;
  uint64_t blocked() const { return dt > cpu + wait ? dt - cpu - wait : 0; }
  Kind kind() const {
    const uint64_t b = blocked();
    if (b > cpu && b > wait) return kBlocked;
    return wait > cpu && wait >= b ? kRunnable : kOnCpu;
  }
};

Interval Between(const Reading& from, const Reading& to) {
  Interval i;
  i.start = from.ns;
  i.dt = to.ns > from.ns ? to.ns - from.ns : 0;
  i.cpu = to.cpu >= from.cpu ? to.cpu - from.cpu : 0;
  i.wait = to.wait >= from.wait ? to.wait - from.wait : 0;
  return i;
}

// The call thread `tid` is in, from its syscall file: `syscall` and `fd` (kSampleNotBlocked, -1
// when in none); true when the file says it is not blocked at all ("running": runnable, or on a
// CPU).
bool ReadCall(Slot& s, int32_t* syscall, int32_t* fd) {
  char buf[512];
  if (s.syscall_fd < 0 || ReadAt(s.syscall_fd, buf, sizeof(buf)) <= 0) return false;
  // "NR ARG1 ... SP PC", "-1 SP PC" (blocked outside a call), or "running".
  if (buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9')) {
    char* end = nullptr;
    const long nr = strtol(buf, &end, 10);
    *syscall = static_cast<int32_t>(nr);
    if (nr >= 0 && TakesFd(nr)) *fd = static_cast<int32_t>(strtoll(end, nullptr, 16));
    return false;
  }
  return strncmp(buf, "running", 7) == 0;
}

// Adds interval `i` to the thread's open run, or ends that run and opens one. `last`: the
// interval that ends now (its state letter can be read); false when the thread is gone.
bool AddInterval(Slot& s, uint32_t tid, const Interval& i, Kind kind, int32_t syscall, int32_t fd,
                 bool last) {
  const uint64_t end = i.start + i.dt;
  const bool same =
      s.kind == kind && s.syscall == syscall && s.fd == fd && end - s.run.ts <= kMaxRunNs;
  if (last) s.steady = same && s.run.count >= 2;  // its third look in one run at least
  if (same) {
    s.run.dur = end - s.run.ts;
    s.run.count += 1;
    s.run.u.sample.cpu_ns += i.cpu;
    s.run.u.sample.wait_ns += i.wait;
    return true;
  }
  const bool continues_blocking = s.kind == kind && s.syscall == syscall && s.fd == fd;
  const uint32_t path = continues_blocking ? s.run.u.sample.path
                        : fd >= 0          ? DescriptorPath(s.pid, tid, fd)
                                           : 0;
  // The state letter once per run (stat is the dearest file to read): 'R' unless blocked now.
  uint8_t state = continues_blocking ? s.run.u.sample.state : 'R';
  if (kind == kBlocked && !continues_blocking && last) {
    char buf[512];
    if (ReadAt(s.stat_fd, buf, sizeof(buf)) <= 0) return false;
    const char* paren = strrchr(buf, ')');
    state = paren != nullptr && paren[1] == ' ' && paren[2] != '\0' ? paren[2] : '?';
  }
  EndRun(s);
  s.kind = kind;
  s.syscall = syscall;
  s.fd = fd;
  RawEvent& r = s.run;
  r = RawEvent();
  r.type = ev::kThreadSample;
  r.ts = i.start;
  r.dur = i.dt;
  r.count = 1;
  r.u.sample.tid = tid;
  r.u.sample.pid = s.pid;
  r.u.sample.cpu_ns = i.cpu;
  r.u.sample.wait_ns = i.wait;
  r.u.sample.path = path;
  r.u.sample.fd = fd;
  r.u.sample.syscall = syscall;
  r.u.sample.state = state;
  return true;
}

// Looks at one thread; false when it is gone.
//
// schedstat's second figure, the time runnable waiting for a CPU, is charged when the thread
// gets a CPU: a thread that waits at a look shows that wait only at a later one. An interval
// that reads as mostly blocked while the thread is not blocked at the look (runnable, or just
// running again) is therefore decided later (up to kMaxDeferredLooks looks), each interval
// apart: the waits charged after such a look go first to the uncharged rest of the intervals that
// ended runnable, oldest first (a thread preempted beside CPU hogs reads blocked otherwise, not
// waiting for a CPU). Past the limit the uncharged rest is taken as a wait in progress, and
// subtracted from the charges that come for it. `last`: the thread's last look (its runs end):
// nothing is deferred.
bool LookAt(Slot& s, uint32_t tid, uint64_t now, bool last = false) {
  if (s.open_tid != tid) {
    CloseFiles(s);
    s.kind = kNone;
    s.steady = false;
    s.py_next_ns = 0;
    s.py_gone_tstate = 0;
    for (RunStack& r : s.run_stacks) r = RunStack();
    s.have_last = false;
    s.deferred = 0;
    s.wait_credit = 0;
    s.first_wait_bound = 0;
    s.failed = false;
    s.open_tid = tid;
    s.schedstat_fd = OpenTaskFile(s.pid, tid, "schedstat");
    s.stat_fd = OpenTaskFile(s.pid, tid, "stat");
    s.syscall_fd = OpenTaskFile(s.pid, tid, "syscall");
    if (s.stat_fd < 0) return false;  // the thread is gone before the first look
    if (s.schedstat_fd < 0) {
      CloseFiles(s);
      s.failed = true;  // no schedstat: a kernel without CONFIG_SCHED_INFO
    }
  }
  if (s.failed) return true;
  char buf[512];
  if (ReadAt(s.schedstat_fd, buf, sizeof(buf)) <= 0) return false;
  char* end = nullptr;
  Reading reading{now, strtoull(buf, &end, 10), 0};
  reading.wait = strtoull(end, nullptr, 10);
  // Another process's thread has no CPU clock we may read (the kernel refuses it): schedstat alone,
  // up to a scheduler tick behind while the thread runs.
  uint64_t clock_cpu = 0;
  if (s.pid == 0 && ThreadCpuNs(tid, &clock_cpu) && clock_cpu >= reading.cpu) {
    reading.cpu = clock_cpu;
  }
  if (!s.have_last) {
    // From the moment it joined: its CPU time since is exact; its waits for a CPU charged before
    // this look are not known (the thread does not read schedstat itself: a system call the bare
    // program would not make), those charged from now on are. The interval is decided as any
    // other: a wait in progress now is charged later (beside CPU hogs the writer's first look
    // comes late, and the launching thread's first gap read as nothing).
    s.have_last = true;
    const uint64_t joined = s.joined_ns.load(std::memory_order_acquire);
    const uint64_t joined_cpu = s.joined_cpu.load(std::memory_order_relaxed);
    if (joined == 0 || joined >= now || joined_cpu > reading.cpu) {
      s.last = reading;
      return true;
    }
    s.last = {joined, joined_cpu, reading.wait};
    s.first_wait_bound = reading.wait;
  }
  // The intervals since the last decided look: one per deferred look, and this one.
  Interval intervals[kMaxDeferredLooks + 1];
  const uint32_t n = s.deferred + 1;
  Reading from = s.last;
  for (uint32_t k = 0; k < n; ++k) {
    const Reading& to = k < s.deferred ? s.deferred_at[k] : reading;
    intervals[k] = Between(from, to);
    from = to;
  }
  Interval& current = intervals[n - 1];
  // The open run: blocked in a call at the previous look, or not (a run that read as blocked while
  // the thread was runnable says nothing of a call).
  const bool was_blocked = s.kind == kBlocked && s.syscall != kSampleNotBlocked;
  const int32_t was_syscall = s.syscall, was_fd = s.fd;
  int32_t syscall = kSampleNotBlocked;
  int32_t fd = -1;
  bool call_read = false, runnable = false;
  if (current.kind() == kBlocked) {
    runnable = ReadCall(s, &syscall, &fd);
    call_read = true;
    // Blocked at the previous look and runnable now: it was blocked first (below), not waiting.
    if (runnable && !was_blocked && !last && s.deferred < kMaxDeferredLooks) {
      s.steady = false;
      s.deferred_at[s.deferred++] = reading;  // decided at a later look
      return true;
    }
  }
  // Charges already counted as waits in progress, then the waits charged after a deferred look
  // taken back to the intervals that ended runnable.
  uint64_t credit = s.wait_credit;
  for (uint32_t k = 0; k < n && credit > 0; ++k) {
    const uint64_t take = std::min(credit, intervals[k].wait);
    intervals[k].wait -= take;
    credit -= take;
    // The thread ran in this interval: it got a CPU back, which charged the wait in progress
    // whole. Credit beyond that charge was no wait (the thread was blocked, then runnable only
    // at the look), and must not take the charges of later waits.
    if (intervals[k].cpu > 0) credit = 0;
  }
  // A wait that began before the previous look (the thread was preempted at it) is charged now:
  // what the charge holds beyond this interval goes back to the open run, up to the time that run
  // left unaccounted.
  if (s.kind != kNone && intervals[0].cpu + intervals[0].wait > intervals[0].dt) {
    const uint64_t open_busy = s.run.u.sample.cpu_ns + s.run.u.sample.wait_ns;
    const uint64_t open_rest = s.run.dur > open_busy ? s.run.dur - open_busy : 0;
    const uint64_t take = std::min(
        {intervals[0].cpu + intervals[0].wait - intervals[0].dt, open_rest, intervals[0].wait});
    s.run.u.sample.wait_ns += take;
    intervals[0].wait -= take;
  }
  for (uint32_t k = 0; k + 1 < n; ++k) {
    uint64_t need = intervals[k].blocked();
    for (uint32_t j = k + 1; j < n && need > 0; ++j) {
      const uint64_t take = std::min(need, intervals[j].wait);
      intervals[j].wait -= take;
      intervals[k].wait += take;
      need -= take;
    }
  }
  // The thread's first interval, deferred (runnable at the first look, in no call): what the
  // charges since left of it unexplained is a wait charged before the first look, up to the
  // waits charged then (beside CPU hogs the writer's first look comes late, after the thread got
  // its CPU back: the charge is then in the figure the first interval starts from).
  if (s.first_wait_bound > 0 && n > 1) {
    intervals[0].wait += std::min(intervals[0].blocked(), s.first_wait_bound);
  }
  s.first_wait_bound = 0;
  if (current.kind() == kBlocked && !call_read) runnable = ReadCall(s, &syscall, &fd);
  const bool blocked_first = current.kind() == kBlocked && runnable && was_blocked;
  if (current.kind() == kBlocked && runnable && !blocked_first) {
    // Still runnable after the deferred looks: a wait in progress through all of them.
    for (uint32_t k = 0; k < n; ++k) {
      credit += intervals[k].blocked();
      intervals[k].wait += intervals[k].blocked();
    }
  }
  if (current.kind() != kBlocked) {
    syscall = kSampleNotBlocked;
    fd = -1;
  }
  s.wait_credit = credit;
  s.deferred = 0;
  s.last = reading;
  for (uint32_t k = 0; k + 1 < n; ++k) {
    if (!AddInterval(s, tid, intervals[k], intervals[k].kind(), kSampleNotBlocked, -1, false)) {
      return false;
    }
  }
  // An interval that reads as mostly blocked holds the thread's CPU time and waits in one order
  // or the other: a thread not blocked at the previous look and blocked in a call now ran first
  // (the host work before a read-back, which would otherwise read as blocked and name nothing);
  // one blocked in a call at the previous look and running now was still in that call first.
  // Split so, the run boundary within the look is an estimate, the sums stay exact.
  const uint64_t busy = current.cpu + current.wait;
  const bool ran_first = current.kind() == kBlocked && !runnable && !was_blocked;
  if ((ran_first || blocked_first) && busy > 0 && busy >= current.dt / 8) {
    Interval busy_part = current, blocked_part = current;
    busy_part.dt = busy;
    blocked_part.dt = current.dt - busy;
    blocked_part.cpu = blocked_part.wait = 0;
    if (ran_first) {
      blocked_part.start = current.start + busy;
      return AddInterval(s, tid, busy_part, busy_part.kind(), kSampleNotBlocked, -1, false) &&
             AddInterval(s, tid, blocked_part, kBlocked, syscall, fd, true);
    }
    busy_part.start = current.start + blocked_part.dt;
    return AddInterval(s, tid, blocked_part, kBlocked, was_syscall, was_fd, false) &&
           AddInterval(s, tid, busy_part, busy_part.kind(), kSampleNotBlocked, -1, true);
  }
  if (blocked_first) return AddInterval(s, tid, current, kBlocked, was_syscall, was_fd, true);
  return AddInterval(s, tid, current, current.kind(), syscall, fd, true);
}

// After a look that found the thread on a CPU most of its interval: the innermost Python frames of
// a Python thread, counted to its open run (at most every python_period_ns).
void LookAtPython(Slot& s, uint32_t tid, uint64_t now) {
  if (g_sampler.python_period_ns == 0 || s.kind != kOnCpu || now < s.py_next_ns) return;
  python::ThreadStateRef ref;
  ref.tstate = s.py_tstate.load(std::memory_order_acquire);
  if (ref.tstate == 0 || ref.tstate == s.py_gone_tstate) return;
  ref.thread_id = s.py_thread_id.load(std::memory_order_relaxed);
  ref.forked_from = s.py_forked_from;
  // Not one period after now: a look a little early (the writer's looks drift) still reads. A
  // worker's thread every third period (kWorkerPythonEvery): workers are many, and a run's stack
  // is what most of its reads found.
  const uint64_t period = g_sampler.python_period_ns * (s.pid != 0 ? kWorkerPythonEvery : 1);
  s.py_next_ns = now + period - period / 8;
  uint64_t keys[kPythonFrames];
  // A worker's thread: its frames are in its own memory (forked: the interpreter's objects of
  // before the fork at the same addresses, the code cache's checks tell the others apart).
  const int pid = s.pid != 0 ? static_cast<int>(s.pid) : g_sampler.pid;
  const int n = python::ReadThreadFrames(pid, tid, ref, keys, kPythonFrames);
  if (n == python::kStateGone) {
    s.py_gone_tstate = ref.tstate;  // until the thread names another (NoteThisThreadState)
    return;
  }
  const uint32_t stack = InternPythonStack(keys, n);
  if (stack == 0) return;
  for (RunStack& r : s.run_stacks) {
    if (r.looks == 0) r.stack = stack;
    if (r.stack != stack) continue;
    ++r.looks;
    return;
  }
}

// The thread of slot `s` is gone: the interval from its last look to its end, when it said when
// it ended (ThisThreadExits), goes to its runs. Its waits for a CPU since the last look are not
// known (schedstat is gone with it): what its CPU time leaves of the interval reads as blocked, in
// the call of its open run when that run was blocked in one (a thread that sleeps to its end).
void LookAtExit(Slot& s, uint32_t tid) {
  const uint64_t exited = s.exited_ns.load(std::memory_order_acquire);
  if (exited == 0 || s.failed) return;
  Reading from = s.last;
  if (!s.have_last) {
    from = {s.joined_ns.load(std::memory_order_relaxed),
            s.joined_cpu.load(std::memory_order_relaxed), 0};
    if (from.ns == 0) return;
  }
  // Deferred looks are decided as they read: no later look can charge their waits.
  for (uint32_t k = 0; k <= s.deferred; ++k) {
    Reading to = k < s.deferred
                     ? s.deferred_at[k]
                     : Reading{exited, s.exited_cpu.load(std::memory_order_relaxed), from.wait};
    if (to.ns <= from.ns) break;
    to.cpu = std::max(to.cpu, from.cpu);
    const Interval i = Between(from, to);
    const Kind kind = i.kind();
    const bool in_call = kind == kBlocked && s.kind == kBlocked && s.syscall != kSampleNotBlocked;
    AddInterval(s, tid, i, kind, in_call ? s.syscall : kSampleNotBlocked, in_call ? s.fd : -1,
                false);
    from = to;
  }
  s.deferred = 0;
}

// What slot `s` knew of its thread, forgotten: its process, its times, its Python state, its next
// look. The next thread's state may be at the same address (CPython reuses freed ones; every worker
// forked by one thread has that thread's), so the gone one is forgotten too.
void ForgetThread(Slot& s) {
  s.open_tid = 0;
  s.pid = 0;
  s.joined_ns.store(0, std::memory_order_relaxed);
  s.joined_cpu.store(0, std::memory_order_relaxed);
  s.exited_ns.store(0, std::memory_order_relaxed);
  s.exited_cpu.store(0, std::memory_order_relaxed);
  s.py_tstate.store(0, std::memory_order_relaxed);
  s.py_thread_id.store(0, std::memory_order_relaxed);
  s.py_gone_tstate = 0;
  s.py_forked_from = 0;
  s.py_next_ns = 0;
  s.due_ns = 0;
}

// Slot `s` is free again: its thread ended, or its worker process stopped being one.
void FreeSlot(Slot& s) {
  CloseFiles(s);
  ForgetThread(s);
  s.tid.store(0, std::memory_order_release);
}

// --- Worker processes ------------------------------------------------------------------------

enum class Mark { kGone, kWorker, kNotWorker, kStarting };

// What child `pid` says of itself (FamilyMark, read from its memory): a worker (it runs our
// program and no writer of its own), not one (it exec'd, or started its writer), or gone (ended, a
// zombie, or its memory refused: a child that made itself undumpable, a stricter ptrace policy).
// process_vm_readv needs no stop of the child and no ptrace attach; Yama's ptrace_scope 1 allows
// it to a descendant.
Mark ReadMark(uint32_t pid) {
  uint32_t mark[2] = {0, 0};
  iovec local{mark, sizeof(mark)};
  iovec remote{&g_family_mark, sizeof(mark)};
  const long n =
      RawSyscall(SYS_process_vm_readv, static_cast<long>(pid), reinterpret_cast<long>(&local), 1,
                 reinterpret_cast<long>(&remote), 1, 0);
  if (n != static_cast<long>(sizeof(mark))) return Mark::kGone;
  if (mark[0] == kForkingPid) return Mark::kStarting;  // in fork: the child, or its own child's
  return mark[0] == pid && mark[1] == 0 ? Mark::kWorker : Mark::kNotWorker;
}

// Worker `w` stops being sampled (it ended, exec'd or samples itself): its threads' runs end at
// their last looks, their files are closed.
void RetireWorker(Worker& w) {
  for (Slot& s : g_sampler.worker_slots) {
    if (s.pid != w.pid || s.tid.load(std::memory_order_relaxed) == 0) continue;
    EndRun(s);
    FreeSlot(s);
  }
  if (w.task_fd >= 0) RawSyscall(SYS_close, w.task_fd);
  w = Worker();
}

// Thread `tid` of worker `w` takes a free worker slot unless it has one; false when none is free.
// Its main thread gets the state of the thread that forked it, for its Python frames.
bool AddWorkerThread(const Worker& w, uint32_t tid) {
  Slot* free_slot = nullptr;
  for (Slot& s : g_sampler.worker_slots) {
    const uint32_t t = s.tid.load(std::memory_order_relaxed);
    if (t == tid && s.pid == w.pid) return true;
    if (t == 0 && free_slot == nullptr) free_slot = &s;
  }
  if (free_slot == nullptr) return false;
  free_slot->pid = w.pid;
  free_slot->due_ns = 0;  // looked at next
  const bool main_thread = tid == w.pid;
  free_slot->py_thread_id.store(main_thread ? w.py_thread_id : 0, std::memory_order_relaxed);
  free_slot->py_tstate.store(main_thread ? w.py_tstate : 0, std::memory_order_relaxed);
  free_slot->py_forked_from = main_thread ? w.forking_tid : 0;
  free_slot->tid.store(tid, std::memory_order_relaxed);
  return true;
}

// Worker `w`'s threads not yet sampled take free worker slots, up to kMaxWorkerThreads in all.
void ListWorkerThreads(Worker& w) {
  if (RawSyscall(SYS_lseek, w.task_fd, 0, SEEK_SET) != 0) return;
  alignas(8) char buf[2048];
  for (;;) {
    const long n = RawSyscall(SYS_getdents64, w.task_fd, reinterpret_cast<long>(buf), sizeof(buf));
    if (n <= 0) return;
    for (long at = 0; at < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      uint16_t reclen;
      memcpy(&reclen, buf + at + 16, sizeof(reclen));
      const char* name = buf + at + 19;
      at += reclen;
      if (name[0] < '1' || name[0] > '9') continue;
      const uint32_t tid = static_cast<uint32_t>(strtoul(name, nullptr, 10));
      if (!AddWorkerThread(w, tid)) return;  // the bound: the others are not sampled
    }
  }
}

// Every kFamilyCheckNs: children forked since are adopted once they lived kAdoptAfterNs as
// workers; adopted workers that stopped being ones are retired, the others' new threads listed.
void CheckFamily(uint64_t now) {
  g_sampler.next_family_check = now + kFamilyCheckNs;
  g_sampler.child_noted.store(false, std::memory_order_relaxed);
  bool active = false;
  for (PendingChild& c : g_sampler.pending) {
    const uint32_t pid = c.pid.load(std::memory_order_acquire);
    if (pid == 0) continue;
    const uint64_t forked = c.forked_ns.load(std::memory_order_acquire);
    const uintptr_t py_tstate = c.py_tstate.load(std::memory_order_relaxed);
    const unsigned long py_thread_id = c.py_thread_id.load(std::memory_order_relaxed);
    const uint32_t forking_tid = c.forking_tid.load(std::memory_order_relaxed);
    active = true;
    if (forked == 0) continue;  // being published
    const Mark mark = ReadMark(pid);
    if (mark == Mark::kStarting) continue;  // not yet through its atfork handler
    const bool adopt = mark == Mark::kWorker && now >= forked + kAdoptAfterNs;
    if (mark == Mark::kWorker && !adopt) continue;
    c.forked_ns.store(0, std::memory_order_relaxed);
    c.pid.store(0, std::memory_order_release);
    if (!adopt) continue;
    Worker* free_worker = nullptr;
    for (Worker& w : g_sampler.workers) {
      if (w.pid == 0) {
        free_worker = &w;
        break;
      }
    }
    if (free_worker == nullptr) continue;
    char path[48];
    char* end = TaskDir(path, pid);
    end[-1] = '\0';  // "/proc/PID/task"
    const long fd = RawSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path),
                               O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    free_worker->pid = pid;
    free_worker->task_fd = static_cast<int>(fd);
    free_worker->py_tstate = py_tstate;
    free_worker->py_thread_id = py_thread_id;
    free_worker->forking_tid = forking_tid;
  }
  for (Worker& w : g_sampler.workers) {
    if (w.pid == 0) continue;
    const Mark mark = ReadMark(w.pid);
    if (mark != Mark::kWorker && mark != Mark::kStarting) {  // starting: it forks a child itself
      RetireWorker(w);
      continue;
    }
    active = true;
    // Every worker's main thread first (a DataLoader worker computes there), then the others'
    // threads: a worker of many threads does not leave the next one unsampled.
    AddWorkerThread(w, w.pid);
  }
  for (Worker& w : g_sampler.workers) {
    if (w.pid != 0) ListWorkerThreads(w);
  }
  g_sampler.family_active = active;
}

// A forked child's copy of slot `s`: no thread of the parent is the child's, and the descriptors
// are the parent writer's (its table was its own), not to be closed.
void ForgetInChild(Slot& s) {
  s.tid.store(0, std::memory_order_relaxed);
  ForgetThread(s);
  for (RunStack& r : s.run_stacks) r = RunStack();
  s.steady = false;
  s.schedstat_fd = s.stat_fd = s.syscall_fd = -1;
  s.kind = kNone;
  s.have_last = false;
  s.deferred = 0;
  s.wait_credit = 0;
  s.first_wait_bound = 0;
  s.failed = false;
}

}  // namespace

void Init(uint32_t hz, uint32_t python_hz) {
  g_sampler.hz = hz;
  g_sampler.period_ns = hz == 0 ? 0 : 1'000'000'000ull / hz;
  g_sampler.python_period_ns = python_hz == 0 ? 0 : 1'000'000'000ull / python_hz;
}

uint32_t Hz() { return g_sampler.hz; }

bool AddThisThread() {
  if (g_sampler.hz == 0) return false;
  const uint32_t tid = ThisTid();
  const uint32_t used = g_sampler.used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < kMaxThreads; ++i) {
    uint32_t free_tid = 0;
    Slot& s = g_sampler.slots[i];
    if (s.tid.compare_exchange_strong(free_tid, tid, std::memory_order_acq_rel)) {
      python::ThreadStateRef ref;
      if (g_sampler.python_period_ns != 0 && python::ThisThreadState(&ref)) {
        s.py_thread_id.store(ref.thread_id, std::memory_order_relaxed);
        s.py_tstate.store(ref.tstate, std::memory_order_release);
      }
      t_own_slot = {&s, tid};
      s.joined_cpu.store(CallingThreadCpuNs(), std::memory_order_relaxed);
      s.joined_ns.store(NowNs(), std::memory_order_release);
      if (i >= used) {
        uint32_t seen = used;
        while (seen <= i &&
               !g_sampler.used.compare_exchange_weak(seen, i + 1, std::memory_order_acq_rel)) {
        }
      }
      return used == 0;
    }
  }
  return false;
}

void NoteThisThreadState() {
  const OwnSlot own = t_own_slot;
  if (own.slot == nullptr || g_sampler.python_period_ns == 0 ||
      own.slot->tid.load(std::memory_order_relaxed) != own.tid) {
    return;
  }
  python::ThreadStateRef ref;
  if (!python::ThisThreadState(&ref) ||
      own.slot->py_tstate.load(std::memory_order_relaxed) == ref.tstate) {
    return;
  }
  own.slot->py_thread_id.store(ref.thread_id, std::memory_order_relaxed);
  own.slot->py_tstate.store(ref.tstate, std::memory_order_release);
}

void ThisThreadExits(uint32_t tid) {
  if (g_sampler.hz == 0 || tid == 0) return;
  const uint32_t used = g_sampler.used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    Slot& s = g_sampler.slots[i];
    if (s.tid.load(std::memory_order_acquire) != tid) continue;
    s.exited_cpu.store(CallingThreadCpuNs(), std::memory_order_relaxed);
    s.exited_ns.store(NowNs(), std::memory_order_release);
    return;
  }
}

void StartOnWriter(uint32_t writer_tid) {
  if (g_sampler.hz == 0) return;
  g_sampler.writer_tid = writer_tid;
  g_sampler.pid = static_cast<int>(RawSyscall(SYS_getpid));
  // Under a seccomp filter (the process started under one: a container, a sandbox's worker) no
  // Python frames are read: process_vm_readv is a call few programs make, and a filter may kill
  // the process at it (trace_file.cc, UnderSeccompFilter; the /proc reads are what any program
  // does). The evidence is then the last traced call's stack, as without frames.
  // Worker processes are not looked at there either: whether a child is one is read from its
  // memory with the same call.
  const bool seccomp = RawSyscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0) != 0;
  if (seccomp) g_sampler.python_period_ns = 0;
  g_sampler.family = !seccomp;
  g_sampler.next_family_check = 0;
  g_sampler.next_look = 0;
  g_sampler.started.store(true, std::memory_order_release);
}

uint64_t NextLookNs() {
  if (!g_sampler.started.load(std::memory_order_acquire)) return 0;
  if (g_sampler.used.load(std::memory_order_acquire) == 0 &&
      !(g_sampler.family &&
        (g_sampler.family_active || g_sampler.child_noted.load(std::memory_order_relaxed)))) {
    return 0;
  }
  return g_sampler.next_look == 0 ? NowNs() : g_sampler.next_look;
}

// Looks fall on a grid of periods (a late look does not shift the ones after it). A thread is
// looked at on the grid's next tick, or, while it is steady (its last look was at least the third
// of one run: blocked in one call, computing, waiting for a CPU), on the next tick of even index,
// as every steady thread: the writer then wakes half as often, and a thread that changes is seen
// at the next even tick, its next looks at every tick again. (On a 2-core VM each timed wake
// costs the writer 15-20 us of CPU: at 200 Hz, 0.4% of a core before any look.)
void Look(uint64_t now) {
  if (!g_sampler.started.load(std::memory_order_acquire)) return;
  if (now < g_sampler.next_look) return;
  const uint64_t period = g_sampler.period_ns;
  if (g_sampler.next_look == 0) g_sampler.grid0 = now;
  // The grid's next tick after now.
  const uint64_t tick = g_sampler.grid0 + ((now - g_sampler.grid0) / period + 1) * period;
  const uint64_t even_tick = ((tick - g_sampler.grid0) / period) % 2 == 0 ? tick : tick + period;
  // A thread is due at a tick a little ahead of now too: the writer's waits end a little early or
  // late, and a look skipped for that would come a whole period late.
  const uint64_t slack = period / 8;
  uint64_t next = UINT64_MAX;
  const uint32_t used = g_sampler.used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    Slot& s = g_sampler.slots[i];
    const uint32_t tid = s.tid.load(std::memory_order_acquire);
    if (tid == 0) continue;
    if (s.open_tid == tid && s.due_ns > now + slack) {
      next = std::min(next, s.due_ns);
      continue;
    }
    if (LookAt(s, tid, now)) {
      LookAtPython(s, tid, now);
      s.due_ns = s.steady ? even_tick : tick;
      next = std::min(next, s.due_ns);
    } else {  // the thread ended: its slot is free again
      LookAtExit(s, tid);
      EndRun(s);
      FreeSlot(s);
    }
  }
  if (g_sampler.family) {
    if (now + slack >= g_sampler.next_family_check &&
        (g_sampler.family_active || g_sampler.child_noted.load(std::memory_order_relaxed))) {
      CheckFamily(now);
    }
    // Worker threads on the ticks whose index is a multiple of kWorkerEvery.
    const uint64_t index = (tick - g_sampler.grid0) / period;
    const uint64_t worker_tick =
        tick + (kWorkerEvery - index % kWorkerEvery) % kWorkerEvery * period;
    for (Slot& s : g_sampler.worker_slots) {
      const uint32_t tid = s.tid.load(std::memory_order_relaxed);
      if (tid == 0) continue;
      if (s.open_tid == tid && s.due_ns > now + slack) {
        next = std::min(next, s.due_ns);
        continue;
      }
      if (LookAt(s, tid, now)) {
        LookAtPython(s, tid, now);
        s.due_ns = worker_tick;
        next = std::min(next, s.due_ns);
      } else {  // the thread ended (or its process): its runs end at its last look
        EndRun(s);
        FreeSlot(s);
      }
    }
    if (g_sampler.family_active) next = std::min(next, g_sampler.next_family_check);
  }
  // A thread that joins meanwhile waits for the next tick with a thread due (two periods at most).
  g_sampler.next_look = next == UINT64_MAX ? tick : next;
}

void EndRuns(bool careful) {
  if (!g_sampler.started.load(std::memory_order_acquire)) return;
  const uint32_t used = g_sampler.used.load(std::memory_order_acquire);
  if (careful) {
    if (!g_sampler.ended_mu.try_lock()) return;
    g_sampler.ended_mu.unlock();  // free now; only this thread and a flush take it
  }
  const uint64_t now = NowNs();
  for (uint32_t i = 0; i < used; ++i) {
    Slot& s = g_sampler.slots[i];
    const uint32_t tid = s.tid.load(std::memory_order_acquire);
    // A last look first, so that the runs reach the end (not on a signal: it reads files).
    if (!careful && tid != 0 && s.open_tid == tid) LookAt(s, tid, now, /*last=*/true);
    EndRun(s);
  }
  for (Slot& s : g_sampler.worker_slots) {
    const uint32_t tid = s.tid.load(std::memory_order_relaxed);
    if (!careful && tid != 0 && s.open_tid == tid) LookAt(s, tid, now, /*last=*/true);
    EndRun(s);
  }
}

void TakeRuns(std::vector<RawEvent>* out, uint64_t* dropped, bool careful) {
  std::unique_lock<std::mutex> lock(g_sampler.ended_mu, std::defer_lock);
  if (careful) {
    if (!lock.try_lock()) return;
  } else {
    lock.lock();
  }
  out->insert(out->end(), g_sampler.ended, g_sampler.ended + g_sampler.ended_count);
  g_sampler.ended_count = 0;
  *dropped += g_sampler.ended_dropped;
  g_sampler.ended_dropped = 0;
}

uint32_t WriterTid() { return g_sampler.writer_tid; }

void NoteChild(uint32_t pid) {
  if (g_sampler.hz == 0 || pid == 0) return;
  python::ThreadStateRef ref;
  if (g_sampler.python_period_ns == 0 || !python::ThisThreadState(&ref)) ref = {};
  for (PendingChild& c : g_sampler.pending) {
    uint32_t free_pid = 0;
    if (c.pid.compare_exchange_strong(free_pid, pid, std::memory_order_acq_rel)) {
      c.py_tstate.store(ref.tstate, std::memory_order_relaxed);
      c.py_thread_id.store(ref.thread_id, std::memory_order_relaxed);
      c.forking_tid.store(ref.tstate != 0 ? ThisTid() : 0, std::memory_order_relaxed);
      c.forked_ns.store(NowNs(), std::memory_order_release);
      g_sampler.child_noted.store(true, std::memory_order_relaxed);
      return;
    }
  }
}

void MarkForking() {
  g_mark_pid_before_fork = g_family_mark.pid.load(std::memory_order_relaxed);
  g_family_mark.pid.store(kForkingPid, std::memory_order_relaxed);
}

void UnmarkForking() { g_family_mark.pid.store(g_mark_pid_before_fork, std::memory_order_relaxed); }

void MarkOwnWriter() { g_family_mark.own_writer.store(1, std::memory_order_relaxed); }

void ResetInChild() {
  // What the parent's writer reads of this process (FamilyMark): a worker, so far.
  g_family_mark.own_writer.store(0, std::memory_order_relaxed);
  g_family_mark.pid.store(static_cast<uint32_t>(RawSyscall(SYS_getpid)), std::memory_order_relaxed);
  g_sampler.started.store(false, std::memory_order_relaxed);
  g_sampler.used.store(0, std::memory_order_relaxed);
  g_sampler.next_look = 0;
  g_sampler.ended_count = 0;
  new (&g_sampler.ended_mu) std::mutex();
  for (Slot& s : g_sampler.slots) ForgetInChild(s);
  // The parent's children and workers are not this process's (their files were in the parent
  // writer's table).
  g_sampler.family = false;
  g_sampler.family_active = false;
  g_sampler.next_family_check = 0;
  g_sampler.child_noted.store(false, std::memory_order_relaxed);
  for (PendingChild& c : g_sampler.pending) {
    c.pid.store(0, std::memory_order_relaxed);
    c.forked_ns.store(0, std::memory_order_relaxed);
  }
  for (Worker& w : g_sampler.workers) w = Worker();
  for (Slot& s : g_sampler.worker_slots) ForgetInChild(s);
}

}  // namespace idlescope::sampler
