// The clock of burst-merged I/O calls (read/write/recv/send...): two readings per call, on the
// hottest path of the I/O hooks. clock_gettime(CLOCK_MONOTONIC) costs ~60 ns in the vDSO on the
// build VMs (more right after a syscall), which alone made a 4 KB tmpfs write 10-20% slower;
// RDTSC costs ~20-30 ns. So calls are timed in TSC ticks, and RawEvents still get trace-clock
// nanoseconds: each thread keeps an anchor (NowNs, ticks) refreshed every few ms, and the
// ns-per-tick ratio is calibrated at load and refined against CLOCK_MONOTONIC as time goes by.
// Without an invariant TSC (CPUID 0x80000007 EDX bit 8), or off x86-64, ticks are NowNs().
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace idlescope::io {

namespace detail {
extern bool g_use_tsc;
}  // namespace detail

uint64_t NowNsForClock();  // NowNs(), out of line (keeps recorder.h out of this header)

inline uint64_t CallTicks() {
#if defined(__x86_64__)
  if (detail::g_use_tsc) return __rdtsc();
#endif
  return NowNsForClock();
}

// Trace-clock time of tick reading `ticks` taken on the calling thread (a moment ago).
uint64_t TicksToNs(uint64_t ticks);
// Length in ns of `ticks` ticks.
uint64_t TickSpanNs(uint64_t ticks);

}  // namespace idlescope::io
