// Timing of the program's signal handlers (signals.cc). A handler runs on whatever thread the
// signal lands on, in the middle of whatever that thread was doing, possibly inside a call the
// recorder times: issue 24 found a 2 s handler that landed in a CUDA call reported as 2 s of
// synchronization (with a 2 s saving from removing the sync). So the program's handlers are run
// through a trampoline of ours that times them; one that ran at least 1 ms is a SIGNAL_HANDLER
// event (proto/trace.proto) over the handler's own time, and the analysis gives that span to the
// handler rather than to the call it interrupted.
//
// The program sees its own dispositions: sigaction/signal (their hooks are lifecycle.cc's, which
// hand every signal but SIGTERM/SIGINT here) answer with what it installed, and SIG_DFL, SIG_IGN
// and the synchronous fault signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT:
// crash handlers that may inspect or change the faulting context) go to the kernel unchanged.
#pragma once

#include <signal.h>

namespace idlescope::signals {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);

// sigaction for `sig`, through `real` (the real sigaction): a handler of the program's is installed
// behind the trampoline with the program's mask and flags (SA_SIGINFO added, SA_RESETHAND
// emulated), `old` gets what the program installed before. Only while the recorder runs and in the
// traced process itself; elsewhere (a vfork child sharing our memory, the recorder off) the call
// goes to `real`, `old` translated when the kernel holds the trampoline.
int Sigaction(int sig, const struct sigaction* act, struct sigaction* old, SigactionFn real);

// signal(2) (glibc's: BSD semantics) through Sigaction: `real_signal` installs the handler as
// glibc would (its flags depend on siginterrupt), the disposition it made is then put behind the
// trampoline.
sighandler_t Signal(int sig, sighandler_t handler, sighandler_t (*real_signal)(int, sighandler_t),
                    SigactionFn real);

// The handlers that ran inside a hook on the calling thread, recorded now: the outermost hook's
// guard (recorder.h, HookGuard) calls it when it ends and some are waiting.
void RecordHandlersInCall();

}  // namespace idlescope::signals
