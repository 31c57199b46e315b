// prctl and syscall, for what sandboxes do to the calling thread.
// - The TSC disabled: a program (a sandbox, a record/replay tool) may disable the TSC for a thread
//   with prctl(PR_SET_TSC, PR_TSC_SIGSEGV); RDTSC then faults there and in the threads it creates.
//   The hooks' clock reads the TSC (interpose/call_clock.h), so it stops doing so before the call.
// - Seccomp, by prctl(PR_SET_SECCOMP) or the seccomp system call (glibc has no wrapper: programs
//   and libseccomp use syscall(SYS_seccomp, ...)): tracing steps aside first (Detach).
#include <errno.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <atomic>

#include "interpose/call_clock.h"
#include "interpose/hooks/io_libc.h"
#include "interpose/raw_syscall.h"
#include "interpose/real_symbol.h"
#include "interpose/recorder.h"
#include "interpose/recorder_internal.h"

namespace {
using PrctlFn = int (*)(int, unsigned long, unsigned long, unsigned long, unsigned long);
constinit idlescope::RealFunction<PrctlFn> g_real_prctl{"prctl"};
#if !defined(__x86_64__)
using SyscallFn = long (*)(long, long, long, long, long, long, long);
constinit idlescope::RealFunction<SyscallFn> g_real_syscall{"syscall"};
#endif
}  // namespace

// glibc declares prctl(int, ...); the kernel takes four unsigned long arguments after the option.
IDLESCOPE_EXPORT int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long),
                a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  if (option == PR_SET_TSC && a2 == PR_TSC_SIGSEGV) idlescope::StopReadingTsc();
  // Seccomp: any call of ours could be forbidden from now on (recorder_internal.h, Detach).
  if (option == PR_SET_SECCOMP) idlescope::internal::Detach();
  PrctlFn real = g_real_prctl.Get();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return real(option, a2, a3, a4, a5);
}

// glibc declares syscall(long, ...); the kernel takes at most six arguments, read as longs (as
// every caller passes them in registers, this forwards whatever the caller passed). On x86_64 the
// call is made here (RawSyscall), as libc's does it, errno set the same way: the library's own
// syscall() calls bind to this hook too, from signal handlers among others, where resolving the
// real function with dlsym could not be done.
IDLESCOPE_EXPORT long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long), a4 = va_arg(ap, long),
       a5 = va_arg(ap, long), a6 = va_arg(ap, long);
  va_end(ap);
  if (number == SYS_seccomp && (a1 == SECCOMP_SET_MODE_STRICT || a1 == SECCOMP_SET_MODE_FILTER)) {
    idlescope::internal::Detach();
  }
#if defined(__x86_64__)
  const long r = idlescope::RawSyscall(number, a1, a2, a3, a4, a5, a6);
  if (r < 0 && r > -4096) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return r;
#else
  SyscallFn real = g_real_syscall.Get();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return real(number, a1, a2, a3, a4, a5, a6);
#endif
}
