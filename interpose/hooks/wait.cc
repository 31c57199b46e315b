// Blocking-wait hooks (glibc): poll, ppoll, select, pselect (and the _FORTIFY_SOURCE forms
// __poll_chk, __ppoll_chk), epoll_wait, epoll_pwait, epoll_pwait2 on descriptors; nanosleep,
// clock_nanosleep, usleep, sleep for a time; pause, sigwait, sigwaitinfo, sigtimedwait for a
// signal. accept and accept4 are net.cc's, with RecordFdWait. Issue 13: a job waiting at a GNU
// readline prompt (select on stdin, then read), in a notebook's event loop or in a sleep left no
// trace of it, and the report called that time unknown.
//
// Almost every wait is short (an event loop's poll that finds work at once, a 100 us sleep): it
// costs two call-clock readings and a compare, and records nothing (kWaitRecordNs, wait.h). A
// wait of at least 1 ms becomes one WAIT event (proto/trace.proto), described after the call
// returned: the descriptors it waited on as the fd table knows them (io_fd_table.h), terminals
// picked out among the devices with isatty(), and the device the thread last gave work to
// (LaunchDevice, recorder.h). The real function is called with the program's arguments, and its
// result and errno come back unchanged. These functions are cancellation points: nothing of ours
// is held across the real call.
#include "interpose/hooks/wait.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "interpose/call_clock.h"
#include "interpose/hooks/io_libc.h"
#include "interpose/hooks/io_record.h"
#include "interpose/recorder.h"

namespace idlescope::io {
namespace {

// What a long wait waited on, in the WAIT event's terms (trace.proto, WAIT): the descriptor that
// tells most (a terminal if any is one, else among connected sockets the farthest peer, else the
// first one) and the kind all of them share.
class WaitedFds {
 public:
  // Descriptors looked at, at most: a poll over thousands of sockets is a server's either way.
  static constexpr int kMaxFds = 64;

  bool full() const { return looked_ >= kMaxFds; }

  void Add(int fd) {
    if (fd < 0 || full()) return;
    ++looked_;
    FdInfo info = ResolveFd(fd);
    if (info.state != FdState::kTracked) return;  // the trace file, or no open descriptor
    uint8_t kind = info.fs;
    if (info.fs == kFsDevice && isatty(fd)) {
      kind = kTerminal;
    } else if (info.fs == kFsSocket && info.path == 0) {
      kind = kPeerlessSocket;  // listening, or unconnected: no peer address to tell
    }
    if (fd_ < 0) {
      first_kind_ = kind;
    } else if (kind != first_kind_) {
      mixed_ = true;
    }
    const bool better = fd_ < 0 || (kind == kTerminal && kind_ != kTerminal) ||
                        (kind == kFsSocket && kind_ == kFsSocket && Reach(info) > Reach(info_));
    if (better) {
      fd_ = fd;
      info_ = info;
      kind_ = kind;
    }
  }

  int fd() const { return fd_; }
  const FdInfo& info() const { return info_; }

  // The FsType of every descriptor waited on; kFsUnspecified for a mix (or none).
  FsType common() const {
    if (fd_ < 0 || mixed_) return kFsUnspecified;
    if (first_kind_ == kTerminal) return kFsDevice;
    if (first_kind_ == kPeerlessSocket) return kFsSocket;
    return static_cast<FsType>(first_kind_);
  }

 private:
  // Kinds beyond FsType's values, compared like them.
  static constexpr uint8_t kTerminal = 0xfe;        // a terminal (FS_DEVICE)
  static constexpr uint8_t kPeerlessSocket = 0xfd;  // a socket without a peer (FS_SOCKET)

  // How far a socket's peer is: public, then cluster-local, then loopback.
  static int Reach(const FdInfo& info) {
    switch (info.scope) {
      case kNetPublic:
        return 3;
      case kNetPrivate:
        return 2;
      case kNetLoopback:
        return 1;
      default:
        return 0;
    }
  }

