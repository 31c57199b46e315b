// Network hooks: connect (the remote address and whether it is loopback, cluster-local or public)
// and the bytes moved on sockets by recv/recvfrom/recvmsg/send/sendto/sendmsg. read/write on a
// socket are recorded by the same burst machinery in io.cc (the fd table says it is a socket), so
// "the job downloaded 800 MB from 52.x.x.x:443 during the gap" is visible however the program
// reads.
#include <errno.h>
#include <sys/socket.h>

#include <string_view>

#include "interpose/call_clock.h"
#include "interpose/hooks/io_libc.h"
#include "interpose/hooks/io_record.h"
#include "interpose/hooks/net_address.h"
#include "interpose/hooks/wait.h"
#include "interpose/recorder.h"

using idlescope::Family;
using idlescope::HookGuard;
using idlescope::InternString;
using idlescope::NowNs;
using idlescope::RawEvent;
using idlescope::io::FdInfo;
using idlescope::io::Fds;
using idlescope::io::FdState;
using idlescope::io::ForgetFd;
using idlescope::io::Libc;
using idlescope::io::MergeBurstCall;
using idlescope::io::RecordBurstCall;
using idlescope::io::RecordFdEvent;
namespace ev = idlescope::ev;
namespace io = idlescope::io;

namespace {

template <typename Call>
ssize_t SocketHook(uint8_t type, uint32_t (*api)(), int fd, Call&& call) {
  HookGuard guard(Family::kNet);
  if (!guard.active()) return call();
  uint64_t t0 = idlescope::CallTicks();
  ssize_t r = call();
  uint64_t t1 = idlescope::CallTicks();
  // File type 0: these calls on a non-socket fail with ENOTSOCK; nothing to record.
  uint64_t bytes = r > 0 ? static_cast<uint64_t>(r) : 0;
  if (r >= 0 && MergeBurstCall(0, type, fd, t0, t1, bytes)) return r;
  int err = errno;
  RecordBurstCall(0, type, api, fd, t0, t1, bytes, r < 0, err, 0);
  errno = err;
  return r;
}

// accept: a new socket whose number may be a closed file's: forget the old entry (also when not
// recording), the first I/O resolves the peer. A long accept is a wait on the listening socket
// (hooks/wait.h: a server waiting for its clients).
template <typename Call>
int AcceptHook(uint32_t (*api)(), int fd, Call&& call) {
  HookGuard guard(Family::kNet);
  if (!guard.active()) {
    int r = call();
    if (r >= 0) ForgetFd(r);
    return r;
  }
  uint64_t t0 = idlescope::CallTicks();
  int r = call();
  uint64_t t1 = idlescope::CallTicks();
  int err = errno;
  if (r >= 0) ForgetFd(r);
  if (idlescope::io::LongWait(t0, t1)) {
    idlescope::io::RecordFdWait(api, fd, t0, t1, r < 0 ? -err : 0);
  }
  errno = err;
  return r;
}

}  // namespace

namespace idlescope::io {

void RecordSocketIdentity(int fd, const FdInfo& info) {
  RawEvent e;
  e.ts = NowNs();
  e.count = 1;
  e.api = IDLESCOPE_API("getsockname")();
  e.type = ev::kNetSocket;
  e.u.io.fd = fd;
  e.u.io.path = info.path;
  e.u.io.fs_type = kFsSocket;
  e.u.io.net_scope = info.scope;
  sockaddr_storage addr;
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    char text[256];
    size_t n = FormatSockaddr(reinterpret_cast<sockaddr*>(&addr), len, text, sizeof(text));
    if (n > 0) e.u.io.local = InternPath(std::string_view(text, n), redact::PathKind::kAddress);
    if (addr.ss_family == AF_UNIX) {
      // The kernel's record of the other end: the pid that connect()ed (on the accepting side),
      // that listen()ed (on the connecting side), or that made a socketpair.
      ucred cred;
      socklen_t cred_len = sizeof(cred);
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0 && cred.pid > 0) {
        e.u.io.peer_pid = static_cast<uint32_t>(cred.pid);
      }
    }
  }
  Record(e);
}

}  // namespace idlescope::io

IDLESCOPE_EXPORT int connect(int fd, const struct sockaddr* addr, socklen_t len) {
  HookGuard guard(Family::kNet);
  if (!guard.active()) {
    ForgetFd(fd);
    return Libc().connect(fd, addr, len);
  }
  uint64_t t0 = NowNs();
  int r = Libc().connect(fd, addr, len);
  int err = errno;
  uint64_t t1 = NowNs();
  FdInfo info;
  info.state = FdState::kTracked;
  info.fs = io::kFsSocket;
  info.scope = io::ScopeOfSockaddr(addr, len);
  char text[256];
  size_t n = io::FormatSockaddr(addr, len, text, sizeof(text));
  if (n > 0) {
    info.path =
        idlescope::InternPath(std::string_view(text, n), idlescope::redact::PathKind::kAddress);
  }
  // A nonblocking connect returns EINPROGRESS and completes later: the fd is this peer's either
  // way. A failed connect leaves the socket unconnected: resolve lazily.
  const bool connected = r == 0 || err == EINPROGRESS;
  if (connected) {
    Fds().Set(fd, info);
  } else {
    ForgetFd(fd);
  }
  RecordFdEvent(ev::kNetConnect, IDLESCOPE_API("connect")(), fd, info, t0, t1, 0, r < 0 ? -err : 0);
  // Its own address is bound by now (an ephemeral port, even for a connect in progress).
  if (connected && info.path != 0) io::RecordSocketIdentity(fd, info);
  errno = err;
  return r;
}

IDLESCOPE_EXPORT int accept(int fd, struct sockaddr* addr, socklen_t* len) {
  return AcceptHook(IDLESCOPE_API("accept"), fd, [&] { return Libc().accept(fd, addr, len); });
}

IDLESCOPE_EXPORT int accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) {
  return AcceptHook(IDLESCOPE_API("accept4"), fd,
                    [&] { return Libc().accept4(fd, addr, len, flags); });
}

// recv/recvfrom/recvmsg and send/sendto/sendmsg: generated from io.def.
#define IDLESCOPE_LIBC(name, ret, params)
#define IDLESCOPE_IO_BURST(name, hook, api, params, args, offset)
#define IDLESCOPE_NET_BURST(name, type, params, args)                                        \
  IDLESCOPE_EXPORT ssize_t name params {                                                     \
    return SocketHook(ev::type, IDLESCOPE_API(#name), fd, [&] { return Libc().name args; }); \
  }
#include "interpose/hooks/io.def"
#undef IDLESCOPE_NET_BURST
#undef IDLESCOPE_IO_BURST
#undef IDLESCOPE_LIBC
