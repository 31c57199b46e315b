// The writer: who runs the flushes (flush.h) and when (docs/architecture.md, "The writer").
//
// Threadless processes. Most traced processes never issue GPU work: launchers, shells, compilers,
// installers, DataLoader workers. A thread of ours in them changes how the kernel and libc treat
// them: unshare(CLONE_NEWUSER) fails with EINVAL in a multi-threaded process, glibc's set*id
// broadcast aborts when a per-thread capability change (PR_SET_KEEPCAPS, capset) left our thread
// unable to follow, and CPython 3.12+ warns on every fork of a multi-threaded process. So a process
// has no thread of ours until it first issues or waits for device work (then CUDA has started
// threads of its own, and the thread sampler needs ours). Until then its program threads flush
// themselves, at safe points: at the end of their outermost hook once IDLESCOPE_FLUSH_MS has passed
// or their ring is half full (MaybeFlushHere), when a job is asked (RunJob), and at the end
// (EndTrace: from the handler of the signal that ends the process too, from the care heap,
// care_heap.h). What a SIGKILL loses is what was recorded since the last such flush.
//
// The writer thread, once started, opens the file in a descriptor table of its own (trace_file.h)
// and flushes every IDLESCOPE_FLUSH_MS, when a ring passes half full, when a program thread hands
// it a job, and at the end of the process.
//
// Starting that thread is decided here alone; every other function is what the rest of the
// recorder asks of the writer (wake up, do this job, end the file, stop), and each says what it
// does when no thread runs.
#pragma once

#include <atomic>
#include <cstdint>

#include "interpose/trace_encoder.h"

namespace idlescope::writer {

// At start (Init): the period of the flushes, and whether the writer thread starts at once
// (IDLESCOPE_WRITER=thread) rather than with the first device work.
void Init(uint32_t flush_ms, bool thread_at_start);

// The trace file exists (at start, and in a forked child): the first flush of a threadless process
// is due one period from now, and the writer thread starts now if it starts at start.
void FileCreated();

// The calling thread issues or waits for device work (Record): the writer thread starts if it has
// not (once per process; the program runs on at once, and the thread opens the file in its own
// table). False when it could not be created: the process goes on threadless.
bool StartThread();

// Asks for a flush soon (a ring passed half full, a notice, a signal the program handles).
// Async-signal-safe. With a writer thread: it is woken. Without: the calling thread flushes at the
// end of its outermost hook (MaybeFlushHere).
void Wake();

// The end of a program thread's outermost hook, where a flush was asked for (recorder.h, HookGuard)
// or its period has passed: the flush runs here when no writer thread does and this is a safe
// point (not inside a signal handler; no other thread flushing). errno is kept.
void MaybeFlushHere();
// Threadless: when the next periodic flush is due (NowNs), for Record to compare its events' times
// with; never once a writer thread runs.
extern std::atomic<uint64_t> g_next_flush_ns;

// Work a program thread must have done on the file (only the writer's table holds it).
enum class Job : uint32_t { kNone = 0, kFlush, kExecFooter, kExecFailed };
// Program thread: `job` done by the writer, waited for (at most 10 s, then withdrawn); done here,
// under the flush lock, where the program's table holds the file or no writer thread runs.
void RunJob(Job job);

// The end of the file: the last flush and the footer, once (Shutdown). Handed to the writer thread
// (true: the caller waits for it, WaitTraceEnded), or done here when none runs, false.
// `signal_care`: the process ends on a signal or _exit, and this thread may be stopped holding any
// lock (flush.h, AnnounceEndOnSignal): done here, the flush allocates from the care heap and waits
// for the flush lock a bounded time.
// `participant_flush`: run first by the writer (a participant's flush on its own thread,
// recorder.h), or null.
bool EndTrace(trace::ExitReason reason, int status, bool from_signal, bool signal_care,
              void (*participant_flush)());
// Waits (futex, async-signal-safe) until EndTrace is over, at most `seconds` (a stuck writer never
// hangs the exit). A second ending waits too, so that the first one finishes before the process
// dies.
void WaitTraceEnded(uint64_t seconds);

// The program's last thread is ending (after EndTrace): the writer thread leaves and is joined,
// since glibc counts it and would not end the process while it runs.
void Stop();

// fork child: threads do not survive fork. The parent's writer, its jobs and its end are not the
// child's, which starts threadless.
void ResetInChild();

}  // namespace idlescope::writer
