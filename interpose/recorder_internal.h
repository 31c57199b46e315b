// What the recorder's own files share (recorder.cc and its parts, lifecycle.cc, stacks.cc,
// config.cc, alloc.cc). Hooks and the CUPTI layer use recorder.h only.
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "interpose/trace_encoder.h"

namespace idlescope::internal {

// IDLESCOPE_* environment variables, parsed once (docs/architecture.md, "Recorder").
struct Config {
  std::string out_dir = ".";          // IDLESCOPE_OUT
  uint32_t flush_ms = 500;            // IDLESCOPE_FLUSH_MS
  uint32_t buffer_kb = 1024;          // IDLESCOPE_BUFFER_KB, per thread
  uint32_t stack_depth = 24;          // IDLESCOPE_STACK_DEPTH, 0 = off
  bool python_stacks = true;          // IDLESCOPE_PYTHON_STACKS=0: no Python frames in stacks
  uint32_t sample_hz = 200;           // IDLESCOPE_SAMPLE_HZ, 0 = no thread sampler
  uint32_t sample_python_hz = 50;     // IDLESCOPE_SAMPLE_PYTHON_HZ, 0 = no Python frames read
  bool writer_at_start = false;       // IDLESCOPE_WRITER=thread: the writer thread from the start
  uint32_t family_mask = 0;           // IDLESCOPE_ENABLE / IDLESCOPE_DISABLE
  bool quiet = false;                 // IDLESCOPE_QUIET: no stderr messages
  std::vector<std::string> families;  // names of the enabled families, for the header
  std::vector<std::string> warnings;  // what was wrong with the values (also notices in the trace)
};
// Reads the environment; a bad value is reported once on stderr and its default kept.
Config ParseConfig();
// Copies the variables StartEnv gives: at start (ParseConfig does it) and in a forked child.
void CaptureStartEnv();
const char* FamilyName(uint32_t family);

// "idlescope: " + text + "\n" on stderr with one write(2) (async-signal-safe), when this
// process may print now (config.cc: the job's first process, at start, or under `idlescope run`
// while its stderr is still the one idlescope run had); else nothing.
void Say(const char* text);
// The library constructor is done: from now on only `idlescope run` lets messages through.
void StartupDone();
// The library constructor returns: messages of its thread are no longer "at start".
void ConstructorDone();

// Whole file into a string (for /proc files, whose size stat does not tell). No stdio anywhere in
// the recorder: a signal arriving inside stdio's locks, or the program's own buffering, must never
// meet ours.
inline bool ReadFile(const char* path, std::string* out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

// `s` without its trailing newlines and spaces (a /proc file's line).
inline std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// SIGTERM and SIGINT kept pending in the calling thread while one exists: their handler ends the
// trace (lifecycle.cc), which must never wait for this very thread (it holds the flush lock, or is
// ending the trace itself). Two system calls; the places that need it are rare.
class TerminationSignalsBlocked {
 public:
  TerminationSignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, &saved_);
  }
  ~TerminationSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  TerminationSignalsBlocked(const TerminationSignalsBlocked&) = delete;
  TerminationSignalsBlocked& operator=(const TerminationSignalsBlocked&) = delete;

 private:
  sigset_t saved_;
};

// Starts the recorder (idempotent): config, file, header, writer thread, signal handlers, atfork.
void Init();
// A clean end: records PROC_EXIT (with `stack`: where a fatal signal landed), flushes everything
// and writes the footer, once. Safe from a signal handler when `from_signal` (then the writer
// thread does the work; bounded wait).
void Shutdown(trace::ExitReason reason, int status, bool from_signal, uint32_t stack = 0);
// Flushes without ending the trace (end of main, exit() before atexit handlers, signals).
void FlushSoon();
// The program is about to enter seccomp (the prctl and syscall hooks): from then on any system call
// of ours may be forbidden (strict mode allows read, write, _exit and sigreturn; a filter, what it
// lists). What was recorded goes out now, the file ends with EXIT_DETACHED, the program's signal
// dispositions go back to the kernel as it set them, and nothing of ours runs in the process any
// more (InTracedProcess is false; the hooks fall through). lifecycle.cc.
void Detach();
// Detach's part in the recorder: the notice, the last flush and the EXIT_DETACHED footer, and
// InTracedProcess false from then on. False when this process was not being traced.
bool EndDetached();
// Exit status to put in the footer when the process ends through exit()/return from main.
void SetExitStatus(int status);
// The pid the trace file belongs to; a vfork child (same memory, other pid) must not write.
bool InTracedProcess();

// Program threads (the pthread_create hook, lifecycle.cc): counted when created (CountNewThread,
// UncountThread if creation failed), and each one calls ThreadStarts first thing (the main thread
// too), so that the end of the last one stops the writer and the process can exit.
void CountNewThread();
void UncountThread();
void ThreadStarts();
// True on the writer during the final flush of a signal: the library's operator delete frees
// nothing then (alloc.cc says why).
bool LeakFrees();
// libc's pthread_create, past our hook.
int RealPthreadCreate(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*), void* arg);

}  // namespace idlescope::internal

namespace idlescope::stacks {

// Maps the stack trie and sets up the stack walk (unwind.h) when depth > 0. Called from Init.
void Init(uint32_t depth);

// A trie node whose definition has not been written to the current file yet.
struct NewNode {
  uint32_t id;
  uint32_t parent;
  uint64_t pc;
};
// Writer: nodes published since the previous call, parents before children.
void TakeNewNodes(std::vector<NewNode>* out);
// fork child: every node must be defined again in the child's file.
void MarkAllUnemitted();
// fork handlers: no trie insertion may be half done, and no thread inside an unwinder, when the
// process is copied.
void LockForFork();
void UnlockAfterFork(bool in_child);

// The function at `offset` (from the module's load bias) in the ELF file `path`, by its .symtab
// (static functions, executables without -rdynamic, which dladdr cannot name), demangled; empty
// when the file has none. Reads the file when asked about another module than last time: for rare
// callers on program threads (the sigaction hook naming a handler), never from a signal handler.
std::string FunctionInFile(const std::string& path, uint64_t offset);

// Writer-side resolution of program counters to Frames, and the module map.
class Symbolizer {
 public:
  // Frame id of `pc` (a return address), creating and appending it (and its strings) to `out`.
  // `loader_free`: without taking the dynamic loader's locks (no dladdr, no dl_iterate_phdr): for
  // the final flush of a signal, which may have stopped a thread inside dlopen.
  uint64_t FrameFor(uint64_t pc, trace::Interned* out, bool loader_free = false);
  // Modules loaded since the previous call (dl_iterate_phdr), with their path strings interned;
  // `loader_free`: only those already found (by FrameFor too).
  void TakeNewModules(std::vector<trace::Module>* out, bool loader_free = false);
  // New file (fork child): frames and modules are defined again.
  void Reset();
};
Symbolizer& WriterSymbolizer();

}  // namespace idlescope::stacks
