// The program's signal handlers, timed (signals.h says why). The kernel holds our trampoline, the
// program's handler is in a table (one entry per signal, double-buffered: the handler of another
// thread may read the entry while sigaction changes it), and the trampoline calls it with the
// signal's own arguments and the program's errno. A handler that ran at least kHandlerRecordNs is
// recorded:
//   - at once when its thread was in none of our hooks (the recorder's state is the thread's own
//     then, as in any hook);
//   - else after the hook: a hook may be in the middle of appending to the thread's ring when the
//     signal lands, so the trampoline only notes the handler in the thread's small stash, and the
//     outermost hook's guard records it when the hook ends (HookGuard, recorder.h).
// Nothing is held while the program's handler runs: it may longjmp out (siglongjmp to a
// recovery point), which only loses its event.
#include "interpose/hooks/signals.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "interpose/recorder.h"
#include "interpose/recorder_internal.h"

namespace idlescope {
namespace signals {
namespace {

// A handler shorter than this records nothing: as for waits (interpose/hooks/wait.h), 1 ms is the
// analyzer's default --min-gap, and a shorter handler cannot hold up an attributed gap by itself.
constexpr uint64_t kHandlerRecordNs = 1'000'000;

struct Program {
  struct sigaction action;
  uint32_t name;  // InternString id of the handler's function (0: not named)
};

struct Slot {
  Program programs[2];
  std::atomic<uint8_t> current{0};
};

Slot g_slots[NSIG];
std::atomic<SigactionFn> g_real{nullptr};

void Trampoline(int sig, siginfo_t* info, void* ucontext);

bool IsTrampoline(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) != 0 && a.sa_sigaction == Trampoline;
}

void* HandlerOf(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) != 0 ? reinterpret_cast<void*>(a.sa_sigaction)
                                        : reinterpret_cast<void*>(a.sa_handler);
}

bool IsFunction(const struct sigaction& a) {
  void* h = HandlerOf(a);
  return h != reinterpret_cast<void*>(SIG_DFL) && h != reinterpret_cast<void*>(SIG_IGN) &&
         h != reinterpret_cast<void*>(SIG_ERR);
}

// The signals whose handlers are timed: not SIGTERM/SIGINT (lifecycle.cc ends the trace on them
// and chains the program's handler itself), not the ones that cannot be caught, not the
// synchronous faults (crash handlers, emulators: they read or rewrite the faulting context and
// must see the kernel's frame as it is, with nothing of ours in between).
bool Timed(int sig) {
  if (sig <= 0 || sig >= NSIG) return false;
  switch (sig) {
    case SIGTERM:
    case SIGINT:
    case SIGKILL:
    case SIGSTOP:
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:
    case SIGABRT:
      return false;
    default:
      return true;
  }
}

const Program& Current(const Slot& slot) {
  return slot.programs[slot.current.load(std::memory_order_acquire)];
}

void SetCurrent(Slot& slot, const Program& program) {
  const uint8_t next = slot.current.load(std::memory_order_relaxed) ^ 1;
  slot.programs[next] = program;
  slot.current.store(next, std::memory_order_release);
}

// The handler's function by name, for the report: its dynamic symbol, else its .symtab name (a
// static function, an executable without -rdynamic), else "module+0xoffset" (a stripped
// module). dladdr takes the loader's lock: called from sigaction, never from a handler.
uint32_t NameOf(void* handler) {
  HookGuard guard(Family::kProc);  // interning must not run nested in another hook of ours
  if (!guard.active()) return 0;
  Dl_info info;
  struct link_map* map = nullptr;
  char text[256];
  int n = 0;
  const bool found = dladdr1(handler, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0;
  const uintptr_t at = reinterpret_cast<uintptr_t>(handler);
  std::string from_file;
  if (found && info.dli_sname == nullptr && info.dli_fname != nullptr && map != nullptr) {
    // The main program's link map has an empty name: its file is /proc/self/exe's.
    std::string path =
        map->l_name != nullptr && map->l_name[0] != '\0' ? map->l_name : "/proc/self/exe";
    from_file = stacks::FunctionInFile(path, at - map->l_addr);
  }
  if (found && info.dli_sname != nullptr) {
    n = snprintf(text, sizeof(text), "%s", info.dli_sname);
  } else if (!from_file.empty()) {
    n = snprintf(text, sizeof(text), "%s", from_file.c_str());
  } else if (found && info.dli_fname != nullptr) {
    const char* base = strrchr(info.dli_fname, '/');
    n = snprintf(text, sizeof(text), "%s+0x%lx", base != nullptr ? base + 1 : info.dli_fname,
                 static_cast<unsigned long>(at - reinterpret_cast<uintptr_t>(info.dli_fbase)));
  } else {
    n = snprintf(text, sizeof(text), "0x%lx", static_cast<unsigned long>(at));
  }
  if (n <= 0) return 0;
  return InternString(
      std::string_view(text, std::min<size_t>(static_cast<size_t>(n), sizeof(text) - 1)));
}

// Handlers that ran inside a hook, waiting for it to end (RecordHandlersInCall). A thread runs
// handlers one at a time, nested at worst: a few entries are plenty; beyond them the last one
// grows to cover the rest.
struct Stashed {
  uint64_t t0;
  uint64_t t1;
  int sig;
  uint32_t name;
};
constexpr uint32_t kStash = 8;
__thread Stashed t_stash[kStash] __attribute__((tls_model("initial-exec")));
__thread uint32_t t_stashed __attribute__((tls_model("initial-exec"))) = 0;

void Fill(RawEvent& e, uint64_t t0, uint64_t t1, int sig, uint32_t name) {
  e.ts = t0;
  e.dur = t1 - t0;
  e.count = 1;
  e.api = IDLESCOPE_API("signal handler")();
  e.result = sig;
  e.type = ev::kSignalHandler;
  e.u.proc.path = name;
}

// A handler of at least kHandlerRecordNs ran on this thread from t0 to t1. Not inlined: the stack
// of an event recorded here skips this frame and the trampoline's, and starts where the signal
// landed (the unwinder steps over the kernel's signal frame).
__attribute__((noinline)) void NoteHandler(int sig, uint32_t name, uint64_t t0, uint64_t t1) {
  if (!RecorderActive() || !internal::InTracedProcess()) return;
  if (detail::t_hook_depth == 0) {
    HookGuard guard(Family::kProc);
    if (!guard.active()) return;
    RawEvent e;
    Fill(e, t0, t1, sig, name);
    e.stack = CaptureStack(2);
    Record(e);
    return;
  }
  const uint32_t n = t_stashed;
  if (n < kStash) {
    t_stash[n] = {t0, t1, sig, name};
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_stashed = n + 1;
  } else {
    t_stash[kStash - 1].t1 += t1 - t0;
  }
  detail::g_record_handlers_in_call.store(&RecordHandlersInCall, std::memory_order_relaxed);
  detail::t_after_hook |= detail::kAfterHookHandlers;
}

void Trampoline(int sig, siginfo_t* info, void* ucontext) {
  const int saved = errno;
  Slot& slot = g_slots[sig];
  const Program program = Current(slot);
  SigactionFn real = g_real.load(std::memory_order_relaxed);
  if ((program.action.sa_flags & SA_RESETHAND) != 0 && real != nullptr) {
    // The kernel would have reset the disposition before running the handler: the handler only
    // (kernel/signal.c, SA_ONESHOT), the flags and mask stay as the program gave them, which a
    // later sigaction query shows (SA_RESETHAND included).
    struct sigaction dfl = program.action;
    dfl.sa_sigaction = nullptr;
    dfl.sa_handler = SIG_DFL;
    if (internal::InTracedProcess()) SetCurrent(slot, Program{dfl, 0});
    real(sig, &dfl, nullptr);
  }
  void* handler = HandlerOf(program.action);
  if (handler == reinterpret_cast<void*>(SIG_IGN)) {
    errno = saved;
    return;
  }
  if (handler == reinterpret_cast<void*>(SIG_DFL) && real != nullptr) {
    // The program went back to the default while the signal was on its way: the default action
    // it asked for, once this returns (the signal is blocked in its own handler).
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    real(sig, &dfl, nullptr);
    raise(sig);
    errno = saved;
    return;
  }
  const uint64_t t0 = NowNs();
  ++detail::t_in_program_handler;
  errno = saved;
  if ((program.action.sa_flags & SA_SIGINFO) != 0) {
    program.action.sa_sigaction(sig, info, ucontext);
  } else {
    program.action.sa_handler(sig);
  }
  const int after = errno;  // the handler's errno is the program's business: kept as it left it
  const uint64_t t1 = NowNs();
  // Still the signal's handler: the hook NoteHandler may run must not flush at its end (a flush
  // allocates, and the signal may have landed in malloc: MayBeInSignalHandler).
  if (t1 - t0 >= kHandlerRecordNs) NoteHandler(sig, program.name, t0, t1);
  --detail::t_in_program_handler;
  errno = after;
}

// What `old` reports: the program's handler when the kernel holds the trampoline.
void Translate(const Slot& slot, const struct sigaction& kernel, struct sigaction* old) {
  if (old == nullptr) return;
  *old = IsTrampoline(kernel) ? Current(slot).action : kernel;
}

}  // namespace

int Sigaction(int sig, const struct sigaction* act, struct sigaction* old, SigactionFn real) {
  g_real.store(real, std::memory_order_relaxed);
  if (!Timed(sig)) return real(sig, act, old);
  Slot& slot = g_slots[sig];
  struct sigaction kernel;
  if (!RecorderActive() || !internal::InTracedProcess() || act == nullptr || !IsFunction(*act)) {
    // Nothing to time (a query, SIG_DFL, SIG_IGN, the recorder off) or not ours to record (a
    // vfork child: its dispositions are its kernel table's, the table here is its parent's).
    const int rc = real(sig, act, &kernel);
    if (rc != 0) return rc;
    Translate(slot, kernel, old);
    return 0;
  }
  const uint32_t name = NameOf(HandlerOf(*act));
  // Keep the signal out of this thread while the entry changes (another thread may still run the
  // trampoline on the entry it read: the other buffer).
  sigset_t block, mask;
  sigemptyset(&block);
  sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &mask);
  const Program before = Current(slot);
  SetCurrent(slot, Program{*act, name});
  struct sigaction ours;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = Trampoline;
  ours.sa_mask = act->sa_mask;
  // The program's flags keep their meaning (SA_RESTART, SA_NODEFER, SA_ONSTACK); SA_RESETHAND is
  // emulated by the trampoline (the kernel would remove it, not the program's handler).
  ours.sa_flags = (act->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
  const int rc = real(sig, &ours, &kernel);
  const int err = errno;
  if (rc != 0) SetCurrent(slot, before);
  pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  if (rc != 0) {
    errno = err;
    return rc;
  }
  if (old != nullptr) *old = IsTrampoline(kernel) ? before.action : kernel;
  return 0;
}

sighandler_t Signal(int sig, sighandler_t handler, sighandler_t (*real_signal)(int, sighandler_t),
                    SigactionFn real) {
  g_real.store(real, std::memory_order_relaxed);
  if (real_signal == nullptr) {
    errno = ENOSYS;
    return SIG_ERR;
  }
  if (!Timed(sig)) return real_signal(sig, handler);
  Slot& slot = g_slots[sig];
  const Program before = Current(slot);
  const sighandler_t previous = real_signal(sig, handler);
  if (previous == SIG_ERR) return SIG_ERR;
  const bool was_ours = reinterpret_cast<void*>(previous) == reinterpret_cast<void*>(Trampoline);
  const sighandler_t program_previous =
      was_ours ? reinterpret_cast<sighandler_t>(HandlerOf(before.action)) : previous;
  if (!internal::InTracedProcess()) return program_previous;
  if (RecorderActive() && handler != SIG_DFL && handler != SIG_IGN && handler != SIG_ERR) {
    // What glibc installed (its flags depend on siginterrupt), put behind the trampoline.
    const int saved = errno;
    struct sigaction installed;
    if (real(sig, nullptr, &installed) == 0 && !IsTrampoline(installed)) {
      Sigaction(sig, &installed, nullptr, real);
    }
    errno = saved;
  }
  return program_previous;
}

void RecordHandlersInCall() {
  detail::t_after_hook &= static_cast<uint8_t>(~detail::kAfterHookHandlers);
  HookGuard guard(Family::kProc);
  const uint32_t n = signals::t_stashed;
  if (!guard.active() || n == 0) {
    signals::t_stashed = 0;
    return;
  }
  signals::Stashed stashed[signals::kStash];
  for (uint32_t i = 0; i < n; ++i) stashed[i] = signals::t_stash[i];
  std::atomic_signal_fence(std::memory_order_seq_cst);
  signals::t_stashed = 0;
  const int saved = errno;
  // Where the handlers landed: the call they interrupted (skip this frame: the innermost is the
  // hook).
  const uint32_t stack = CaptureStack(1);
  for (uint32_t i = 0; i < n; ++i) {
    RawEvent e;
    signals::Fill(e, stashed[i].t0, stashed[i].t1, stashed[i].sig, stashed[i].name);
    e.stack = stack;
    Record(e);
  }
  errno = saved;
}

}  // namespace signals
}  // namespace idlescope
