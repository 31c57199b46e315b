// The recorder's orchestration: start (Init), end (Shutdown), the program's threads, fork, and the
// public entry points that need more than one part of the recorder. The parts own their state
// and reset it in a forked child themselves (docs/architecture.md, "Recorder"):
//   rings.h            per-thread rings, the pending events (Record, SetPendingEvent)
//   interned_strings.h InternString and the flush's own strings
//   queues.h           GPU activities, devices and notices (RecordGpu, RecordNotice)
//   trace_file.h       the file: pid, descriptor placement and protection, header, writes
//   flush.h            encoding what was recorded, under the flush lock
//   writer.h           who flushes and when: the writer thread, its jobs, the end of the file
//   stacks.cc          stack capture and symbolization (recorder_internal.h)
#include "interpose/recorder.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <type_traits>

#include "interpose/flush.h"
#include "interpose/interned_strings.h"
#include "interpose/python/pystacks.h"
#include "interpose/queues.h"
#include "interpose/real_symbol.h"
#include "interpose/recorder_internal.h"
#include "interpose/rings.h"
#include "interpose/sampler.h"
#include "interpose/trace_file.h"
#include "interpose/writer.h"

namespace idlescope {

namespace detail {
std::atomic<bool> g_recorder_active{false};
std::atomic<uint32_t> g_family_mask{0};
__thread uint32_t t_hook_depth __attribute__((tls_model("initial-exec"))) = 0;
__thread uint8_t t_after_hook __attribute__((tls_model("initial-exec"))) = 0;
std::atomic<void (*)()> g_record_handlers_in_call{nullptr};
__thread uint32_t t_in_program_handler __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace detail

namespace internal {
namespace {

// The process's life as the recorder sees it. Never destroyed (the library destructor ends the
// trace after static destructors may have run).
struct ProcessLife {
  std::atomic<bool> initialized{false};
  std::atomic<bool> shutdown_started{false};
  // Tracing stopped while the process goes on (Detach): nothing of ours runs in it any more.
  std::atomic<bool> detached{false};
  // Program threads alive (the main thread, and those created through the pthread_create hook).
  std::atomic<int32_t> program_threads{1};
  pthread_key_t thread_end_key = 0;  // its destructor runs at the end of each program thread
  int exit_status = 0;               // exit()'s, for the footer (SetExitStatus)
  bool exit_status_set = false;
  // The layer that buffers records of its own (RegisterFlushParticipant), or null.
  std::atomic<const FlushParticipant*> participant{nullptr};

