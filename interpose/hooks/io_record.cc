#include "interpose/hooks/io_record.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "interpose/call_clock.h"
#include "interpose/hooks/io_burst.h"
#include "interpose/hooks/io_libc.h"
#include "interpose/hooks/net_address.h"
#include "interpose/recorder.h"

namespace idlescope::io {
namespace {

constexpr BurstPolicy kPolicy;
// Minimum time between two stack captures on one thread.
constexpr uint64_t kStackIntervalNs = 50'000;
// A call that blocked this long gets its stack whatever the rate limit: it is the evidence the
// report shows for the idle time it explains (a blocking read right after a short write).
constexpr uint64_t kAlwaysStackNs = 100'000;

__thread uint64_t t_last_stack __attribute__((tls_model("initial-exec"))) = 0;

// The open burst is the recorder's pending event of this thread (recorder.h): every growth step
// is published there (whole at its start, first error or stack; else only the counters, with
// UpdatePendingEvent), and the recorder appends it before the thread's next event of any kind and
// at every ending of the thread or process. t_burst keeps what merging needs (last_end...), in
// call-clock ticks; the event gets trace-clock ns.
void Publish(const Burst& b) {
  RawEvent e;
  e.ts = b.ts_ns;
  e.dur = TickSpanNs(b.dur);
  e.bytes = b.bytes;
  e.count = b.count;
  e.api = b.api;
  e.stack = b.stack;
  e.result = b.result;
  e.type = b.type;
  e.u.io.offset = b.offset;
  e.u.io.path = b.path;
  e.u.io.fd = b.fd;
  e.u.io.fs_type = b.fs;
  e.u.io.net_scope = b.scope;
  SetPendingEvent(e);
}

// readlink(/proc/self/fd/N) into buf; length or 0.
size_t LinkOfFd(int fd, char* buf, size_t size) {
  char link[40];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, buf, size - 1);
  if (n <= 0) return 0;
  buf[n] = '\0';
  return static_cast<size_t>(n);
}

FdInfo Classify(int fd, const char* path, size_t path_len) {
  FdInfo info;
  info.state = FdState::kTracked;
  if (IsTraceFd(fd)) {
    info.state = FdState::kIgnored;
    return info;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) return FdInfo{};
  info.fs = FsTypeFromMode(st.st_mode);
  char buf[4096];
  if (info.fs == kFsSocket) {
    sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    size_t n = 0;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      n = FormatSockaddr(reinterpret_cast<sockaddr*>(&addr), len, buf, sizeof(buf));
      info.scope = ScopeOfSockaddr(reinterpret_cast<sockaddr*>(&addr), len);
    }
    if (n > 0) info.path = InternPath(std::string_view(buf, n), redact::PathKind::kAddress);
    return info;
  }
  if (info.fs == kFsUnspecified) {
    struct statfs sfs;
    info.fs = fstatfs(fd, &sfs) == 0 ? FsTypeFromStatfsMagic(static_cast<uint64_t>(sfs.f_type))
                                     : kFsOther;
  }
  if (path == nullptr || path_len == 0) {
    path_len = LinkOfFd(fd, buf, sizeof(buf));
    path = buf;
  }
  if (path_len > 0)
    info.path = InternPath(std::string_view(path, path_len), redact::PathKind::kFile);
  return info;
}

}  // namespace

namespace detail {
__thread Burst t_burst __attribute__((tls_model("initial-exec")));
__thread TickLimits t_limits __attribute__((tls_model("initial-exec")));
}  // namespace detail

using detail::t_burst;
using detail::t_limits;

FdTable& Fds() { return detail::g_hot.fds; }

void ForgetFd(int fd) {
  if (!OwnFdTable()) Fds().Clear(fd);
}

void ForgetFds(unsigned first, unsigned last) {
  if (!OwnFdTable()) Fds().ClearRange(first, last);
}

void CopyFd(int from, int to) {
  if (!OwnFdTable()) Fds().Copy(from, to);
}

FdInfo ResolveFd(int fd) {
  FdInfo info = Fds().Get(fd);
  if (info.state != FdState::kUnknown) return info;
  info = Classify(fd, nullptr, 0);
  if (info.state != FdState::kUnknown) Fds().Set(fd, info);
  // A connected socket seen for the first time (accepted, inherited, a socketpair's end): who
  // is at the other end, once (connect records its own).
  if (info.fs == kFsSocket && info.path != 0) RecordSocketIdentity(fd, info);
  return info;
}

