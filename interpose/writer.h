// The writer: who runs the flushes (flush.h) and when. It is a thread of ours, the writer thread:
// it creates the trace file in a descriptor table of its own (trace_file.h), then flushes every
// IDLESCOPE_FLUSH_MS, when a ring passes half full, when a program thread hands it a job, and at
// the end of the process. docs/architecture.md, "The writer".
//
// Starting that thread is one decision, made in Start() alone; every other function here is what
// the rest of the recorder asks of the writer (wake up, do this job, end the file, stop), and each
// says what it does when no thread runs. The rest of the recorder never creates, waits for, or
// tests for a thread of ours.
#pragma once

#include <cstdint>

#include "interpose/trace_encoder.h"

namespace idlescope::writer {

// At start (Init), before Start: the period of the flushes.
void Init(uint32_t flush_ms);

// Starts writing this process's trace: at start (Init) and in a forked child. Starts the writer
// thread without waiting for it: the program runs on at once, and the thread creates the file (a
// writer that cannot create it turns the recorder off itself). False (said as "Messages" allows)
// when the thread could not be created: nothing is traced.
bool Start();

// Asks for a flush soon (a ring passed half full, a notice, a signal the program handles).
// Async-signal-safe. Nothing when no writer runs.
void Wake();

// Work a program thread must have done on the file (only the writer's table holds it).
enum class Job : uint32_t { kNone = 0, kFlush, kExecFooter, kExecFailed };
// Program thread: `job` done by the writer, waited for (at most 10 s, then withdrawn); done here,
// under the flush lock, where the program's table holds the file or no writer runs.
void RunJob(Job job);

// The end of the file: the last flush and the footer, once (Shutdown). Handed to the writer
// (true: the caller waits for it, WaitTraceEnded), or done here when no writer runs (not from a
// signal handler: encoding allocates), false. `signal_care`: the process ends on a signal or
// _exit, and this thread may be stopped holding any lock (flush.h, AnnounceEndOnSignal).
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
// child's; Start makes the child's.
void ResetInChild();

}  // namespace idlescope::writer