  // fork child: one thread, the forking one; not ending; no exit status yet.
  void ResetInChild() {
    shutdown_started.store(false);
    program_threads.store(1);
    exit_status_set = false;
  }
};
static_assert(std::is_trivially_destructible_v<ProcessLife>);
constinit ProcessLife g_life;

// ---------------------------------------------------------------------------------------------
// Program threads. A process ends when its last thread does (the main thread may pthread_exit
// first: glibc's exit(0) comes from whichever thread is last). The writer counts as a thread to
// glibc, so it must be gone before the program's last thread ends, or the process would never
// exit; threads are counted here (pthread_create hook, lifecycle.cc) and each has a key whose
// destructor runs at its end, however it ends.

// The last program thread is ending (its key destructor): once its destructors have run, glibc
// calls exit(0) in it, if no thread is left, ours included (glibc counts them). So the trace ends
// here as exit(0) would end it, then our threads leave (joined); what the atexit handlers do
// after that is not recorded. A writer that never ends (a write stuck on a dead file server)
// would keep the process alive, as any thread would.
void EndOfLastThread() {
  Shutdown(trace::kExitNormal, 0, /*from_signal=*/false);
  if (const FlushParticipant* p = g_life.participant.load(std::memory_order_acquire)) p->stop();
  writer::Stop();
}

void OnProgramThreadEnd(void*) {
  if (g_life.program_threads.fetch_sub(1, std::memory_order_acq_rel) == 1 && InTracedProcess()) {
    int saved = errno;
    EndOfLastThread();
    errno = saved;
  }
}

// ---------------------------------------------------------------------------------------------
// fork: the child traces itself into a file of its own, with none of the parent's buffered
// events.
//
// The locks are taken in the order code takes them (the flush participant's first: it interns
// under locks of its own; then flush, strings, queues, stacks), and released in the child as well:
// only the forking thread exists there, and nothing it needs may stay held by a thread that is
// gone. The forking thread keeps SIGTERM/SIGINT pending meanwhile (flush.h, ProgramThreadLock says
// why).
__thread sigset_t t_mask_before_fork;
// The participant whose prepare handler ran, for the same one's parent and child handlers.
__thread const FlushParticipant* t_participant_at_fork = nullptr;

void ForkPrepare() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, &t_mask_before_fork);
  t_participant_at_fork = g_life.participant.load(std::memory_order_acquire);
  if (t_participant_at_fork != nullptr) t_participant_at_fork->fork_prepare();
  flush::LockForFork();
  strings::LockForFork();
  queues::LockForFork();
  stacks::LockForFork();
  sampler::MarkForking();
}

void ForkParent() {
  sampler::UnmarkForking();
  stacks::UnlockAfterFork(/*in_child=*/false);
  queues::UnlockInParent();
  strings::UnlockInParent();
  flush::UnlockInParent();
  if (t_participant_at_fork != nullptr) t_participant_at_fork->fork_parent();
  pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr);
}

void ForkChild() {
  const bool trace_child = RecorderActive() && !g_life.shutdown_started.load();
  detail::g_recorder_active.store(false, std::memory_order_relaxed);
  // Each part releases what ForkPrepare took and resets itself for the child's own file.
  stacks::UnlockAfterFork(/*in_child=*/true);
  stacks::MarkAllUnemitted();          // every stack node is defined again in the new file,
  stacks::WriterSymbolizer().Reset();  // and every frame and module, in the flush's strings
  queues::ResetInChild();
  strings::ResetInChild();
  flush::ResetInChild();
  if (t_participant_at_fork != nullptr) t_participant_at_fork->fork_child();
  CaptureStartEnv();  // the parent may have set RANK and the like for this child (one thread here)
  trace_file::ResetInChild();
  rings::ResetInChild();
  writer::ResetInChild();
  sampler::ResetInChild();
  g_life.ResetInChild();
  if (trace_child) {
    ++detail::t_hook_depth;
    const bool created = trace_file::Create();  // the child's own file; threadless, as at start
    if (created) {
      detail::g_recorder_active.store(true, std::memory_order_relaxed);
      writer::FileCreated();
    }
    --detail::t_hook_depth;
  }
  pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr);
}

// FlushNow, BeforeExec and AfterExecFailed: a program thread has `job` done on the file
// (writer.h, RunJob). Only in the traced process (a vfork child shares our memory, not our file);
// errno is kept, and nothing done for it is traced.
void RunOnWriterFromProgram(writer::Job job) {
  if (!g_life.initialized.load() || !InTracedProcess()) return;
  int saved = errno;
  ++detail::t_hook_depth;
  // This thread's burst ends at exec. Other threads' open bursts are not taken: if exec fails they
  // go on growing and would be written twice; if it succeeds they are lost (docs/architecture.md,
  // "Pending events").
  if (job == writer::Job::kExecFooter) RecordPendingEvent();
  writer::RunJob(job);
  --detail::t_hook_depth;
  errno = saved;
}

