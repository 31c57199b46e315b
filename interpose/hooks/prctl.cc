// prctl: a program (a sandbox, a record/replay tool) may disable the TSC for a thread with
// prctl(PR_SET_TSC, PR_TSC_SIGSEGV); RDTSC then faults there and in the threads it creates. The
// hooks' clock reads the TSC (interpose/call_clock.h), so it stops doing so before the real call.
#include <errno.h>
#include <stdarg.h>
#include <sys/prctl.h>

#include <atomic>

#include "interpose/call_clock.h"
#include "interpose/hooks/io_libc.h"
#include "interpose/real_symbol.h"
#include "interpose/recorder.h"

namespace {
using PrctlFn = int (*)(int, unsigned long, unsigned long, unsigned long, unsigned long);
constinit idlescope::RealFunction<PrctlFn> g_real_prctl{"prctl"};
}  // namespace

// glibc declares prctl(int, ...); the kernel takes four unsigned long arguments after the option.
IDLESCOPE_EXPORT int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long),
                a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  if (option == PR_SET_TSC && a2 == PR_TSC_SIGSEGV) idlescope::StopReadingTsc();
  PrctlFn real = g_real_prctl.Get();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return real(option, a2, a3, a4, a5);
}
