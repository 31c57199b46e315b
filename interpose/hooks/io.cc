// File I/O hooks (glibc): opening, writing, reading, syncing, renaming and closing files, and
// the stdio functions, which glibc implements on internal write/read calls that never reach the
// write/read PLT (so fwrite/fflush/fclose/fprintf must be hooked themselves). Reads and writes
// are merged into per-thread bursts (io_burst.h); opens, syncs, renames and closes are single
// events. The real functions come from io.def; the recording machinery from io_record.h.
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "interpose/call_clock.h"
#include "interpose/hooks/io_libc.h"
#include "interpose/hooks/io_record.h"
#include "interpose/recorder.h"

using idlescope::Family;
using idlescope::HookGuard;
using idlescope::InternString;
using idlescope::NowNs;
using idlescope::io::CloseBurst;
using idlescope::io::CopyFd;
using idlescope::io::FdInfo;
using idlescope::io::Fds;
using idlescope::io::FdState;
using idlescope::io::ForgetFd;
using idlescope::io::ForgetFds;
using idlescope::io::Libc;
using idlescope::io::MergeBurstCall;
using idlescope::io::RecordBurstCall;
using idlescope::io::RecordFdEvent;
using idlescope::io::ResolveFd;
using idlescope::io::TrackOpenedFd;
namespace ev = idlescope::ev;

namespace {

// Bytes waiting in a stdio write buffer (glibc's struct _IO_FILE is public in <bits/types>):
// what fflush/fclose is about to write.
uint64_t PendingWriteBytes(FILE* fp) {
  if (fp == nullptr || fp->_IO_write_ptr == nullptr || fp->_IO_write_base == nullptr) return 0;
  return fp->_IO_write_ptr > fp->_IO_write_base
             ? static_cast<uint64_t>(fp->_IO_write_ptr - fp->_IO_write_base)
             : 0;
}

int FileFd(FILE* fp) { return fp == nullptr ? -1 : fileno(fp); }

bool NeedsMode(int flags) { return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE; }

void AfterOpen(uint32_t api, int dirfd, const char* path, int fd, int err, uint64_t t0,
               uint64_t t1) {
  FdInfo info;
  if (fd >= 0) {
    info = TrackOpenedFd(fd, dirfd, path);
    if (info.state == FdState::kIgnored) return;
  } else if (path != nullptr) {
    info.path = idlescope::InternPath(path, idlescope::redact::PathKind::kFile);
  }
  RecordFdEvent(ev::kFileOpen, api, fd, info, t0, t1, 0, fd >= 0 ? 0 : -err);
}

// One body for open/open64/openat/openat64/creat and the fortified __open*_2 forms.
template <typename Call>
int OpenHook(uint32_t (*api)(), int dirfd, const char* path, Call&& call) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return call();
  uint64_t t0 = NowNs();
  int fd = call();
  int err = errno;
  AfterOpen(api(), dirfd, path, fd, err, t0, NowNs());
  errno = err;
  return fd;
}

FILE* FopenHook(uint32_t api, const char* path, FILE* (*real)(const char*, const char*),
                const char* mode) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return real(path, mode);
  uint64_t t0 = NowNs();
  FILE* fp = real(path, mode);
  int err = errno;
  AfterOpen(api, AT_FDCWD, path, FileFd(fp), err, t0, NowNs());
  errno = err;
  return fp;
}

// A burst-merged call: the generic body of write/read and friends. `Call` returns the real
// result; `bytes_of` maps it to bytes moved.
template <typename Ret, typename Call, typename Bytes>
Ret BurstHook(uint8_t file_type, uint8_t net_type, uint32_t (*api)(), int fd, uint64_t offset,
              Call&& call, Bytes&& bytes_of) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return call();
  uint64_t t0 = idlescope::CallTicks();
  Ret r = call();
  uint64_t t1 = idlescope::CallTicks();
  bool failed = false;
  uint64_t bytes = bytes_of(r, &failed);
  if (!failed && MergeBurstCall(file_type, net_type, fd, t0, t1, bytes)) return r;
  int err = errno;
  RecordBurstCall(file_type, net_type, api, fd, t0, t1, bytes, failed, err, offset);
  errno = err;
  return r;
}

uint64_t SsizeBytes(ssize_t r, bool* failed) {
  *failed = r < 0;
  return r > 0 ? static_cast<uint64_t>(r) : 0;
}

