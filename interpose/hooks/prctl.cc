// prctl: a program (a sandbox, a record/replay tool) may disable the TSC for a thread with
// prctl(PR_SET_TSC, PR_TSC_SIGSEGV); RDTSC then faults there and in the threads it creates. The
// hooks' clock reads the TSC (io_clock.h), so it stops doing so before the real call.
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/prctl.h>

#include <atomic>

#include "interpose/hooks/io_clock.h"
#include "interpose/hooks/io_libc.h"

namespace {
using PrctlFn = int (*)(int, unsigned long, unsigned long, unsigned long, unsigned long);
constinit std::atomic<PrctlFn> g_real_prctl{nullptr};
}  // namespace

// glibc declares prctl(int, ...); the kernel takes four unsigned long arguments after the option.
IDLESCOPE_HOOK int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long),
                a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  if (option == PR_SET_TSC && a2 == PR_TSC_SIGSEGV) idlescope::io::StopReadingTsc();
  PrctlFn real = g_real_prctl.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = reinterpret_cast<PrctlFn>(dlsym(RTLD_NEXT, "prctl"));
    if (real == nullptr) {
      errno = ENOSYS;
      return -1;
    }
    g_real_prctl.store(real, std::memory_order_release);
  }
  return real(option, a2, a3, a4, a5);
}
