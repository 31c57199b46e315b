// Process life of a traced program: start (library constructor), end of main, exit, _exit/_Exit,
// SIGTERM/SIGINT, plus the small exported annotation API (idlescope_mark, idlescope_flush).
//
// Why each exit path needs its own handling:
// - return from main: wrapped through __libc_start_main so the events are on disk before atexit
//   handlers and static destructors run (those may hang or crash);
// - exit(): the status goes into the footer; the footer itself is written by the library
//   destructor, which runs after the program's atexit handlers (a preloaded object is finalized
//   after the objects that depend on it), so their I/O is traced too;
// - _exit/_Exit: no atexit handlers, no destructors (Python multiprocessing workers end in
//   os._exit): the hook writes the footer before the real call;
// - SIGTERM/SIGINT with the default action: the process dies without exit handlers; our handler
//   has the writer thread flush (async-signal-safe handshake, bounded wait), restores SIG_DFL
//   and re-raises, so the exit status is the signal's. A handler of the program is chained.
// - SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT with the default action (a crash, or a rank killed
//   with one of them): the same end, written by a one-shot handler of ours that stands only
//   while the program has none (below, "Fatal signals").
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "interpose/hooks/signals.h"
#include "interpose/own_stack.h"
#include "interpose/python/pystacks.h"
#include "interpose/real_symbol.h"
#include "interpose/recorder.h"
#include "interpose/recorder_internal.h"

namespace idlescope::internal {
namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);
using ExitFn = void (*)(int);
using MainFn = int (*)(int, char**, char**);
using StartMainFn = int (*)(MainFn, int, char**, void (*)(), void (*)(), void (*)(), void*);

SigactionFn g_real_sigaction = nullptr;
SignalFn g_real_signal = nullptr;
ExitFn g_real_exit = nullptr;
ExitFn g_real__exit = nullptr;
ExitFn g_real__Exit = nullptr;
MainFn g_program_main = nullptr;

template <typename F>
F Resolve(F& slot, const char* name) {
  if (slot == nullptr) slot = reinterpret_cast<F>(FindRealSymbol(name));
  return slot;
}

int RealSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (Resolve(g_real_sigaction, "sigaction") == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return g_real_sigaction(sig, act, old);
}

// ---------------------------------------------------------------------------------------------
// SIGTERM and SIGINT. The program sees its own disposition through sigaction/signal (we answer
// with what it installed); the kernel sees our handler, except while the program ignores the
// signal: SIG_IGN then goes to the kernel as is, because an ignored signal stays ignored across
// exec (shells start background jobs with SIGINT ignored) and a handler would not.
//
// The record below is the traced process's alone. A vfork child (or any clone sharing our memory)
// runs in it until it execs, and CPython's _posixsubprocess resets every handled signal to
// SIG_DFL there: were the child's calls to update the record, the parent's handlers would be
// lost (its Ctrl-C or SIGTERM would kill it instead of raising KeyboardInterrupt). So a process
// other than the traced one only reads the record; its dispositions go to its kernel table.

bool IsManaged(int sig) { return sig == SIGTERM || sig == SIGINT; }

struct Managed {
  struct sigaction program;  // what the program installed (initially: what was there)
  bool ours_installed;
};
Managed g_managed[NSIG];
bool g_signals_managed = false;

struct sigaction DefaultAction() {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  return dfl;
}

bool IsDefaultAction(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) == 0 && a.sa_handler == SIG_DFL;
}