template <typename Call>
ssize_t WriteHook(uint32_t (*api)(), int fd, uint64_t offset, Call&& call) {
  return BurstHook<ssize_t>(ev::kFileWrite, ev::kNetSend, api, fd, offset, call, SsizeBytes);
}

template <typename Call>
ssize_t ReadHook(uint32_t (*api)(), int fd, uint64_t offset, Call&& call) {
  return BurstHook<ssize_t>(ev::kFileRead, ev::kNetRecv, api, fd, offset, call, SsizeBytes);
}

// The offsets of io.def's IDLESCOPE_IO_BURST lines.
uint64_t AtOffset(off64_t off) { return static_cast<uint64_t>(off); }
uint64_t AtOffsetOrCurrent(off64_t off) { return off < 0 ? 0 : static_cast<uint64_t>(off); }

// stdio: fd from fileno (-1 for fmemopen/fopencookie streams, which are not files: not
// recorded). Evaluated after the call: the FILE stays valid.
template <typename Ret, typename Call, typename Bytes>
Ret StdioHook(uint8_t type, uint32_t (*api)(), FILE* fp, Call&& call, Bytes&& bytes_of) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return call();
  uint64_t t0 = idlescope::CallTicks();
  Ret r = call();
  int err = errno;
  uint64_t t1 = idlescope::CallTicks();
  int fd = FileFd(fp);
  if (fd >= 0) {
    bool failed = false;
    uint64_t bytes = bytes_of(r, &failed);
    uint8_t net_type = type == ev::kFileWrite ? ev::kNetSend : ev::kNetRecv;
    if (failed || !MergeBurstCall(type, net_type, fd, t0, t1, bytes)) {
      RecordBurstCall(type, net_type, api, fd, t0, t1, bytes, failed, err, 0);
    }
  }
  errno = err;
  return r;
}

template <typename Call>
int SyncHook(uint32_t (*api)(), int fd, uint64_t bytes, Call&& call) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return call();
  CloseBurst();  // the writes this sync makes durable come first
  uint64_t t0 = NowNs();
  int r = call();
  int err = errno;
  uint64_t t1 = NowNs();
  FdInfo info = fd >= 0 ? ResolveFd(fd) : FdInfo{};
  if (info.state != FdState::kIgnored) {
    RecordFdEvent(ev::kFileSync, api(), fd, info, t0, t1, bytes, r < 0 ? -err : 0);
  }
  errno = err;
  return r;
}

// A rename names both files, the old name as `source` (trace.proto, FILE_RENAME): a file written
// under a temporary name and then renamed to a model file's is a checkpoint (atomic-write
// libraries, tempfile), which the analysis can only tell by the old name. Both absolute, as the
// paths of writes are (a write's path comes from the fd table, absolute), so that they match.
template <typename Call>
int RenameHook(uint32_t (*api)(), int fromfd, const char* from, int tofd, const char* to,
               Call&& call) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return call();
  uint64_t t0 = NowNs();
  int r = call();
  int err = errno;
  uint64_t t1 = NowNs();
  FdInfo info;
  info.path = idlescope::io::InternAbsolutePath(tofd, to);
  idlescope::io::RecordFdEvent(ev::kFileRename, api(), -1, info, t0, t1, 0, r < 0 ? -err : 0,
                               idlescope::io::InternAbsolutePath(fromfd, from));
  errno = err;
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Opening.

IDLESCOPE_EXPORT int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (NeedsMode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return OpenHook(IDLESCOPE_API("open"), AT_FDCWD, path,
                  [&] { return Libc().open(path, flags, mode); });
}

IDLESCOPE_EXPORT int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (NeedsMode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return OpenHook(IDLESCOPE_API("open64"), AT_FDCWD, path,
                  [&] { return Libc().open64(path, flags, mode); });
}

IDLESCOPE_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (NeedsMode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return OpenHook(IDLESCOPE_API("openat"), dirfd, path,
                  [&] { return Libc().openat(dirfd, path, flags, mode); });
}

IDLESCOPE_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (NeedsMode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return OpenHook(IDLESCOPE_API("openat64"), dirfd, path,
                  [&] { return Libc().openat64(dirfd, path, flags, mode); });
}

IDLESCOPE_EXPORT int creat(const char* path, mode_t mode) {
  return OpenHook(IDLESCOPE_API("creat"), AT_FDCWD, path, [&] { return Libc().creat(path, mode); });
}

