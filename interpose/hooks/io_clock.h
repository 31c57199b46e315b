// The clock of burst-merged I/O calls (read/write/recv/send...): two readings per call, on the
// hottest path of the I/O hooks. clock_gettime(CLOCK_MONOTONIC) costs ~60 ns in the vDSO on the
// build VMs (more right after a syscall), which alone made a 4 KB tmpfs write 10-20% slower;
// RDTSC costs ~20-30 ns. So calls are timed in TSC ticks, and RawEvents still get trace-clock
// nanoseconds: each thread keeps an anchor (NowNs, ticks) refreshed every few ms, and the
// ns-per-tick ratio is calibrated at load and refined against CLOCK_MONOTONIC as time goes by.
// Without an invariant TSC (CPUID 0x80000007 EDX bit 8), or off x86-64, ticks are NowNs().
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "interpose/hooks/io_libc.h"  // detail::g_hot: use_tsc, ns_per_tick_q32

namespace idlescope::io {

uint64_t NowNsForClock();  // NowNs(), out of line (keeps recorder.h out of this header)

// Whether call times are TSC ticks (else they are NowNs()).
inline bool UseTsc() { return detail::g_hot.use_tsc; }

inline uint64_t CallTicks() {
#if defined(__x86_64__)
  if (UseTsc()) return __rdtsc();
#endif
  return NowNsForClock();
}

// Trace-clock time of tick reading `ticks` taken on the calling thread (a moment ago).
uint64_t TicksToNs(uint64_t ticks);

// Length in ns of `ticks` ticks. Inline: a burst converts its accumulated ticks on every call.
// The ratio is ns per tick as Q32 fixed point (detail::g_hot.ns_per_tick_q32): one multiply.
inline uint64_t TickSpanNs(uint64_t ticks) {
  if (!UseTsc()) return ticks;
  uint64_t q32 = detail::g_hot.ns_per_tick_q32.load(std::memory_order_relaxed);
  return static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * q32) >> 32);
}

// Ticks in `ns` nanoseconds (at least 1 for ns > 0): limits given in ns, compared with ticks.
uint64_t NsToTicks(uint64_t ns);

}  // namespace idlescope::io