void TerminationSignal(int sig, siginfo_t* info, void* ucontext) {
  int saved = errno;
  struct sigaction program = g_managed[sig].program;
  bool siginfo = (program.sa_flags & SA_SIGINFO) != 0;
  void* handler = siginfo ? reinterpret_cast<void*>(program.sa_sigaction)
                          : reinterpret_cast<void*>(program.sa_handler);
  if (handler == reinterpret_cast<void*>(SIG_DFL)) {
    // The default action ends the process: write what we have and the footer, then die of the
    // same signal (blocked while we run, so raise() leaves it pending until we return).
    Shutdown(trace::kExitSignal, sig, /*from_signal=*/true);
    struct sigaction dfl = DefaultAction();
    RealSigaction(sig, &dfl, nullptr);
    if (InTracedProcess()) g_managed[sig].ours_installed = false;
    raise(sig);
    errno = saved;
    return;
  }
  if (handler == reinterpret_cast<void*>(SIG_IGN)) {
    errno = saved;
    return;
  }
  // The program handles it (Python raises KeyboardInterrupt later): flush soon, chain.
  FlushSoon();
  if (program.sa_flags & SA_RESETHAND) {
    struct sigaction dfl = DefaultAction();
    if (InTracedProcess()) {
      g_managed[sig].program = dfl;
    } else {
      RealSigaction(sig, &dfl, nullptr);  // a vfork child: the reset is its own
    }
  }
  ++detail::t_in_program_handler;
  errno = saved;
  if (siginfo) {
    program.sa_sigaction(sig, info, ucontext);
  } else {
    program.sa_handler(sig);
  }
  --detail::t_in_program_handler;
}

// The handler's entry. Where the program has the default action, the work (ending the trace) runs
// on a stack of ours (own_stack.h), mapped at load: the default action needs no stack, and a thread
// that used up its own must still end as it would bare (with its trace's end). One handler at a
// time uses that stack; another one meanwhile runs in place. A handler of the program's is called
// on the thread's stack, as the kernel would have called it.
struct TerminationCall {
  int sig;
  siginfo_t* info;
  void* ucontext;
};
char* g_handler_stack_top = nullptr;
std::atomic<bool> g_handler_stack_busy{false};

void TerminationOnOwnStack(void* p) {
  auto* call = static_cast<TerminationCall*>(p);
  TerminationSignal(call->sig, call->info, call->ucontext);
}

void OnTerminationSignal(int sig, siginfo_t* info, void* ucontext) {
  const bool dfl = IsDefaultAction(g_managed[sig].program);
  if (dfl && g_handler_stack_top != nullptr &&
      !g_handler_stack_busy.exchange(true, std::memory_order_acquire)) {
    TerminationCall call{sig, info, ucontext};
    CallOnStack(&TerminationOnOwnStack, &call, g_handler_stack_top);
    g_handler_stack_busy.store(false, std::memory_order_release);
    return;
  }
  TerminationSignal(sig, info, ucontext);
}

// The alternate signal stack of the thread that loaded us (the main thread), where the program had
// none: the kernel pushes the frame of our handler of SIGTERM/SIGINT there where the program has
// the default action, so that a thread whose stack is used up to the last 3 KB (the frame takes
// 3-4 KB with AVX-512 state) still dies of the signal as bare, not of SIGSEGV. The program never
// sees it (Sigaltstack below): it reads no alternate stack, and one it sets replaces ours.
// Not under the sanitizers: their runtimes set an alternate stack of their own on every thread,
// and call sigaltstack while they start, before instrumented code of ours may run (the hook).
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
constexpr bool kOwnAltStack = true;
#else
constexpr bool kOwnAltStack = false;
#endif
constexpr size_t kAltStackBytes = size_t{64} << 10;
char* g_alt_stack = nullptr;  // its lowest address

void SetAltStack() {
  if (!kOwnAltStack) return;
  stack_t current;
  if (syscall(SYS_sigaltstack, nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) == 0) {
    return;  // the program's (a runtime that set one before we were loaded)
  }
  char* top = MapOwnStack(kAltStackBytes);
  if (top == nullptr) return;
  stack_t ours;
  ours.ss_sp = top - kAltStackBytes;
  ours.ss_flags = 0;
  ours.ss_size = kAltStackBytes;
  if (syscall(SYS_sigaltstack, &ours, nullptr) == 0) g_alt_stack = top - kAltStackBytes;
}

