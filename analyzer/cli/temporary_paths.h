// Files and directories a command makes for a while (the shards' summaries of `idlescope report`
// under TMPDIR, the temporary file of an `-o` output), removed also when a signal ends the
// command: the handler of every signal whose default action ends the process removes them and
// then dies of the signal as the command would have without it (a shell sees the same status).
// Kept out of `idlescope run`, which hands its signals to the traced command.
//
// The handler can only make system calls (async-signal-safe), so a path is registered by value
// in a fixed table, and a directory is removed with the files it holds, not subdirectories (the
// shards' directory holds files only).
#pragma once

#include <string>

namespace idlescope {

// Installs the handlers: SIGHUP, SIGINT, SIGQUIT, SIGABRT, SIGUSR1, SIGUSR2, SIGALRM, SIGTERM,
// SIGSTKFLT, SIGXCPU, SIGVTALRM, SIGPROF, SIGIO, SIGPWR and the real-time signals, except those
// the command was started with ignored (nohup, a shell's background job: they stay ignored).
// SIGPIPE and SIGXFSZ are ignored instead, so that a write to a pipe whose reader has gone or
// past RLIMIT_FSIZE fails and says so (output_file.h). Faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL)
// are bugs: their default action, and a sanitizer's report, are left alone.
void RemoveTemporaryPathsOnSignals();

// mkdtemp(pattern) / mkostemp(pattern, O_CLOEXEC) and the path registered for removal, as one
// step for the handlers: a signal that comes in between, to this thread or another, still
// removes the path. `pattern` ends in XXXXXX and becomes the path. *slot: the path's slot, or -1
// when the table is full (the path is then only removed by its owner). False / -1 with errno set
// when the path cannot be made.
bool MakeTemporaryDirectory(std::string& pattern, int* slot);
int MakeTemporaryFile(std::string& pattern, int* slot);
// The owner removed (or renamed) the path itself.
void ForgetTemporaryPath(int slot);

// Removes every registered path now, with system calls only: the signal handlers, and an end
// that runs no destructor (main.cc's out-of-memory handler).
void RemoveTemporaryPaths();

}  // namespace idlescope
