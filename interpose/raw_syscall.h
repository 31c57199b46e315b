// The kernel's call made inline, with nothing instrumented on the way. For the hooks that
// ThreadSanitizer's runtime reaches while it initialises, before any instrumented function may
// run (its allocator maps anonymous memory through mmap, which is a hook of ours): such a hook is
// no_sanitize("thread") and, on the path the runtime takes, calls only this.
#ifndef IDLESCOPE_INTERPOSE_RAW_SYSCALL_H_
#define IDLESCOPE_INTERPOSE_RAW_SYSCALL_H_

#include <unistd.h>

namespace idlescope {

// The system call `n` with up to six arguments: its result, or -errno (errno is not touched).
__attribute__((always_inline, no_sanitize("thread"))) inline long RawSyscall(
    long n, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0, long a6 = 0) {
#if defined(__x86_64__)
  long r;
  register long r10 __asm__("r10") = a4;
  register long r8 __asm__("r8") = a5;
  register long r9 __asm__("r9") = a6;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "0"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return r;
#else
  // Elsewhere libc's syscall().
  long r = syscall(n, a1, a2, a3, a4, a5, a6);
  return r == -1 ? -static_cast<long>(*__errno_location()) : r;
#endif
}

}  // namespace idlescope

#endif  // IDLESCOPE_INTERPOSE_RAW_SYSCALL_H_