// Shutdown's first ending: records PROC_EXIT, has the flush participant deliver, turns the hooks
// off and ends the file (writer::EndTrace). True when the writer was handed the end.
bool EndTheTrace(trace::ExitReason reason, int status, bool from_signal, uint32_t stack) {
  // Inside a hook (a signal that interrupted one, or _exit called by a hooked function) this
  // thread's ring may be half-way through a Record: no event from here then.
  bool may_record = detail::t_hook_depth == 0;
  ++detail::t_hook_depth;
  if (reason == trace::kExitNormal && g_life.exit_status_set) status = g_life.exit_status;
  if (RecorderActive() && may_record) {
    RawEvent e;
    e.ts = NowNs();
    e.type = ev::kProcExit;
    e.result = status;
    e.stack = stack;
    Record(e);
  }
  // The participant's last buffers (CUPTI's) before the footer. Not from a signal handler (the
  // writer has the participant's own thread do it), and not in a forked child: CUDA does not
  // survive fork, and a child's call into it (DataLoader workers end in _exit) can hang.
  const FlushParticipant* participant = trace_file::Origin() != trace::kOriginFork
                                            ? g_life.participant.load(std::memory_order_acquire)
                                            : nullptr;
  if (participant != nullptr && !from_signal) participant->flush();
  detail::g_recorder_active.store(false, std::memory_order_relaxed);
  // _exit is called from signal handlers too: its final flush takes the same care.
  bool handed_over = writer::EndTrace(
      reason, status, from_signal,
      /*signal_care=*/from_signal || reason == trace::kExitUnderscore,
      participant != nullptr && from_signal ? participant->flush_on_own_thread : nullptr);
  --detail::t_hook_depth;
  return handed_over;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Internal API (recorder_internal.h).

// libc's pthread_create: ours (lifecycle.cc) counts the program's threads, and the writer is not
// one of them.
int RealPthreadCreate(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*),
                      void* arg) {
  using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static constinit RealFunction<CreateFn> real{"pthread_create"};
  CreateFn f = real.Get();
  if (f == nullptr) return EAGAIN;
  return f(thread, attr, fn, arg);
}

bool InTracedProcess() {
  return !g_life.detached.load(std::memory_order_relaxed) &&
         static_cast<uint32_t>(getpid()) == trace_file::Pid();
}

void SetExitStatus(int status) {
  g_life.exit_status = status;
  g_life.exit_status_set = true;
}

void AfterHook() {
  const uint8_t what = detail::t_after_hook;
  if (what & detail::kAfterHookHandlers) {
    detail::g_record_handlers_in_call.load(std::memory_order_relaxed)();
  }
  if (what & detail::kAfterHookFlush) writer::MaybeFlushHere();
}

void Init() {
  bool expected = false;
  if (!g_life.initialized.compare_exchange_strong(expected, true)) return;
  int saved_errno = errno;
  ++detail::t_hook_depth;
  redact::Init();  // before the first path is interned (ParseConfig says what was wrong in it)
  const Config* config = new Config(ParseConfig());  // never freed: the parts keep what they need
  strings::Init();
  queues::Init();
  flush::Init();
  // What was wrong with the configuration goes into the trace too (it was said on stderr only
  // where that is allowed).
  for (const std::string& warning : config->warnings) {
    queues::Add({NowNs(), static_cast<uint32_t>(NoticeSeverity::kWarning), "bad_config", warning});
  }
  uint64_t slots = 1;
  while (slots * 2 * sizeof(RawEvent) <= uint64_t{config->buffer_kb} * 1024) slots *= 2;
  trace_file::Init(config, slots * sizeof(RawEvent));
  // The rings' thread key first (keys are destroyed in index order): an ending thread hands its
  // ring over before the end of the last thread ends the trace.
  rings::Init(slots);
  pthread_key_create(&g_life.thread_end_key, OnProgramThreadEnd);
  detail::g_family_mask.store(config->family_mask, std::memory_order_relaxed);
  stacks::Init(config->stack_depth);
  python::Init(config->python_stacks && config->stack_depth > 0);
  writer::Init(config->flush_ms, config->writer_at_start);
  sampler::Init(config->sample_hz, config->sample_python_hz);
  // The file is made here, by the starting thread; a writer thread comes later, if ever (writer.h).
  if (trace_file::Create()) {
    pthread_atfork(ForkPrepare, ForkParent, ForkChild);
    detail::g_recorder_active.store(true, std::memory_order_release);
    writer::FileCreated();
  }
  // Messages may go to the program's stderr until the file was tried (config.cc).
  StartupDone();
  ConstructorDone();
  --detail::t_hook_depth;
  errno = saved_errno;
}