IDLESCOPE_EXPORT int creat64(const char* path, mode_t mode) {
  return OpenHook(IDLESCOPE_API("creat64"), AT_FDCWD, path,
                  [&] { return Libc().creat64(path, mode); });
}

// _FORTIFY_SOURCE turns open(path, flags) without a mode into __open_2 & co.
IDLESCOPE_EXPORT int __open_2(const char* path, int flags) {
  return OpenHook(IDLESCOPE_API("open"), AT_FDCWD, path,
                  [&] { return Libc().__open_2(path, flags); });
}

IDLESCOPE_EXPORT int __open64_2(const char* path, int flags) {
  return OpenHook(IDLESCOPE_API("open64"), AT_FDCWD, path,
                  [&] { return Libc().__open64_2(path, flags); });
}

IDLESCOPE_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return OpenHook(IDLESCOPE_API("openat"), dirfd, path,
                  [&] { return Libc().__openat_2(dirfd, path, flags); });
}

IDLESCOPE_EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return OpenHook(IDLESCOPE_API("openat64"), dirfd, path,
                  [&] { return Libc().__openat64_2(dirfd, path, flags); });
}

IDLESCOPE_EXPORT FILE* fopen(const char* path, const char* mode) {
  return FopenHook(IDLESCOPE_API("fopen")(), path, Libc().fopen, mode);
}

IDLESCOPE_EXPORT FILE* fopen64(const char* path, const char* mode) {
  return FopenHook(IDLESCOPE_API("fopen64")(), path, Libc().fopen64, mode);
}

// fdopen wraps an fd we already know (or resolve lazily): no event.
IDLESCOPE_EXPORT FILE* fdopen(int fd, const char* mode) { return Libc().fdopen(fd, mode); }

// freopen closes the stream's old fd inside glibc (no close PLT): forget it, then track the new.
template <typename Real>
FILE* FreopenHook(uint32_t (*api)(), const char* path, const char* mode, FILE* fp, Real real) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return real(path, mode, fp);
  CloseBurst();
  int old_fd = FileFd(fp);
  uint64_t t0 = NowNs();
  FILE* r = real(path, mode, fp);
  int err = errno;
  if (path != nullptr) {
    ForgetFd(old_fd);
    AfterOpen(api(), AT_FDCWD, path, FileFd(r), err, t0, NowNs());
  }
  errno = err;
  return r;
}

IDLESCOPE_EXPORT FILE* freopen(const char* path, const char* mode, FILE* fp) {
  return FreopenHook(IDLESCOPE_API("freopen"), path, mode, fp, Libc().freopen);
}

IDLESCOPE_EXPORT FILE* freopen64(const char* path, const char* mode, FILE* fp) {
  return FreopenHook(IDLESCOPE_API("freopen64"), path, mode, fp, Libc().freopen64);
}

// ---------------------------------------------------------------------------------------------
// Closing and duplicating: keep the fd table right even when not recording.

// Where the trace file sits in the program's table (the shared-table fallback, trace_file.h), a
// program that closes every descriptor, or dup2()s onto ours, must not take it away: a close of it
// succeeds without closing it, a dup onto it first moves ours elsewhere (uftrace and heaptrack
// protect their descriptors the same way). Elsewhere IsTraceFd is false for every number.
IDLESCOPE_EXPORT int close(int fd) {
  if (idlescope::IsTraceFd(fd)) return 0;
  HookGuard guard(Family::kIo);
  if (!guard.active()) {
    ForgetFd(fd);
    return Libc().close(fd);
  }
  FdInfo info = Fds().Get(fd);
  uint64_t t0 = NowNs();
  if (info.state == FdState::kTracked) CloseBurst();
  // Linux releases the fd even when close fails with EINTR/EIO: forget it first, so a racing
  // open() of the same number in another thread is not clobbered afterwards.
  ForgetFd(fd);
  int r = Libc().close(fd);
  int err = errno;
  if (info.state == FdState::kTracked) {
    RecordFdEvent(ev::kFileClose, IDLESCOPE_API("close")(), fd, info, t0, NowNs(), 0,
                  r < 0 ? -err : 0);
  }
  errno = err;
  return r;
}

