// The thread sampler: what the threads that feed a GPU do between the calls the hooks see
// (docs/architecture.md, "The sampler"). No signal is ever sent: the writer thread, whose every
// signal is blocked and whose descriptor table is its own, looks at each such thread through
// /proc/self/task/TID/{schedstat,stat,syscall}, files it keeps open and re-reads with pread, at
// IDLESCOPE_SAMPLE_HZ (default 200; a thread whose looks keep making one run at half that, Look).
// A look measures the time since the previous one exactly
// (schedstat's CPU time and time runnable but waiting for a CPU); the rest of the interval the
// thread was blocked, and then the look reads which system call it is in and on which descriptor.
// Looks that find the same state make one run, recorded as one THREAD_SAMPLE event in the
// sampler's own batch (proto/trace.proto).
#pragma once

#include <cstdint>
#include <vector>

#include "interpose/recorder.h"

namespace idlescope::sampler {

// At start: looks per second at each sampled thread (0: the sampler is off), and at most how many
// of those per second read a Python thread's frames (0: none).
void Init(uint32_t hz, uint32_t python_hz = 0);
uint32_t Hz();

// The calling program thread just made its first call that issues or waits for device work: it
// is sampled from now on, until it ends. Lock-free and allocation-free (Record may run in a signal
// handler); a thread beyond the table's 64 is not sampled. True when it is the first thread the
// sampler has: the writer, which sleeps until its next flush while it has none, is to be woken.
bool AddThisThread();
// A stack capture of the calling thread just read Python frames: when the thread is sampled and
// its PyThreadState is not the one the sampler reads (a C thread that makes a state per call
// through PyGILState_Ensure, which the last Release frees), the sampler reads the new one from now
// on. One thread-local load when the thread is not sampled, a compare when nothing changed.
void NoteThisThreadState();
// The calling thread `tid` ends (its ring's thread-exit destructor): its CPU time and the time now
// are kept for the writer, whose next look finds the thread gone and ends its runs there (the
// interval since its last look is otherwise lost with the thread's /proc files).
void ThisThreadExits(uint32_t tid);

// --- The writer thread's side ------------------------------------------------------------------

// The writer has a descriptor table of its own (the files the sampler opens are never the
// program's): sampling may start. Without one it never does.
void StartOnWriter(uint32_t writer_tid);
// When the next look is due (NowNs), or 0 when no thread is sampled.
uint64_t NextLookNs();
// Looks at every sampled thread (not under the flush lock).
void Look(uint64_t now);
// Ends every open run at its last look (the final flush follows). `careful`: on a signal, where
// the sampler's lock may be held by the thread it stopped (then the open runs are lost).
void EndRuns(bool careful);

// --- The flush's side (under the flush lock) ---------------------------------------------------

// The runs ended since the last call, as THREAD_SAMPLE events, and the count of those dropped
// (more than 2048 waited for a flush). `careful`: the final flush of a signal, which may not wait
// for the sampler's lock (then nothing is taken).
void TakeRuns(std::vector<RawEvent>* out, uint64_t* dropped, bool careful);
// The writer's tid: the tid of the sampler's batches.
uint32_t WriterTid();

// --- Worker processes of the family (docs/architecture.md, "The sampler", *Worker processes*) ---

// The program forked child `pid` (the fork hook, in the parent): the writer looks at it once it
// lived 100 ms, while it runs this program (no exec) with no writer thread of its own.
// Lock-free; a child beyond 64 not yet looked at is not sampled.
void NoteChild(uint32_t pid);
// Fork's prepare handler (its locks held: one fork at a time) and parent handler: the mark a
// child copies says it is still starting until its child handler (ResetInChild) writes its own.
void MarkForking();
void UnmarkForking();
// The calling process starts its writer thread: it samples itself, and its parent stops (the
// parent's writer reads this mark from the child's memory).
void MarkOwnWriter();

// fork child: no thread of the parent is the child's, and the writer's descriptors were not
// inherited (its table is its own).
void ResetInChild();

}  // namespace idlescope::sampler
