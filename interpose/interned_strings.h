// Interned strings: the ids of InternString/InternPath/InternArgv and ApiName (recorder.h), and
// the strings a flush interns itself (the names of new frames).
//
// Program threads intern under a mutex, into pages of their own (never malloc: a hook may intern
// in a signal handler that interrupted malloc). What a flush needs is readable without that
// mutex: ids are handed out in order, and each string's bytes are stored in a chunk table before
// the count that publishes its id. So a flush never waits for a thread that holds the
// mutex, which may be the very thread that a signal stopped there (the final flush of SIGTERM:
// docs/architecture.md, "Interned strings"). Ids are stable for the process: hooks keep their API
// names' ids, and a forked child keeps using them all (its new file defines them all again).
#pragma once

#include "interpose/trace_encoder.h"

namespace idlescope::strings {

// At start (Init).
void Init();

// The calling thread is flushing while one exists (under the flush lock): InternString gives ids
// of the flush's own table, which needs no mutex but the flush lock (function, module and Python
// file names of new frames).
namespace detail {
// initial-exec TLS: LeakFrees (alloc.cc) reads it at every operator delete of the library.
extern __thread bool t_flushing __attribute__((tls_model("initial-exec")));
}  // namespace detail
class FlushScope {
 public:
  FlushScope() { detail::t_flushing = true; }
  ~FlushScope() { detail::t_flushing = false; }
  FlushScope(const FlushScope&) = delete;
  FlushScope& operator=(const FlushScope&) = delete;
};
// True inside a FlushScope on the calling thread.
inline bool InFlush() { return detail::t_flushing; }

// Under the flush lock: appends to `out` every string not yet written to the current file, the
// published ones and the flush's own. Call it after the flush took everything that may use an id
// (events, frames): every id they use was published before.
void TakeUnwritten(trace::Interned* out);

// fork: the mutex is taken before the process is copied (program threads intern under it), and
// released in the parent. In the child, released too, and the current file is a new one: every
// string is written again, and the flush's own table starts empty (frames are named again there).
void LockForFork();
void UnlockInParent();
void ResetInChild();

}  // namespace idlescope::strings