  int fd_ = -1;
  FdInfo info_;
  uint8_t kind_ = 0;
  uint8_t first_kind_ = 0;
  bool mixed_ = false;
  int looked_ = 0;
};

// The WAIT event of a long wait. Not inlined: the stack skips this frame and MaybeCaptureStack's.
__attribute__((noinline)) void RecordWait(uint32_t (*api)(), uint64_t t0, uint64_t t1,
                                          int32_t result, const WaitedFds& fds) {
  RawEvent e;
  TicksToSpan(t0, t1, &e.ts, &e.dur);
  // LongWait decided with the process's tick ratio, the span comes from this thread's anchor,
  // whose ratio may be an earlier estimate (interpose/call_clock.h: refined at doubling
  // intervals; 0.5% apart in a process's first milliseconds, seen under load). A wait that is
  // not long by the span it would be recorded with is not recorded: a WAIT is never shorter than
  // the threshold.
  if (e.dur < kWaitRecordNs) return;
  e.count = 1;
  e.api = api();
  e.result = result;
  e.type = ev::kWait;
  e.stack = MaybeCaptureStack(e.ts, e.dur);
  e.u.io.fd = fds.fd();
  e.u.io.path = fds.info().path;
  e.u.io.fs_type = fds.common();
  e.u.io.net_scope = fds.info().scope;
  e.u.io.launch_device = LaunchDevice();
  Record(e);
}

// Times `call`; a long one is recorded, `describe(result, errno, fds)` adding the descriptors it
// waited on and giving the event's result.
template <typename Call, typename Describe>
auto TimedWait(Family family, uint32_t (*api)(), Call&& call, Describe&& describe)
    -> decltype(call()) {
  HookGuard guard(family);
  if (!guard.active()) return call();
  const uint64_t t0 = CallTicks();
  auto r = call();
  const uint64_t t1 = CallTicks();
  if (__builtin_expect(!LongWait(t0, t1), 1)) return r;  // the common case: errno untouched
  const int err = errno;
  WaitedFds fds;
  const int32_t result = describe(r, err, fds);
  RecordWait(api, t0, t1, result, fds);
  errno = err;
  return r;
}

// The event's result for calls that fail with -1 and errno.
int32_t ErrnoResult(long r, int err) { return r < 0 ? -err : 0; }
constexpr auto kSetsErrno = [](long r, int err, WaitedFds&) { return ErrnoResult(r, err); };
// clock_nanosleep and sigwait return 0 or an error number, and leave errno alone.
constexpr auto kReturnsError = [](int r, int, WaitedFds&) { return static_cast<int32_t>(-r); };

// poll's descriptors are still in `fds` when it returns (only revents changed); they are not read
// when the kernel could not (EFAULT) or refused their number (EINVAL).
template <typename Call>
int PollHook(uint32_t (*api)(), const struct pollfd* fds, nfds_t n, Call&& call) {
  return TimedWait(Family::kIo, api, call, [&](int r, int err, WaitedFds& waited) {
    if (r >= 0 || (err != EFAULT && err != EINVAL)) {
      // Negative entries are allowed (and skipped): the scan is bounded all the same.
      for (nfds_t i = 0; i < n && i < 4096 && !waited.full(); ++i) waited.Add(fds[i].fd);
    }
    return ErrnoResult(r, err);
  });
}

// select's sets hold the ready descriptors when it returns (none after a timeout: the wait then
// reads as a sleep), and are as the program passed them after a failure (Linux writes them back on
// success only); not read for EFAULT (unreadable) and EINVAL (a negative nfds).
template <typename Call>
int SelectHook(uint32_t (*api)(), int nfds, const fd_set* r, const fd_set* w, const fd_set* x,
               Call&& call) {
  return TimedWait(Family::kIo, api, call, [&](int ret, int err, WaitedFds& waited) {
    if (ret > 0 || (ret < 0 && err != EFAULT && err != EINVAL)) {
      const int n = std::min(nfds, FD_SETSIZE);
      for (int fd = 0; fd < n && !waited.full(); ++fd) {
        if ((r != nullptr && FD_ISSET(fd, r)) || (w != nullptr && FD_ISSET(fd, w)) ||
            (x != nullptr && FD_ISSET(fd, x))) {
          waited.Add(fd);
        }
      }
    }
    return ErrnoResult(ret, err);
  });
}

// epoll: the instance itself. What it watches is not looked at: that takes reading
// /proc/self/fdinfo, a descriptor opened in the program's table, which a concurrent dup2 of the
// program could make ours close.
template <typename Call>
int EpollHook(uint32_t (*api)(), int epfd, Call&& call) {
  return TimedWait(Family::kIo, api, call, [&](int r, int err, WaitedFds& waited) {
    waited.Add(epfd);
    return ErrnoResult(r, err);
  });
}

}  // namespace

void RecordFdWait(uint32_t (*api)(), int fd, uint64_t t0, uint64_t t1, int32_t result) {
  WaitedFds fds;
  fds.Add(fd);
  RecordWait(api, t0, t1, result, fds);
}

}  // namespace idlescope::io

using idlescope::Family;
using idlescope::io::EpollHook;
using idlescope::io::kReturnsError;
using idlescope::io::kSetsErrno;
using idlescope::io::Libc;
using idlescope::io::PollHook;
using idlescope::io::SelectHook;
using idlescope::io::TimedWait;
using idlescope::io::WaitedFds;

// ---------------------------------------------------------------------------------------------
// On descriptors (family io).

IDLESCOPE_EXPORT int poll(struct pollfd* fds, nfds_t n, int timeout) {
  return PollHook(IDLESCOPE_API("poll"), fds, n, [&] { return Libc().poll(fds, n, timeout); });
}

