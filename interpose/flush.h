// Flush: everything recorded so far becomes packets in the trace file. One flush at a time, under
// the flush lock, on whichever thread runs it (writer.h decides which: the writer thread, or a
// program thread that must not wait for one).
//
// The lock also guards the trace file (trace_file.h) and the writer-side state below (stream and
// communicator ids, the footer's totals). A flush never waits without bound for a lock a program
// thread may hold once the process ends on a signal (EndsOnSignal): the thread the signal stopped
// may hold it.
#pragma once

#include <mutex>

#include "interpose/recorder_internal.h"
#include "interpose/trace_encoder.h"

namespace idlescope::flush {

// At start (Init).
void Init();

// The flush lock. A program thread takes it through ProgramThreadLock.
std::mutex& Mutex();

// The flush lock taken by a program thread (a flush without a writer thread, the exit's final
// flush, MoveTraceFdAwayFrom). SIGTERM and SIGINT stay pending meanwhile: their handler has the
// writer flush, which needs this lock, and would otherwise wait for the very thread it
// interrupted.
class ProgramThreadLock {
 public:
  ProgramThreadLock() { Mutex().lock(); }
  ~ProgramThreadLock() { Mutex().unlock(); }
  ProgramThreadLock(const ProgramThreadLock&) = delete;
  ProgramThreadLock& operator=(const ProgramThreadLock&) = delete;

 private:
  internal::TerminationSignalsBlocked blocked_;  // first: blocked before the lock is taken
};

// Under the lock. Takes the rings' events up to a snapshot of their heads, the queues, new stack
// nodes (resolved to frames) and new strings, and writes them as one buffer. `final`: the last
// flush of the file, which also takes the pending events of threads still running.
void FlushLocked(bool final = false);
// Under the lock: the footer (a no-op once the file is closed).
void WriteFooterLocked(trace::ExitReason reason, int status);
// Under the lock: the last flush of the file (final) and the footer.
void FinalFlushLocked(trace::ExitReason reason, int status);
// The calling thread (the writer, serving the final flush of a signal or _exit) takes the care of
// EndsOnSignal in every flush, and frees nothing from then on (LeakFrees, alloc.cc): the process
// ends right after.
void TakeSignalCareOnThisThread();
// After TakeSignalCareOnThisThread, on a program thread that ends a process without a writer
// thread: the flush lock, waited for at most 100 ms (its holder may be this very thread, stopped
// by a fatal signal inside a flush). False when it was not had.
bool LockForEnd();

// The process ends on a signal or _exit, and its final flush was asked for: the thread that asked
// may be stopped holding any lock of ours or of libc. Every flush from then on (the one under way
// included) resolves frames without the loader's locks, leaves the queues out if their mutex
// stays taken, and frees nothing.
void AnnounceEndOnSignal();
bool EndsOnSignal();

// fork: the lock is taken before the process is copied and released in the parent. In the child,
// released too, and the state of the parent's file dropped (ids are scoped to one file).
void LockForFork();
void UnlockInParent();
void ResetInChild();

}  // namespace idlescope::flush
