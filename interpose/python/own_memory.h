// Reads of this process's memory that never fault: process_vm_readv(2) on our own pid. The kernel
// copies what is mapped and stops at the first byte that is not (EFAULT, or a short count), where
// a plain load would take SIGSEGV. For the sampler's reads of another thread's Python frames
// (pystacks.h, ReadThreadFrames): that thread runs while we read, so a frame may be popped and
// its memory reused or unmapped under us. A process may always read itself (the kernel's ptrace
// access check passes for its own thread group, whatever Yama says); a seccomp filter may still
// refuse the call (EPERM, ENOSYS): then nothing is read.
#pragma once

#include <sys/syscall.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "interpose/raw_syscall.h"

namespace idlescope::python {

// Reads `size` bytes at `addr` of process `pid` (ours) into `out`; true only when all were read.
inline bool ReadOwnMemory(int pid, uintptr_t addr, void* out, size_t size) {
  if (addr == 0) return false;
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(addr), size};
  return RawSyscall(SYS_process_vm_readv, pid, reinterpret_cast<long>(&local), 1,
                    reinterpret_cast<long>(&remote), 1, 0) == static_cast<long>(size);
}

// Two ranges in one system call: the first one's bytes, then the second's. Returns how many of the
// two were read whole, in order (0, 1 or 2): the kernel stops at the first range it cannot read.
inline int ReadOwnMemory2(int pid, uintptr_t a, void* out_a, size_t size_a, uintptr_t b,
                          void* out_b, size_t size_b) {
  if (a == 0) return 0;
  iovec local[2] = {{out_a, size_a}, {out_b, size_b}};
  iovec remote[2] = {{reinterpret_cast<void*>(a), size_a}, {reinterpret_cast<void*>(b), size_b}};
  const int ranges = b != 0 ? 2 : 1;
  const long n = RawSyscall(SYS_process_vm_readv, pid, reinterpret_cast<long>(local), ranges,
                            reinterpret_cast<long>(remote), ranges, 0);
  if (n < static_cast<long>(size_a)) return 0;
  return ranges == 2 && n == static_cast<long>(size_a + size_b) ? 2 : 1;
}

}  // namespace idlescope::python