IDLESCOPE_EXPORT int __poll_chk(struct pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  return PollHook(IDLESCOPE_API("poll"), fds, n,
                  [&] { return Libc().__poll_chk(fds, n, timeout, fdslen); });
}

IDLESCOPE_EXPORT int ppoll(struct pollfd* fds, nfds_t n, const struct timespec* timeout,
                           const sigset_t* mask) {
  return PollHook(IDLESCOPE_API("ppoll"), fds, n,
                  [&] { return Libc().ppoll(fds, n, timeout, mask); });
}

IDLESCOPE_EXPORT int __ppoll_chk(struct pollfd* fds, nfds_t n, const struct timespec* timeout,
                                 const sigset_t* mask, size_t fdslen) {
  return PollHook(IDLESCOPE_API("ppoll"), fds, n,
                  [&] { return Libc().__ppoll_chk(fds, n, timeout, mask, fdslen); });
}

IDLESCOPE_EXPORT int select(int nfds, fd_set* r, fd_set* w, fd_set* x, struct timeval* timeout) {
  return SelectHook(IDLESCOPE_API("select"), nfds, r, w, x,
                    [&] { return Libc().select(nfds, r, w, x, timeout); });
}

IDLESCOPE_EXPORT int pselect(int nfds, fd_set* r, fd_set* w, fd_set* x,
                             const struct timespec* timeout, const sigset_t* mask) {
  return SelectHook(IDLESCOPE_API("pselect"), nfds, r, w, x,
                    [&] { return Libc().pselect(nfds, r, w, x, timeout, mask); });
}

IDLESCOPE_EXPORT int epoll_wait(int epfd, struct epoll_event* events, int max, int timeout) {
  return EpollHook(IDLESCOPE_API("epoll_wait"), epfd,
                   [&] { return Libc().epoll_wait(epfd, events, max, timeout); });
}

IDLESCOPE_EXPORT int epoll_pwait(int epfd, struct epoll_event* events, int max, int timeout,
                                 const sigset_t* mask) {
  return EpollHook(IDLESCOPE_API("epoll_pwait"), epfd,
                   [&] { return Libc().epoll_pwait(epfd, events, max, timeout, mask); });
}

IDLESCOPE_EXPORT int epoll_pwait2(int epfd, struct epoll_event* events, int max,
                                  const struct timespec* timeout, const sigset_t* mask) {
  if (Libc().epoll_pwait2 == nullptr) {  // glibc before 2.35
    errno = ENOSYS;
    return -1;
  }
  return EpollHook(IDLESCOPE_API("epoll_pwait2"), epfd,
                   [&] { return Libc().epoll_pwait2(epfd, events, max, timeout, mask); });
}

// ---------------------------------------------------------------------------------------------
// For a time or a signal (family proc): no descriptor.

IDLESCOPE_EXPORT int nanosleep(const struct timespec* req, struct timespec* rem) {
  return TimedWait(
      Family::kProc, IDLESCOPE_API("nanosleep"), [&] { return Libc().nanosleep(req, rem); },
      kSetsErrno);
}

IDLESCOPE_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec* req,
                                     struct timespec* rem) {
  return TimedWait(
      Family::kProc, IDLESCOPE_API("clock_nanosleep"),
      [&] { return Libc().clock_nanosleep(clock, flags, req, rem); }, kReturnsError);
}

IDLESCOPE_EXPORT int usleep(useconds_t us) {
  return TimedWait(
      Family::kProc, IDLESCOPE_API("usleep"), [&] { return Libc().usleep(us); }, kSetsErrno);
}

// sleep returns the seconds it did not sleep: more than 0 when a signal cut it short.
IDLESCOPE_EXPORT unsigned int sleep(unsigned int seconds) {
  return TimedWait(
      Family::kProc, IDLESCOPE_API("sleep"), [&] { return Libc().sleep(seconds); },
      [](unsigned int left, int, WaitedFds&) { return left > 0 ? -EINTR : 0; });
}

IDLESCOPE_EXPORT int pause(void) {
  return TimedWait(
      Family::kProc, IDLESCOPE_API("pause"), [&] { return Libc().pause(); }, kSetsErrno);
}

IDLESCOPE_EXPORT int sigwait(const sigset_t* set, int* sig) {
  return TimedWait(
      Family::kProc, IDLESCOPE_API("sigwait"), [&] { return Libc().sigwait(set, sig); },
      kReturnsError);
}

IDLESCOPE_EXPORT int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  return TimedWait(
      Family::kProc, IDLESCOPE_API("sigwaitinfo"), [&] { return Libc().sigwaitinfo(set, info); },
      kSetsErrno);
}

IDLESCOPE_EXPORT int sigtimedwait(const sigset_t* set, siginfo_t* info,
                                  const struct timespec* timeout) {
  return TimedWait(
      Family::kProc, IDLESCOPE_API("sigtimedwait"),
      [&] { return Libc().sigtimedwait(set, info, timeout); }, kSetsErrno);
}
