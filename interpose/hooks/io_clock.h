// The clock of burst-merged I/O calls (read/write/recv/send...) and of the CUDA hooks: two readings
// per call, on the hottest path of the hooks. clock_gettime(CLOCK_MONOTONIC) costs ~60 ns in the
// vDSO on the build VMs (more right after a syscall), which alone made a 4 KB tmpfs write 10-20%
// slower; RDTSC costs ~20-30 ns. So calls are timed in TSC ticks, and RawEvents still get
// trace-clock nanoseconds: each thread keeps an anchor (NowNs, ticks) refreshed every few ms, and
// the ns-per-tick ratio is measured at the first conversion (against the reading taken at load)
// and refined against CLOCK_MONOTONIC as time goes by. Without an invariant TSC (CPUID 0x80000007
// EDX bit 8), off x86-64, or when the TSC is disabled for the process at load (PR_GET_TSC:
// PR_TSC_SIGSEGV, set by sandboxes and record/replay tools), ticks are NowNs().
//
// A program may disable the TSC later (prctl(PR_SET_TSC, PR_TSC_SIGSEGV) makes RDTSC fault in the
// calling thread and the threads it creates): the prctl hook calls StopReadingTsc first, and from
// then on every thread estimates TSC values from CLOCK_MONOTONIC with the calibrated ratio, so
// readings already taken (an open burst, a call in progress on another thread) keep their unit.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "interpose/hooks/io_libc.h"  // detail::g_hot: clock, ns_per_tick_q32

namespace idlescope::io {

// What CallTicks reads (detail::g_hot.clock).
enum ClockSource : uint8_t {
  kClockNs = 0,         // ticks are NowNs()
  kClockTsc = 1,        // RDTSC
  kClockTscFromNs = 2,  // the TSC was disabled after load: estimated from NowNs()
};

inline ClockSource Source() {
  return static_cast<ClockSource>(detail::g_hot.clock.load(std::memory_order_relaxed));
}

// Whether call times are nanoseconds (else TSC ticks, read or estimated).
inline bool TicksAreNs() { return Source() == kClockNs; }

// Out of line: NowNs(), or the TSC estimated from it.
uint64_t TicksWithoutTsc();

inline uint64_t CallTicks() {
#if defined(__x86_64__)
  if (__builtin_expect(Source() == kClockTsc, 1)) return __rdtsc();
#endif
  return TicksWithoutTsc();
}

// The ns-per-tick ratio as Q32 fixed point; measured at the first call (out of line).
uint64_t MeasureRatio();
inline uint64_t RatioQ32() {
  uint64_t q32 = detail::g_hot.ns_per_tick_q32.load(std::memory_order_relaxed);
  return __builtin_expect(q32 != 0, 1) ? q32 : MeasureRatio();
}

// Trace-clock time of tick reading `ticks` taken on the calling thread (a moment ago).
uint64_t TicksToNs(uint64_t ticks);

// Length in ns of `ticks` ticks. Inline: a burst converts its accumulated ticks on every call.
// The ratio is ns per tick as Q32 fixed point (detail::g_hot.ns_per_tick_q32): one multiply.
inline uint64_t TickSpanNs(uint64_t ticks) {
  if (TicksAreNs()) return ticks;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * RatioQ32()) >> 32);
}

// Ticks in `ns` nanoseconds (at least 1 for ns > 0): limits given in ns, compared with ticks.
uint64_t NsToTicks(uint64_t ns);

// The TSC is about to be disabled for the calling thread (prctl hook): no thread reads it again.
void StopReadingTsc();

}  // namespace idlescope::io