uint32_t InternAbsolutePath(int dirfd, const char* path) {
  if (path == nullptr) return 0;
  if (path[0] == '/') return InternPath(path, redact::PathKind::kFile);
  char joined[4096];
  size_t n = 0;
  if (dirfd == AT_FDCWD) {
    if (getcwd(joined, sizeof(joined)) != nullptr) n = strlen(joined);
  } else {
    n = LinkOfFd(dirfd, joined, sizeof(joined));
  }
  if (n == 0 || joined[0] != '/') return InternPath(path, redact::PathKind::kFile);
  int m = snprintf(joined + n, sizeof(joined) - n, "%s%s", joined[n - 1] == '/' ? "" : "/", path);
  if (m < 0 || static_cast<size_t>(m) >= sizeof(joined) - n) {
    return InternPath(path, redact::PathKind::kFile);
  }
  return InternPath(std::string_view(joined, n + static_cast<size_t>(m)), redact::PathKind::kFile);
}

FdInfo TrackOpenedFd(int fd, int dirfd, const char* path) {
  if (fd < 0) return {};
  FdInfo info;
  if (path != nullptr && path[0] == '/') {
    info = Classify(fd, path, strlen(path));
  } else {
    // Relative to the cwd or to dirfd: the kernel knows the absolute name.
    (void)dirfd;
    info = Classify(fd, nullptr, 0);
  }
  if (info.state != FdState::kUnknown) Fds().Set(fd, info);
  return info;
}

uint32_t MaybeCaptureStack(uint64_t t0, uint64_t dur) {
  if (dur < kAlwaysStackNs && t0 - t_last_stack < kStackIntervalNs) return 0;
  t_last_stack = t0;
  // Skip this function and RecordBurstCall/RecordFdEvent: the innermost frame is the hook.
  return CaptureStack(2);
}

void RecordBurstCall(uint8_t file_type, uint8_t net_type, uint32_t (*api)(), int fd, uint64_t tick0,
                     uint64_t tick1, uint64_t bytes, bool failed, int err, uint64_t offset) {
  uint32_t gen = Fds().Generation();      // before the entry: a later change moves it
  uint64_t packed = Fds().GetPacked(fd);  // unpacked only when a burst starts
  if (__builtin_expect(FdInfo::StateOf(packed) == FdState::kUnknown, 0)) {
    if (failed && err == EBADF) return;  // not an fd: nothing to describe
    packed = ResolveFd(fd).Pack();
  }
  if (FdInfo::StateOf(packed) == FdState::kIgnored) return;
  uint8_t type = FdInfo::FsOf(packed) == kFsSocket ? net_type : file_type;
  if (type == 0) return;
  IoCall call;
  call.type = type;
  call.fd = fd;
  call.fd_info = packed;
  call.ts = tick0;
  call.dur = tick1 - tick0;
  call.bytes = bytes;
  call.result = failed ? -err : 0;
  call.offset = offset;
  Burst& b = t_burst;
  TickLimits& limits = t_limits;
  // The recorder closed it: this thread recorded another event (CUDA, NCCL, a mark) or forked.
  if (b.open && !PendingEventOpen()) b.open = false;
  if (Extends(b, call, limits.policy)) {
    // The common case, thousands of times per burst: no conversion to ns but the burst's total
    // time, and only the counters are republished.
    bool first_error = Merge(b, call);
    b.fd_gen = gen;
    if (__builtin_expect(b.stack == 0 && call.dur >= limits.always_stack, 0)) {
      b.stack = MaybeCaptureStack(TicksToNs(tick0), TickSpanNs(call.dur));
      first_error = true;  // republish whole
    }
    if (__builtin_expect(first_error, 0)) {
      Publish(b);
    } else {
      UpdatePendingEvent(TickSpanNs(b.dur), b.bytes, b.count);
    }
    return;
  }
  if (b.open) CloseBurst();
  // The limits follow the tick ratio as it is refined (once per burst: two divisions).
  limits.policy = kPolicy.InTicks(NsToTicks);
  limits.always_stack = NsToTicks(kAlwaysStackNs);
  call.api = api();
  Begin(b, call);
  b.fd_gen = gen;
  FdInfo info = FdInfo::Unpack(packed);
  b.ts_ns = TicksToNs(tick0);
  b.path = info.path;
  b.fs = info.fs;
  b.scope = info.scope;
  b.stack = MaybeCaptureStack(b.ts_ns, TickSpanNs(call.dur));
  Publish(b);
}

void CloseBurst() {
  t_burst.open = false;
  RecordPendingEvent();
}

void RecordFdEvent(uint8_t type, uint32_t api, int fd, const FdInfo& info, uint64_t t0, uint64_t t1,
                   uint64_t bytes, int32_t result, uint32_t source) {
  RawEvent e;
  e.ts = t0;
  e.dur = t1 - t0;
  e.bytes = bytes;
  e.count = 1;
  e.api = api;
  e.stack = MaybeCaptureStack(t0, t1 - t0);
  e.result = result;
  e.type = type;
  e.u.io.path = info.path;
  e.u.io.fd = fd;
  e.u.io.fs_type = info.fs;
  e.u.io.net_scope = info.scope;
  e.u.io.source = source;
  Record(e);
}

}  // namespace idlescope::io
