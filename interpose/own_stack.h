// Running a function on a stack of ours: the thread's own may be small (a runtime's 64 KB
// threads) or nearly used up (a deep recursion), and what we run there (a flush: tens of KB; the
// handler of the signal that ends the process) must not overflow it where the bare program would
// not have (writer.cc, FlushHere; lifecycle.cc, the SIGTERM/SIGINT handler).
#pragma once

#include <sys/mman.h>

#include <cstddef>

namespace idlescope {

// A stack of `bytes` below a guard page (an overflow faults, never writes past it); its top, or
// null when it cannot be mapped. Async-signal-safe (mmap, mprotect).
inline char* MapOwnStack(size_t bytes) {
  constexpr size_t kGuard = 4096;
  void* p = mmap(nullptr, bytes + kGuard, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  mprotect(p, kGuard, PROT_NONE);
  return static_cast<char*>(p) + kGuard + bytes;
}

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// fn(arg) with the stack pointer at `top` (aligned down to 16), then back on the caller's stack.
// Not under the sanitizers, which keep track of each thread's stack (there fn runs in place).
__attribute__((noinline)) inline void CallOnStack(void (*fn)(void*), void* arg, char* top) {
  __asm__ volatile(
      "movq %%rsp, %%rbx\n\t"
      "movq %[top], %%rsp\n\t"
      "andq $-16, %%rsp\n\t"
      "movq %[arg], %%rdi\n\t"
      "callq *%[fn]\n\t"
      "movq %%rbx, %%rsp\n\t"
      :
      : [fn] "r"(fn), [arg] "r"(arg), [top] "r"(top)
      : "rbx", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2",
        "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
        "xmm14", "xmm15", "memory", "cc");
}
constexpr bool kCallsOnOwnStack = true;
#else
inline void CallOnStack(void (*fn)(void*), void* arg, char*) { fn(arg); }
constexpr bool kCallsOnOwnStack = false;
#endif

}  // namespace idlescope