int InstallOurs(int sig, const struct sigaction& program) {
  struct sigaction ours;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = OnTerminationSignal;
  ours.sa_mask = program.sa_mask;
  // The program's flags (SA_RESTART, SA_NODEFER, SA_ONSTACK) keep their meaning; SA_RESETHAND is
  // emulated above, since the kernel would remove our handler. The work of ours runs on a stack of
  // ours (writer.cc, FlushHere), so a thread whose own stack is nearly used up still ends right;
  // where the program has the default action, the frame goes on an alternate stack (SetAltStack).
  ours.sa_flags = (program.sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
  if (IsDefaultAction(program)) ours.sa_flags |= SA_ONSTACK;
  int rc = RealSigaction(sig, &ours, nullptr);
  if (rc == 0) g_managed[sig].ours_installed = true;
  return rc;
}

void ManageSignals() {
  if (kCallsOnOwnStack) g_handler_stack_top = MapOwnStack(size_t{64} << 10);
  SetAltStack();
  for (int sig : {SIGTERM, SIGINT}) {
    struct sigaction current;
    if (RealSigaction(sig, nullptr, &current) != 0) continue;
    g_managed[sig].program = current;
    g_managed[sig].ours_installed = false;
    bool ignored = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN;
    if (!ignored) InstallOurs(sig, current);
  }
  g_signals_managed = true;
}

// sigaction in a process that shares our memory but is not the traced one (see above): the kernel
// holds its dispositions; where it still has our handler (inherited), the program's is the
// record's.
int ChildSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  struct sigaction previous;
  int rc = RealSigaction(sig, act, &previous);
  if (rc != 0 || old == nullptr) return rc;
  bool ours = (previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction == OnTerminationSignal;
  *old = ours ? g_managed[sig].program : previous;
  return 0;
}

int ManagedSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (!InTracedProcess()) return ChildSigaction(sig, act, old);
  // Keep the signal out while the record changes (our handler reads it).
  sigset_t block, saved_mask;
  sigemptyset(&block);
  sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &saved_mask);
  struct sigaction previous = g_managed[sig].program;
  int rc = 0;
  if (act != nullptr) {
    bool ignore = !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_IGN;
    if (ignore) {
      rc = RealSigaction(sig, act, nullptr);
      if (rc == 0) g_managed[sig].ours_installed = false;
    } else {
      rc = InstallOurs(sig, *act);
    }
    if (rc == 0) g_managed[sig].program = *act;
  }
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  if (rc == 0 && old != nullptr) *old = previous;
  return rc;
}

// ---------------------------------------------------------------------------------------------
// Fatal signals. A process that dies of SIGSEGV (or SIGBUS, SIGFPE, SIGILL, SIGABRT) with the
// default action runs no exit handler: without ours its trace lost the end (up to a flush interval
// of events) and the footer, and the report could not say that the process died, of what, or where
// (a crashed rank's aftermath read as `tail`). Ours is installed only where the program's
// disposition is SIG_DFL, with SA_RESETHAND: the kernel puts SIG_DFL back as it enters it, so
// anything that goes wrong in it (a fault in our flush, a second fault) kills the process as the
// first signal would have. It records PROC_EXIT with the stack where the signal landed, writes
// what we have and the footer (EXIT_SIGNAL, the signal: bounded wait), and lets the signal do what
// it does without us: a fault (si_code > 0) happens again when the instruction runs again, now
// with the default action (a core dump where the system makes one); a sent signal (kill, raise,
// abort) is raised again, pending until the handler returns.
// A handler the program installs goes to the kernel as given, replacing ours: crash handlers,
// sanitizers and emulators read or rewrite the faulting context and must get the kernel's frame
// with nothing of ours in between; SIG_DFL installed by the program puts ours back. A query
// (sigaction's old action, signal's return) answers SIG_DFL where ours is installed, which is
// what the program would see untraced.

bool IsFatal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT;
}

void OnFatalSignal(int sig, siginfo_t* info, void* /*ucontext*/);

bool IsOurFatalHandler(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) != 0 && a.sa_sigaction == OnFatalSignal;
}

