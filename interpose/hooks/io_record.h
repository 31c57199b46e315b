// Recording side shared by the file I/O (io.cc), network (net.cc) and process (process.cc)
// hooks: the process-wide fd table, per-thread bursts (io_burst.h) and the events they emit.
// Every function here is called from inside a hook whose HookGuard is active.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "interpose/hooks/io_fd_table.h"

namespace idlescope::io {

FdTable& Fds();

// What `fd` is: from the table, or resolved now (fstat, readlink /proc/self/fd, fstatfs,
// getpeername) and remembered. The recorder's own trace file comes back kIgnored.
FdInfo ResolveFd(int fd);

// Fills the table for a freshly opened `fd` (`path` as the program passed it, relative to
// `dirfd`) and returns the entry.
FdInfo TrackOpenedFd(int fd, int dirfd, const char* path);

// A call of a burst-merged kind (io_burst.h), timed with CallTicks() (io_clock.h) before and
// after. `file_type`/`net_type`: the event type when the fd is a file / a socket (0 = not
// recorded for that kind). `failed`/`err`: the call failed with errno `err`. `bytes`: moved.
void RecordBurstCall(uint8_t file_type, uint8_t net_type, uint32_t api, int fd, uint64_t tick0,
                     uint64_t tick1, uint64_t bytes, bool failed, int err, uint64_t offset);

// Ends the calling thread's open burst, if any, and appends it to the trace: when the burst's fd
// stops meaning the same file (close, dup2 onto it) or before fork/exec. Order with the thread's
// other events and the endings of threads and processes need no call: the burst is the recorder's
// pending event (recorder.h), appended before any other event of the thread.
void CloseBurst();

// A single (not merged) event about a file or socket; like any Record(), it comes after the
// thread's open burst, which it ends.
void RecordFdEvent(uint8_t type, uint32_t api, int fd, const FdInfo& info, uint64_t t0, uint64_t t1,
                   uint64_t bytes, int32_t result);

// Stack id for an event starting at `t0` that blocked `dur` ns, rate-limited per thread (a stack
// costs microseconds; the first event of a burst, a sparse event, or a call that blocked long
// gets one).
uint32_t MaybeCaptureStack(uint64_t t0, uint64_t dur);

}  // namespace idlescope::io
