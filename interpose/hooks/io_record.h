// Recording side shared by the file I/O (io.cc), network (net.cc) and process (process.cc)
// hooks: the process-wide fd table, per-thread bursts (io_burst.h) and the events they emit.
// Every function here is called from inside a hook whose HookGuard is active.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "interpose/call_clock.h"
#include "interpose/hooks/io_burst.h"
#include "interpose/hooks/io_fd_table.h"
#include "interpose/recorder.h"

namespace idlescope::io {

FdTable& Fds();

// After a call that closed or duplicated descriptors (also when not recording): forget `fd` /
// [first, last], or copy `from`'s entry to `to`. No-ops on a thread with a descriptor table of its
// own (the recorder's writer, recorder.h OwnFdTable()): its numbers are not the program's.
void ForgetFd(int fd);
void ForgetFds(unsigned first, unsigned last);
void CopyFd(int from, int to);

// What `fd` is: from the table, or resolved now (fstat, readlink /proc/self/fd, fstatfs,
// getpeername) and remembered. The recorder's own trace file comes back kIgnored.
FdInfo ResolveFd(int fd);

// Fills the table for a freshly opened `fd` (`path` as the program passed it, relative to
// `dirfd`) and returns the entry.
FdInfo TrackOpenedFd(int fd, int dirfd, const char* path);

// A call of a burst-merged kind (io_burst.h), timed with CallTicks() (interpose/call_clock.h)
// before and after, that MergeBurstCall did not take. `file_type`/`net_type`: the event type when
// the fd is a file / a socket (0 = not recorded for that kind). `api` gives the API's string id; it
// is called only when the call starts a burst (a merged call keeps the first call's API).
// `failed`/`err`: the call failed with errno `err`. `bytes`: moved.
void RecordBurstCall(uint8_t file_type, uint8_t net_type, uint32_t (*api)(), int fd, uint64_t tick0,
                     uint64_t tick1, uint64_t bytes, bool failed, int err, uint64_t offset);

// Limits of the burst policy and of the stack rule in call-clock ticks, set at each burst's start
// (they follow the tick ratio as it is refined).
struct TickLimits {
  BurstPolicy policy;
  uint64_t always_stack = 0;  // a call this long gets a stack (the slow path takes it)
};

namespace detail {
// The calling thread's open burst (the recorder's pending event holds its published copy).
// initial-exec: no __tls_get_addr call on the hot path (the recorder needs static TLS anyway).
extern __thread Burst t_burst __attribute__((tls_model("initial-exec")));
extern __thread TickLimits t_limits __attribute__((tls_model("initial-exec")));
}  // namespace detail

// The common case of a burst-merged call, inline in the hook: a call that succeeded and extends
// the thread's open burst (io_burst.h) is merged, only the event's counters are republished
// (UpdatePendingEvent), and errno is not touched. Returns false when the call needs
// RecordBurstCall: a new burst, a failed call, a long call (stack rule), another fd or kind.
// Written for few pages touched: each costs a TLB miss after the syscall (~20 ns on the build
// VMs, as much as the rest of this function); the fd table is read only when its generation moved.
__attribute__((always_inline)) inline bool MergeBurstCall(uint8_t file_type, uint8_t net_type,
                                                          int fd, uint64_t tick0, uint64_t tick1,
                                                          uint64_t bytes) {
  Burst& b = detail::t_burst;
  if (!b.open || b.fd != fd || !PendingEventOpen()) return false;
  IoCall call;
  const FdTable& fds = detail::g_hot.fds;
  uint32_t gen = fds.Generation();
  call.fd_info = gen == b.fd_gen ? b.fd_info : fds.GetPacked(fd);
  call.type = FdInfo::FsOf(call.fd_info) == kFsSocket ? net_type : file_type;
  call.fd = fd;
  call.ts = tick0;
  call.dur = tick1 - tick0;
  call.bytes = bytes;
  const TickLimits& limits = detail::t_limits;
  if (!Extends(b, call, limits.policy) || call.dur >= limits.always_stack) return false;
  Merge(b, call);
  b.fd_gen = gen;
  UpdatePendingEvent(TickSpanNs(b.dur), b.bytes, b.count);
  return true;
}

// Ends the calling thread's open burst, if any, and appends it to the trace: when the burst's fd
// stops meaning the same file (close, dup2 onto it) or before fork/exec. Order with the thread's
// other events and the endings of threads and processes need no call: the burst is the recorder's
// pending event (recorder.h), appended before any other event of the thread.
void CloseBurst();

// A single (not merged) event about a file or socket; like any Record(), it comes after the
// thread's open burst, which it ends. `source`: the string id of where the data came from
// (FILE_RENAME's old name, FILE_COPY's source), 0 for none.
void RecordFdEvent(uint8_t type, uint32_t api, int fd, const FdInfo& info, uint64_t t0, uint64_t t1,
                   uint64_t bytes, int32_t result, uint32_t source = 0);

// The string id of `path` as an absolute path: as given when it starts with '/', else joined to
// the directory `dirfd` names (readlink of /proc/self/fd/N), or to the working directory for
// AT_FDCWD (getcwd). Neither opens a descriptor. 0 for a null path; the path as given when the
// directory cannot be named. Not normalized ("a/../b" stays).
uint32_t InternAbsolutePath(int dirfd, const char* path);

// A NET_SOCKET event for connected socket `fd` (`info`: its fd-table entry, the peer's address
// as path): its own address (getsockname) and, for a unix socket, the peer's pid (SO_PEERCRED),
// so that the analysis can find the process at the other end. Once per socket: where the fd table
// first learns of it (net.cc).
void RecordSocketIdentity(int fd, const FdInfo& info);

// Stack id for an event starting at `t0` that blocked `dur` ns, rate-limited per thread (a stack
// costs microseconds; the first event of a burst, a sparse event, or a call that blocked long
// gets one).
uint32_t MaybeCaptureStack(uint64_t t0, uint64_t dur);

}  // namespace idlescope::io