// Not inlined: the stack of the PROC_EXIT starts where the signal landed.
__attribute__((noinline)) void OnFatalSignal(int sig, siginfo_t* info, void* /*ucontext*/) {
  const int saved = errno;
  if (InTracedProcess() && RecorderActive()) {
    // Inside a hook this thread's ring or stack trie may be half-way through a change: no stack
    // then (EndTheTrace records no event either).
    // Skipped: this frame and the kernel's signal return trampoline (__restore_rt).
    const uint32_t stack = detail::t_hook_depth == 0 ? CaptureStack(2) : 0;
    Shutdown(trace::kExitSignal, sig, /*from_signal=*/true, stack);
  }
  // Sent (kill, tgkill, raise, abort, sigqueue: si_code <= 0): again, now with the default action.
  if (info == nullptr || info->si_code <= 0) raise(sig);
  errno = saved;
}

// Our action, set at load (InstallFatalHandlers) where the recorder runs.
struct sigaction g_fatal_action;
bool g_fatal_handlers = false;

void InstallFatalHandlers() {
  memset(&g_fatal_action, 0, sizeof(g_fatal_action));
  g_fatal_action.sa_sigaction = OnFatalSignal;
  sigemptyset(&g_fatal_action.sa_mask);
  // SA_ONSTACK: the program's alternate stack where it has one (a stack overflow's SIGSEGV cannot
  // run a handler on the overflowed stack: the kernel then kills the process with SIGSEGV, as
  // untraced).
  g_fatal_action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  g_fatal_handlers = true;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    struct sigaction current;
    if (RealSigaction(sig, nullptr, &current) != 0) continue;
    const bool dfl = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL;
    if (dfl) RealSigaction(sig, &g_fatal_action, nullptr);
  }
}

bool IsDefault(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) == 0 && a.sa_handler == SIG_DFL;
}

int FatalSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  // The program going back to the default (Python's faulthandler.disable()) gets ours again,
  // which acts as the default does.
  if (act != nullptr && IsDefault(*act) && g_fatal_handlers && RecorderActive()) {
    const int rc = RealSigaction(sig, &g_fatal_action, old);
    if (rc == 0 && old != nullptr && IsOurFatalHandler(*old)) *old = DefaultAction();
    return rc;
  }
  const int rc = RealSigaction(sig, act, old);
  if (rc == 0 && old != nullptr && IsOurFatalHandler(*old)) *old = DefaultAction();
  return rc;
}

int MainWrapper(int argc, char** argv, char** envp) {
  ThreadStarts();  // main may end with pthread_exit: then the last thread's end ends the process
  int status = g_program_main(argc, argv, envp);
  SetExitStatus(status);
  RecordPendingEvent();  // the main thread's open burst is complete: on disk before atexit runs
  FlushNow();
  return status;
}

__attribute__((constructor)) void OnLoad() {
  ++detail::t_hook_depth;  // dlsym may allocate and read files: nothing of ours is traced
  Resolve(g_real_sigaction, "sigaction");
  Resolve(g_real_signal, "signal");
  Resolve(g_real_exit, "exit");
  Resolve(g_real__exit, "_exit");
  Resolve(g_real__Exit, "_Exit");
  --detail::t_hook_depth;
  Init();
  if (RecorderActive()) {
    ManageSignals();
    InstallFatalHandlers();
  }
  python::Start();
}

__attribute__((destructor)) void OnUnload() { Shutdown(trace::kExitNormal, 0, false); }

}  // namespace

void Detach() {
  if (!EndDetached()) return;
  const int saved = errno;
  // Our handlers of SIGTERM/SIGINT and of the fatal signals leave the kernel's table, the
  // program's own dispositions go there, and sigaction/signal pass straight through.
  if (g_signals_managed) {
    for (int sig : {SIGTERM, SIGINT}) {
      if (g_managed[sig].ours_installed) RealSigaction(sig, &g_managed[sig].program, nullptr);
      g_managed[sig].ours_installed = false;
    }
    g_signals_managed = false;
  }
  if (g_fatal_handlers) {
    g_fatal_handlers = false;
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
      struct sigaction current;
      if (RealSigaction(sig, nullptr, &current) != 0 || !IsOurFatalHandler(current)) continue;
      struct sigaction dfl = DefaultAction();
      RealSigaction(sig, &dfl, nullptr);
    }
  }
  errno = saved;
}

}  // namespace idlescope::internal

using namespace idlescope;            // NOLINT
using namespace idlescope::internal;  // NOLINT

