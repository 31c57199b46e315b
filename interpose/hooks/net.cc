// Network hooks: connect (the remote address and whether it is loopback, cluster-local or public)
// and the bytes moved on sockets by recv/recvfrom/recvmsg/send/sendto/sendmsg. read/write on a
// socket are recorded by the same burst machinery in io.cc (the fd table says it is a socket), so
// "the job downloaded 800 MB from 52.x.x.x:443 during the gap" is visible however the program
// reads.
#include <errno.h>
#include <sys/socket.h>

#include <string_view>

#include "interpose/hooks/io_clock.h"
#include "interpose/hooks/io_libc.h"
#include "interpose/hooks/io_record.h"
#include "interpose/hooks/net_address.h"
#include "interpose/recorder.h"

using idlescope::Family;
using idlescope::HookGuard;
using idlescope::InternString;
using idlescope::NowNs;
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

#define NET_API(name) IDLESCOPE_API(name)

template <typename Call>
ssize_t SocketHook(uint8_t type, uint32_t (*api)(), int fd, Call&& call) {
  HookGuard guard(Family::kNet);
  if (!guard.active()) return call();
  uint64_t t0 = idlescope::io::CallTicks();
  ssize_t r = call();
  uint64_t t1 = idlescope::io::CallTicks();
  // File type 0: these calls on a non-socket fail with ENOTSOCK; nothing to record.
  uint64_t bytes = r > 0 ? static_cast<uint64_t>(r) : 0;
  if (r >= 0 && MergeBurstCall(0, type, fd, t0, t1, bytes)) return r;
  int err = errno;
  RecordBurstCall(0, type, api, fd, t0, t1, bytes, r < 0, err, 0);
  errno = err;
  return r;
}

// accept: a new socket whose number may be a closed file's: forget the old entry, the first
// I/O resolves the peer.
int AfterAccept(int fd) {
  if (fd >= 0) ForgetFd(fd);
  return fd;
}

}  // namespace

IDLESCOPE_HOOK int connect(int fd, const struct sockaddr* addr, socklen_t len) {
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
  if (r == 0 || err == EINPROGRESS) {
    Fds().Set(fd, info);
  } else {
    ForgetFd(fd);
  }
  RecordFdEvent(ev::kNetConnect, NET_API("connect")(), fd, info, t0, t1, 0, r < 0 ? -err : 0);
  errno = err;
  return r;
}

IDLESCOPE_HOOK int accept(int fd, struct sockaddr* addr, socklen_t* len) {
  return AfterAccept(Libc().accept(fd, addr, len));
}

IDLESCOPE_HOOK int accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) {
  return AfterAccept(Libc().accept4(fd, addr, len, flags));
}

IDLESCOPE_HOOK ssize_t recv(int fd, void* buf, size_t n, int flags) {
  return SocketHook(ev::kNetRecv, NET_API("recv"), fd,
                    [&] { return Libc().recv(fd, buf, n, flags); });
}

IDLESCOPE_HOOK ssize_t recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* addr,
                                socklen_t* len) {
  return SocketHook(ev::kNetRecv, NET_API("recvfrom"), fd,
                    [&] { return Libc().recvfrom(fd, buf, n, flags, addr, len); });
}

IDLESCOPE_HOOK ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  return SocketHook(ev::kNetRecv, NET_API("recvmsg"), fd,
                    [&] { return Libc().recvmsg(fd, msg, flags); });
}

IDLESCOPE_HOOK ssize_t send(int fd, const void* buf, size_t n, int flags) {
  return SocketHook(ev::kNetSend, NET_API("send"), fd,
                    [&] { return Libc().send(fd, buf, n, flags); });
}

IDLESCOPE_HOOK ssize_t sendto(int fd, const void* buf, size_t n, int flags,
                              const struct sockaddr* addr, socklen_t len) {
  return SocketHook(ev::kNetSend, NET_API("sendto"), fd,
                    [&] { return Libc().sendto(fd, buf, n, flags, addr, len); });
}

IDLESCOPE_HOOK ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  return SocketHook(ev::kNetSend, NET_API("sendmsg"), fd,
                    [&] { return Libc().sendmsg(fd, msg, flags); });
}