void Shutdown(trace::ExitReason reason, int status, bool from_signal, uint32_t stack) {
  if (!g_life.initialized.load() || !InTracedProcess()) return;
  int saved_errno = errno;
  bool handed_over;
  {
    // From the claim of the end until it is handed over, SIGTERM and SIGINT stay pending in this
    // thread: their handler ends the trace too, and on this thread it could only wait for an end
    // this thread has not handed over yet (3 s, then the process died of the signal without its
    // footer: PreloadTest.SigtermDuringUnderscoreExitWaitsForTheFooter, 3 of 40 runs under TSan,
    // which delivers a signal at the next intercepted call, such as NowNs's clock_gettime).
    TerminationSignalsBlocked blocked;
    // Another path is ending the trace (Python's Pool.terminate() sends SIGTERM to workers that
    // are already in _exit): this one waits for it to finish before it lets the process die.
    handed_over =
        g_life.shutdown_started.exchange(true) || EndTheTrace(reason, status, from_signal, stack);
  }
  if (handed_over) writer::WaitTraceEnded(from_signal ? 3 : 10);
  errno = saved_errno;
}

bool EndDetached() {
  if (!g_life.initialized.load() || !InTracedProcess() || !RecorderActive()) return false;
  const int saved_errno = errno;
  bool handed_over = false;
  {
    TerminationSignalsBlocked blocked;
    if (!g_life.shutdown_started.exchange(true)) {
      RecordNotice(NoticeSeverity::kWarning, "seccomp",
                   "the process entered seccomp: tracing stopped here, the process went on",
                   /*print=*/false);
      ++detail::t_hook_depth;
      detail::g_recorder_active.store(false, std::memory_order_relaxed);
      handed_over = writer::EndTrace(trace::kExitDetached, 0, /*from_signal=*/false,
                                     /*signal_care=*/false, nullptr);
      --detail::t_hook_depth;
    }
  }
  if (handed_over) writer::WaitTraceEnded(10);
  g_life.detached.store(true, std::memory_order_relaxed);
  errno = saved_errno;
  return true;
}

void CountNewThread() { g_life.program_threads.fetch_add(1, std::memory_order_relaxed); }
void UncountThread() { g_life.program_threads.fetch_sub(1, std::memory_order_relaxed); }

void ThreadStarts() {
  // Any non-null value: the key's destructor runs only for threads that set one.
  pthread_setspecific(g_life.thread_end_key, &g_life.thread_end_key);
}

}  // namespace internal

// ---------------------------------------------------------------------------------------------
// Public API (recorder.h) that is not one part's alone.

void RegisterFlushParticipant(const FlushParticipant* participant) {
  internal::g_life.participant.store(participant, std::memory_order_release);
}

void FlushNow() { internal::RunOnWriterFromProgram(writer::Job::kFlush); }
void BeforeExec() { internal::RunOnWriterFromProgram(writer::Job::kExecFooter); }
void AfterExecFailed() { internal::RunOnWriterFromProgram(writer::Job::kExecFailed); }

void MoveTraceFdAwayFrom(int fd) {
  // A thread with a table of its own (a vfork child borrowing this thread) moves nothing of ours.
  if (!IsTraceFd(fd) || OwnFdTable()) return;
  int saved = errno;
  ++detail::t_hook_depth;
  {
    // Under the flush lock: the writer writes through the program's descriptor, and must never
    // write to the file the program is about to put at this number.
    flush::ProgramThreadLock lock;
    trace_file::MoveProgramFdAwayFrom(fd);
  }
  --detail::t_hook_depth;
  errno = saved;
}

}  // namespace idlescope
