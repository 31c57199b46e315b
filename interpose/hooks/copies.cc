// Copy hooks (glibc): sendfile, sendfile64, copy_file_range and splice move bytes between two
// descriptors inside the kernel, with no read or write the other hooks would see. Python's
// shutil.copy/copyfile (sendfile on Linux), coreutils' cp (copy_file_range) and servers sending a
// file on a socket use them; issue 24 found a checkpoint copied so on the training thread, and its
// time unknown. Each call is one FILE_COPY event (trace.proto): the destination's fd, path and
// filesystem, the source's path (a file, "pipe:[N]", a socket's peer address), the bytes copied.
// A copy loop makes one call per block of at least 8 MiB (shutil) or the whole file (cp): one event
// per call is a handful of events per file.
#include <errno.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <cstdint>

#include "interpose/hooks/io_libc.h"
#include "interpose/hooks/io_record.h"
#include "interpose/recorder.h"

namespace idlescope::io {
namespace {

template <typename Call>
ssize_t CopyHook(uint32_t (*api)(), int in, int out, const int64_t* out_offset, Call&& call) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return call();
  const uint64_t t0 = NowNs();
  const int64_t offset = out_offset != nullptr ? *out_offset : 0;
  const ssize_t r = call();
  const int err = errno;
  const uint64_t t1 = NowNs();
  FdInfo to = ResolveFd(out);
  FdInfo from = ResolveFd(in);
  if (to.state != FdState::kIgnored && from.state != FdState::kIgnored &&
      !(r < 0 && err == EBADF)) {
    RawEvent e;
    e.ts = t0;
    e.dur = t1 - t0;
    e.bytes = r > 0 ? static_cast<uint64_t>(r) : 0;
    e.count = 1;
    e.api = api();
    e.stack = MaybeCaptureStack(t0, t1 - t0);
    e.result = r < 0 ? -err : 0;
    e.type = ev::kFileCopy;
    e.u.io.path = to.path;
    e.u.io.fd = out;
    e.u.io.fs_type = to.fs;
    e.u.io.net_scope = to.scope;
    e.u.io.offset = offset > 0 ? static_cast<uint64_t>(offset) : 0;
    e.u.io.source = from.path;
    Record(e);
  }
  errno = err;
  return r;
}

}  // namespace
}  // namespace idlescope::io

using idlescope::io::CopyHook;
using idlescope::io::Libc;

IDLESCOPE_EXPORT ssize_t sendfile(int out, int in, off_t* offset, size_t n) {
  return CopyHook(IDLESCOPE_API("sendfile"), in, out, nullptr,
                  [&] { return Libc().sendfile(out, in, offset, n); });
}

IDLESCOPE_EXPORT ssize_t sendfile64(int out, int in, off64_t* offset, size_t n) {
  return CopyHook(IDLESCOPE_API("sendfile64"), in, out, nullptr,
                  [&] { return Libc().sendfile64(out, in, offset, n); });
}

IDLESCOPE_EXPORT ssize_t copy_file_range(int in, off64_t* in_offset, int out, off64_t* out_offset,
                                         size_t n, unsigned int flags) {
  if (Libc().copy_file_range == nullptr) {  // glibc before 2.27
    errno = ENOSYS;
    return -1;
  }
  return CopyHook(IDLESCOPE_API("copy_file_range"), in, out, out_offset,
                  [&] { return Libc().copy_file_range(in, in_offset, out, out_offset, n, flags); });
}

IDLESCOPE_EXPORT ssize_t splice(int in, off64_t* in_offset, int out, off64_t* out_offset, size_t n,
                                unsigned int flags) {
  return CopyHook(IDLESCOPE_API("splice"), in, out, out_offset,
                  [&] { return Libc().splice(in, in_offset, out, out_offset, n, flags); });
}