IDLESCOPE_EXPORT int fclose(FILE* fp) {
  int saved = errno;
  int fd = FileFd(fp);
  errno = saved;
  HookGuard guard(Family::kIo);
  if (!guard.active()) {
    ForgetFd(fd);
    return Libc().fclose(fp);
  }
  FdInfo info = Fds().Get(fd);
  uint64_t pending = PendingWriteBytes(fp);
  if (info.state == FdState::kTracked) CloseBurst();
  uint64_t t0 = NowNs();
  ForgetFd(fd);
  int r = Libc().fclose(fp);
  int err = errno;
  if (info.state == FdState::kTracked) {
    // bytes: what fclose flushed from the stdio buffer (its time is in dur).
    RecordFdEvent(ev::kFileClose, IDLESCOPE_API("fclose")(), fd, info, t0, NowNs(), pending,
                  r != 0 ? -err : 0);
  }
  errno = err;
  return r;
}

IDLESCOPE_EXPORT int close_range(unsigned first, unsigned last, int flags) {
  if (Libc().close_range == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  int r;
  int trace = idlescope::TraceFdIn(first, last);
  if (trace >= 0 && (flags & CLOSE_RANGE_CLOEXEC) == 0) {
    // Around ours: [first, trace) and (trace, last].
    r = trace > static_cast<int>(first)
            ? Libc().close_range(first, static_cast<unsigned>(trace) - 1, flags)
            : 0;
    if (r == 0 && static_cast<unsigned>(trace) < last) {
      r = Libc().close_range(static_cast<unsigned>(trace) + 1, last, flags);
    }
  } else {
    r = Libc().close_range(first, last, flags);
  }
  if (r == 0 && (flags & CLOSE_RANGE_CLOEXEC) == 0) {
    int saved = errno;
    ForgetFds(first, last);
    errno = saved;
  }
  return r;
}

IDLESCOPE_EXPORT int dup(int fd) {
  int r = Libc().dup(fd);
  if (r >= 0) CopyFd(fd, r);
  return r;
}

IDLESCOPE_EXPORT int dup2(int fd, int fd2) {
  if (fd != fd2) idlescope::MoveTraceFdAwayFrom(fd2);
  int r = Libc().dup2(fd, fd2);
  if (r >= 0 && fd != fd2) CopyFd(fd, r);
  return r;
}

IDLESCOPE_EXPORT int dup3(int fd, int fd2, int flags) {
  if (fd != fd2) idlescope::MoveTraceFdAwayFrom(fd2);
  int r = Libc().dup3(fd, fd2, flags);
  if (r >= 0) CopyFd(fd, r);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Writing (burst-merged; on a socket these are NET_SEND). write, pwrite*, writev, pwritev* and
// the reads (read, pread*, readv, preadv*, and their _chk forms) are generated from io.def.

#define IDLESCOPE_LIBC(name, ret, params)
#define IDLESCOPE_NET_BURST(name, type, params, args)
#define IDLESCOPE_IO_BURST(name, hook, api, params, args, offset)                  \
  IDLESCOPE_EXPORT ssize_t name params {                                           \
    return hook(IDLESCOPE_API(api), fd, offset, [&] { return Libc().name args; }); \
  }
#include "interpose/hooks/io.def"
#undef IDLESCOPE_IO_BURST
#undef IDLESCOPE_NET_BURST
#undef IDLESCOPE_LIBC

namespace {
auto ItemBytes(size_t size) {
  return [size](size_t items, bool* failed) {
    *failed = false;
    return static_cast<uint64_t>(items) * size;
  };
}
uint64_t PrintfBytes(int r, bool* failed) {
  *failed = r < 0;
  return r > 0 ? static_cast<uint64_t>(r) : 0;
}
}  // namespace

IDLESCOPE_EXPORT size_t fwrite(const void* ptr, size_t size, size_t n, FILE* fp) {
  return StdioHook<size_t>(
      ev::kFileWrite, IDLESCOPE_API("fwrite"), fp, [&] { return Libc().fwrite(ptr, size, n, fp); },
      ItemBytes(size));
}

IDLESCOPE_EXPORT size_t fwrite_unlocked(const void* ptr, size_t size, size_t n, FILE* fp) {
  return StdioHook<size_t>(
      ev::kFileWrite, IDLESCOPE_API("fwrite_unlocked"), fp,
      [&] { return Libc().fwrite_unlocked(ptr, size, n, fp); }, ItemBytes(size));
}

IDLESCOPE_EXPORT int fputs(const char* s, FILE* fp) {
  return StdioHook<int>(
      ev::kFileWrite, IDLESCOPE_API("fputs"), fp, [&] { return Libc().fputs(s, fp); },
      [s](int r, bool* failed) {
        *failed = r == EOF;
        return r == EOF ? uint64_t{0} : static_cast<uint64_t>(strlen(s));
      });
}

IDLESCOPE_EXPORT int vfprintf(FILE* fp, const char* fmt, va_list ap) {
  return StdioHook<int>(
      ev::kFileWrite, IDLESCOPE_API("vfprintf"), fp, [&] { return Libc().vfprintf(fp, fmt, ap); },
      PrintfBytes);
}

IDLESCOPE_EXPORT int fprintf(FILE* fp, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = StdioHook<int>(
      ev::kFileWrite, IDLESCOPE_API("fprintf"), fp, [&] { return Libc().vfprintf(fp, fmt, ap); },
      PrintfBytes);
  va_end(ap);
  return r;
}

// _FORTIFY_SOURCE forms of fprintf/vfprintf.
IDLESCOPE_EXPORT int __vfprintf_chk(FILE* fp, int flag, const char* fmt, va_list ap) {
  return StdioHook<int>(
      ev::kFileWrite, IDLESCOPE_API("vfprintf"), fp,
      [&] { return Libc().__vfprintf_chk(fp, flag, fmt, ap); }, PrintfBytes);
}

IDLESCOPE_EXPORT int __fprintf_chk(FILE* fp, int flag, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = StdioHook<int>(
      ev::kFileWrite, IDLESCOPE_API("fprintf"), fp,
      [&] { return Libc().__vfprintf_chk(fp, flag, fmt, ap); }, PrintfBytes);
  va_end(ap);
  return r;
}

// fflush(fp) pushes the stdio buffer out with glibc's internal write: its time joins the
// stream's write burst (bytes 0: fwrite already counted them). fflush(NULL) flushes every stream:
// a FILE_SYNC event of its own.
IDLESCOPE_EXPORT int fflush(FILE* fp) {
  if (fp != nullptr) {
    return StdioHook<int>(
        ev::kFileWrite, IDLESCOPE_API("fflush"), fp, [&] { return Libc().fflush(fp); },
        [](int r, bool* failed) {
          *failed = r != 0;
          return uint64_t{0};
        });
  }
  return SyncHook(IDLESCOPE_API("fflush"), -1, 0, [&] { return Libc().fflush(fp); });
}

// ---------------------------------------------------------------------------------------------
// Making data durable and renaming: single events, each closes the thread's burst.

IDLESCOPE_EXPORT int fsync(int fd) {
  return SyncHook(IDLESCOPE_API("fsync"), fd, 0, [&] { return Libc().fsync(fd); });
}

IDLESCOPE_EXPORT int fdatasync(int fd) {
  return SyncHook(IDLESCOPE_API("fdatasync"), fd, 0, [&] { return Libc().fdatasync(fd); });
}

IDLESCOPE_EXPORT int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags) {
  return SyncHook(IDLESCOPE_API("sync_file_range"), fd, n > 0 ? static_cast<uint64_t>(n) : 0,
                  [&] { return Libc().sync_file_range(fd, off, n, flags); });
}

// msync is mappings.cc's: its path is the file mapping the address is in.

IDLESCOPE_EXPORT int rename(const char* from, const char* to) {
  return RenameHook(IDLESCOPE_API("rename"), AT_FDCWD, from, AT_FDCWD, to,
                    [&] { return Libc().rename(from, to); });
}

IDLESCOPE_EXPORT int renameat(int fromfd, const char* from, int tofd, const char* to) {
  return RenameHook(IDLESCOPE_API("renameat"), fromfd, from, tofd, to,
                    [&] { return Libc().renameat(fromfd, from, tofd, to); });
}

IDLESCOPE_EXPORT int renameat2(int fromfd, const char* from, int tofd, const char* to,
                               unsigned int flags) {
  if (Libc().renameat2 == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return RenameHook(IDLESCOPE_API("renameat2"), fromfd, from, tofd, to,
                    [&] { return Libc().renameat2(fromfd, from, tofd, to, flags); });
}

// ---------------------------------------------------------------------------------------------
// Reading (burst-merged; on a socket these are NET_RECV): the stdio reads. read, pread*, readv
// and preadv* are generated from io.def (above).

IDLESCOPE_EXPORT size_t fread(void* ptr, size_t size, size_t n, FILE* fp) {
  return StdioHook<size_t>(
      ev::kFileRead, IDLESCOPE_API("fread"), fp, [&] { return Libc().fread(ptr, size, n, fp); },
      ItemBytes(size));
}

IDLESCOPE_EXPORT size_t fread_unlocked(void* ptr, size_t size, size_t n, FILE* fp) {
  return StdioHook<size_t>(
      ev::kFileRead, IDLESCOPE_API("fread_unlocked"), fp,
      [&] { return Libc().fread_unlocked(ptr, size, n, fp); }, ItemBytes(size));
}

IDLESCOPE_EXPORT size_t __fread_chk(void* ptr, size_t buflen, size_t size, size_t n, FILE* fp) {
  return StdioHook<size_t>(
      ev::kFileRead, IDLESCOPE_API("fread"), fp,
      [&] { return Libc().__fread_chk(ptr, buflen, size, n, fp); }, ItemBytes(size));
}

IDLESCOPE_EXPORT size_t __fread_unlocked_chk(void* ptr, size_t buflen, size_t size, size_t n,
                                             FILE* fp) {
  return StdioHook<size_t>(
      ev::kFileRead, IDLESCOPE_API("fread_unlocked"), fp,
      [&] { return Libc().__fread_unlocked_chk(ptr, buflen, size, n, fp); }, ItemBytes(size));
}

// Line reads: how C programs and CPython's input() without readline (fgets) read a prompt's
// answer, and how programs read text files line by line (issue 13: a prompt on a terminal went
// unseen). glibc reads the stream's buffer with its internal read, which no hook sees.
namespace {
auto LineBytes(FILE* fp) {
  return [fp](char* line, bool* failed) {
    *failed = line == nullptr && ferror(fp);
    return line == nullptr ? uint64_t{0} : static_cast<uint64_t>(strlen(line));
  };
}
auto DelimBytes(FILE* fp) {
  return [fp](ssize_t r, bool* failed) {
    *failed = r < 0 && ferror(fp);
    return r > 0 ? static_cast<uint64_t>(r) : uint64_t{0};
  };
}
}  // namespace

IDLESCOPE_EXPORT char* fgets(char* s, int n, FILE* fp) {
  return StdioHook<char*>(
      ev::kFileRead, IDLESCOPE_API("fgets"), fp, [&] { return Libc().fgets(s, n, fp); },
      LineBytes(fp));
}

IDLESCOPE_EXPORT char* fgets_unlocked(char* s, int n, FILE* fp) {
  return StdioHook<char*>(
      ev::kFileRead, IDLESCOPE_API("fgets_unlocked"), fp,
      [&] { return Libc().fgets_unlocked(s, n, fp); }, LineBytes(fp));
}

IDLESCOPE_EXPORT char* __fgets_chk(char* s, size_t size, int n, FILE* fp) {
  return StdioHook<char*>(
      ev::kFileRead, IDLESCOPE_API("fgets"), fp, [&] { return Libc().__fgets_chk(s, size, n, fp); },
      LineBytes(fp));
}

IDLESCOPE_EXPORT char* __fgets_unlocked_chk(char* s, size_t size, int n, FILE* fp) {
  return StdioHook<char*>(
      ev::kFileRead, IDLESCOPE_API("fgets_unlocked"), fp,
      [&] { return Libc().__fgets_unlocked_chk(s, size, n, fp); }, LineBytes(fp));
}

IDLESCOPE_EXPORT ssize_t getline(char** line, size_t* n, FILE* fp) {
  return StdioHook<ssize_t>(
      ev::kFileRead, IDLESCOPE_API("getline"), fp, [&] { return Libc().getline(line, n, fp); },
      DelimBytes(fp));
}

IDLESCOPE_EXPORT ssize_t getdelim(char** line, size_t* n, int delim, FILE* fp) {
  return StdioHook<ssize_t>(
      ev::kFileRead, IDLESCOPE_API("getdelim"), fp,
      [&] { return Libc().getdelim(line, n, delim, fp); }, DelimBytes(fp));
}

// What an optimized build's getline calls: glibc's <stdio.h> inlines getline as __getdelim.
IDLESCOPE_EXPORT ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp) {
  return StdioHook<ssize_t>(
      ev::kFileRead, IDLESCOPE_API("getline"), fp,
      [&] { return Libc().__getdelim(line, n, delim, fp); }, DelimBytes(fp));
}