IDLESCOPE_EXPORT int __libc_start_main(MainFn main, int argc, char** argv, void (*init)(),
                                       void (*fini)(), void (*rtld_fini)(), void* stack_end) {
  StartMainFn real = reinterpret_cast<StartMainFn>(FindRealSymbol("__libc_start_main"));
  g_program_main = main;
  return real(MainWrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

// Threads of the program: counted, so that when the last one ends (after main's pthread_exit) the
// writer leaves first and the process exits as it would untraced (recorder.cc, "Program
// threads"). The start routine is called through ProgramThread, which registers the thread.
struct ThreadStart {
  void* (*routine)(void*);
  void* arg;
};

void* ProgramThread(void* p) {
  ThreadStart start = *static_cast<ThreadStart*>(p);
  delete static_cast<ThreadStart*>(p);
  ThreadStarts();
  return start.routine(start.arg);
}

IDLESCOPE_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                    void* (*routine)(void*), void* arg) noexcept {
  if (!RecorderActive() || detail::t_hook_depth != 0) {
    return RealPthreadCreate(thread, attr, routine, arg);
  }
  auto* start = new (std::nothrow) ThreadStart{routine, arg};
  if (start == nullptr) return EAGAIN;
  CountNewThread();
  int rc = RealPthreadCreate(thread, attr, ProgramThread, start);
  if (rc != 0) {
    UncountThread();
    delete start;
  }
  return rc;
}

IDLESCOPE_EXPORT void exit(int status) noexcept {
  SetExitStatus(status);
  FlushSoon();  // the footer comes from the destructor, after the atexit handlers
  Resolve(g_real_exit, "exit")(status);
  __builtin_unreachable();
}

IDLESCOPE_EXPORT void _exit(int status) noexcept {
  // A vfork child shares our memory and file: only the traced process itself writes.
  if (InTracedProcess()) Shutdown(trace::kExitUnderscore, status, /*from_signal=*/false);
  if (Resolve(g_real__exit, "_exit") != nullptr) g_real__exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

IDLESCOPE_EXPORT void _Exit(int status) noexcept {
  if (InTracedProcess()) Shutdown(trace::kExitUnderscore, status, /*from_signal=*/false);
  if (Resolve(g_real__Exit, "_Exit") != nullptr) g_real__Exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

// Every other signal's handler is timed (interpose/hooks/signals.h).
IDLESCOPE_EXPORT int sigaction(int sig, const struct sigaction* act,
                               struct sigaction* old) noexcept {
  if (IsFatal(sig)) return FatalSigaction(sig, act, old);
  if (!IsManaged(sig)) return signals::Sigaction(sig, act, old, RealSigaction);
  if (!g_signals_managed) return RealSigaction(sig, act, old);
  return ManagedSigaction(sig, act, old);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // kOwnAltStack
// sigaltstack: the program sees its own alternate stack, never ours (SetAltStack). Where ours is
// the thread's, the program reads none, one it sets replaces ours, and its SS_DISABLE leaves ours
// (no stack of the program's is in use: there is nothing of its own to disable).
IDLESCOPE_EXPORT int sigaltstack(const stack_t* ss, stack_t* old) noexcept {
  stack_t current;
  if (g_alt_stack == nullptr || syscall(SYS_sigaltstack, nullptr, &current) != 0 ||
      (current.ss_flags & SS_DISABLE) != 0 || current.ss_sp != g_alt_stack) {
    return static_cast<int>(syscall(SYS_sigaltstack, ss, old));
  }
  if (ss != nullptr && (ss->ss_flags & SS_DISABLE) == 0) {
    if (syscall(SYS_sigaltstack, ss, nullptr) != 0) return -1;
  }
  if (old != nullptr) {
    old->ss_sp = nullptr;
    old->ss_flags = SS_DISABLE;
    old->ss_size = 0;
  }
  return 0;
}
#endif

namespace {

// signal(sig, handler) as glibc's does it, through `set`: BSD semantics (SA_RESTART, the signal
// blocked in its handler); the old handler (sa_handler and sa_sigaction share storage, a union in
// glibc's struct sigaction), or SIG_ERR.
sighandler_t SignalThrough(int (*set)(int, const struct sigaction*, struct sigaction*), int sig,
                           sighandler_t handler) {
  struct sigaction act, old;
  memset(&act, 0, sizeof(act));
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  if (set(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

}  // namespace

IDLESCOPE_EXPORT sighandler_t signal(int sig, sighandler_t handler) noexcept {
  if (IsFatal(sig)) return SignalThrough(FatalSigaction, sig, handler);
  if (!IsManaged(sig)) {
    return signals::Signal(sig, handler, Resolve(g_real_signal, "signal"), RealSigaction);
  }
  if (!g_signals_managed) {
    // Resolved at load; not a function-local static (its guard could be left taken by fork).
    if (Resolve(g_real_signal, "signal") == nullptr) {
      errno = ENOSYS;
      return SIG_ERR;
    }
    return g_real_signal(sig, handler);
  }
  return SignalThrough(ManagedSigaction, sig, handler);
}

namespace {

// sysv_signal, bsd_signal and sigset: glibc's change the disposition through its own sigaction,
// past ours. `call` makes the change; what it installed is then put behind ours as sigaction would
// (a program's handler timed and counted as a handler: hooks inside it do not flush, which could
// allocate inside an interrupted malloc), and the old handler it returns, when ours, is the
// program's (SIG_HOLD, sigset's "was blocked", stays).
template <typename Call>
sighandler_t Rewrapped(int sig, sighandler_t handler, Call call) {
  struct sigaction before;
  const bool known = sigaction(sig, nullptr, &before) == 0;
  const sighandler_t previous = call();
  if (previous == SIG_ERR || !InTracedProcess()) return previous;
  const int saved = errno;
  if (handler != SIG_DFL && handler != SIG_IGN && handler != SIG_ERR) {
    struct sigaction installed;
    if (RealSigaction(sig, nullptr, &installed) == 0) sigaction(sig, &installed, nullptr);
  }
  errno = saved;
  if (previous == SIG_HOLD || !known) return previous;
  return before.sa_handler;
}

template <typename F>
F ResolveNamed(std::atomic<F>& slot, const char* name) {
  F f = slot.load(std::memory_order_relaxed);
  if (f == nullptr) {
    f = reinterpret_cast<F>(FindRealSymbol(name));
    slot.store(f, std::memory_order_relaxed);
  }
  return f;
}

std::atomic<SignalFn> g_real_sysv_signal{nullptr}, g_real_bsd_signal{nullptr},
    g_real_sigset{nullptr};

sighandler_t CallReal(std::atomic<SignalFn>& slot, const char* name, int sig,
                      sighandler_t handler) {
  SignalFn real = ResolveNamed(slot, name);
  if (real == nullptr) {
    errno = ENOSYS;
    return SIG_ERR;
  }
  return real(sig, handler);
}

}  // namespace

IDLESCOPE_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler) noexcept {
  return Rewrapped(sig, handler,
                   [&] { return CallReal(g_real_sysv_signal, "sysv_signal", sig, handler); });
}

IDLESCOPE_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler) noexcept {
  return Rewrapped(sig, handler,
                   [&] { return CallReal(g_real_bsd_signal, "bsd_signal", sig, handler); });
}

IDLESCOPE_EXPORT sighandler_t sigset(int sig, sighandler_t handler) noexcept {
  return Rewrapped(sig, handler, [&] { return CallReal(g_real_sigset, "sigset", sig, handler); });
}

// Annotation API for programs and tests: a MARK event (with the caller's stack) and a flush.
// Found with dlsym(RTLD_DEFAULT, "idlescope_mark") so a program does not depend on the tracer.
IDLESCOPE_EXPORT void idlescope_mark(const char* text) {
  if (!RecorderActive() || detail::t_hook_depth != 0) return;
  int saved = errno;
  RawEvent e;
  e.ts = NowNs();
  e.type = ev::kMark;
  e.stack = CaptureStack(1);
  e.u.io.path = InternString(text != nullptr ? text : "");
  e.dur = NowNs() - e.ts;
  Record(e);
  errno = saved;
}

IDLESCOPE_EXPORT void idlescope_flush() { FlushNow(); }
