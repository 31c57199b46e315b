// The trace file: whose it is (pid, parent, origin), where its descriptor lives and how it is
// protected, its header, and writing packets and the footer to it.
//
// Where the descriptor lives (docs/architecture.md, "The trace file"). The file is made at start by
// the starting thread (Create), which closes it again. A process without a writer thread (writer.h,
// "Threadless processes") opens it for each write and closes it at once (a descriptor of ours
// exists only inside our call). Once a writer thread runs, the file is in the writer's own
// descriptor table only (TakeOwnFdTable, AdoptForWriter), where the program can neither see,
// count, close nor reuse it. Only where that table cannot be unshared (Linux < 5.9, seccomp) does
// the file sit in the program's table, moved high, protected by the close/dup hooks through
// IsTraceFd (recorder.h) and reopened when the program closed it anyway.
//
// Not thread-safe: everything but Pid/Origin/OwnFdTable runs under the flush lock (flush.h), which
// makes one writer of the file at a time.
#pragma once

#include <cstdint>

#include "interpose/recorder_internal.h"
#include "interpose/trace_encoder.h"
#include "interpose/wire.h"

namespace idlescope::trace_file {

// At start (Init): the process the file will belong to, and what its header says of the
// configuration (`config` is kept; `ring_bytes`: Header.config.buffer_bytes).
void Init(const internal::Config* config, uint64_t ring_bytes);

// The process the file belongs to; a vfork child (same memory, other pid) must not write it.
uint32_t Pid();
// How this process came to be traced (preload, injection, fork): the header's, and Shutdown's.
trace::Origin Origin();

// Writer thread, first thing: a descriptor table of its own, empty, for the file to be opened
// into (without it, on an old kernel or under seccomp, the table stays the program's).
void TakeOwnFdTable();

// At start and in a forked child, on the starting thread: creates <out>/<host>-<pid>[-N].idlescope
// holding its header (never a name without it), and closes it. False, said as "Messages" allows,
// when no file could be made: nothing can be traced.
bool Create();

// Writer thread, after TakeOwnFdTable: the file Create made, opened for the writer's writes from
// now on. False (said) when it cannot be opened, or is not that file any more.
bool AdoptForWriter();

// No file is open, or its footer is written: nothing goes into it.
bool Closed();

// A flush on a program thread of a threadless process: the file opened for its writes, closed
// again after them (EndWrites). kNoDescriptor: the program uses every descriptor its limit allows
// (EMFILE, ENFILE), and the flush must be the writer thread's (its table is its own); any other
// failure stops tracing (said). A no-op where a writer thread holds the file.
enum class WritesBegin { kReady, kNoDescriptor };
WritesBegin BeginWrites();
void EndWrites();

// Writes whole packets; first checks that the descriptor is still the trace file (the shared-table
// fallback: reopens it, or stops tracing). False when nothing could be written.
bool Write(const wire::Buffer& packets);

// Writes the footer (its `bytes` is the file's size before it) and closes the file for writes.
void WriteFooter(trace::Footer footer);
// exec failed: the footer it wrote is cut off again and the file reopened for writes (the process
// goes on, and its file must end with its real footer).
void RemoveFooter();

// Under the flush lock, from a program thread: the program is about to dup2() onto `fd`, the
// file's number in its table (IsTraceFd): the file moves to another number first.
void MoveProgramFdAwayFrom(int fd);

// fork child: the file is the parent's. The child's is made next (Create), with the child's pid,
// the parent's as ppid, and ORIGIN_FORK; a descriptor of the parent's file in the program's table
// (shared-table fallback) is closed.
void ResetInChild();

}  // namespace idlescope::trace_file
