// The call clock: how every family's hooks (file and network I/O, waits, CUDA) time a call, two
// readings per call, on the hottest path of the hooks. clock_gettime(CLOCK_MONOTONIC) costs ~60 ns
// in the vDSO on the build VMs (more right after a syscall), which alone made a 4 KB tmpfs write
// 10-20% slower; RDTSC costs ~20-30 ns. So calls are timed in TSC ticks, and RawEvents still get
// trace-clock nanoseconds: each thread keeps an anchor (NowNs, ticks) refreshed every 1 ms of
// ticks, and the ns-per-tick ratio is measured at the first conversion (against the reading taken
// at load) and refined against CLOCK_MONOTONIC as time goes by. This is the one conversion from
// call ticks to trace-clock time: the I/O, network and CUDA hooks all use TicksToNs/TicksToSpan.
// Without an invariant TSC (CPUID 0x80000007 EDX bit 8), off x86-64, or when the TSC is disabled
// for the process at load (PR_GET_TSC: PR_TSC_SIGSEGV, set by sandboxes and record/replay tools),
// ticks are NowNs().
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

// Its two words sit on the I/O hooks' hot page (io::detail::g_hot: clock, ns_per_tick_q32), which
// the burst hooks read on every call anyway (hooks/io_libc.h says why one page).
#include "interpose/hooks/io_libc.h"

namespace idlescope {

// What CallTicks reads (io::detail::g_hot.clock).
enum ClockSource : uint8_t {
  kClockNs = 0,         // ticks are NowNs()
  kClockTsc = 1,        // RDTSC
  kClockTscFromNs = 2,  // the TSC was disabled after load: estimated from NowNs()
};

inline ClockSource CallClockSource() {
  return static_cast<ClockSource>(io::detail::g_hot.clock.load(std::memory_order_relaxed));
}

// Whether call times are nanoseconds (else TSC ticks, read or estimated).
inline bool TicksAreNs() { return CallClockSource() == kClockNs; }

// Out of line: NowNs(), or the TSC estimated from it.
uint64_t TicksWithoutTsc();

inline uint64_t CallTicks() {
#if defined(__x86_64__)
  if (__builtin_expect(CallClockSource() == kClockTsc, 1)) return __rdtsc();
#endif
  return TicksWithoutTsc();
}

// The ns-per-tick ratio as Q32 fixed point; measured at the first call (out of line).
uint64_t MeasureRatio();
inline uint64_t RatioQ32() {
  uint64_t q32 = io::detail::g_hot.ns_per_tick_q32.load(std::memory_order_relaxed);
  return __builtin_expect(q32 != 0, 1) ? q32 : MeasureRatio();
}

// Length in ns of `ticks` ticks. Inline: a burst converts its accumulated ticks on every call.
// The ratio is ns per tick as Q32 fixed point (io::detail::g_hot.ns_per_tick_q32): one multiply.
inline uint64_t TickSpanNs(uint64_t ticks) {
  if (TicksAreNs()) return ticks;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * RatioQ32()) >> 32);
}

namespace detail {
// A thread's anchor: adjacent NowNs() and tick readings, and the ratio as it was then, used for
// readings up to `span` ticks after `ticks` (1 ms). A timestamp is then one integer multiply
// and an add (the CUDA hooks' budget is ~100 ns a call, docs/architecture.md); the error is the
// ratio's error times <= 1 ms (~1e-3 at the first measure, then refined), so host and CUPTI
// times (both CLOCK_MONOTONIC) agree to < 1 us.
struct TickAnchor {
  uint64_t ticks = 0;
  uint64_t ns = 0;
  uint64_t ns_per_tick_q32 = 0;  // 0: not anchored yet
  uint64_t span = 0;
};
// initial-exec: read at every converted call (see cuda/cudart.h, t_cuda_thread).
extern __thread TickAnchor t_tick_anchor __attribute__((tls_model("initial-exec")));
// Out of line: a new anchor for this thread, and the ratio refined now and then.
void Reanchor();

inline uint64_t AnchoredSpanNs(const TickAnchor& a, uint64_t ticks) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * a.ns_per_tick_q32) >> 32);
}
// The calling thread's anchor, valid for readings up to `latest` (one taken a moment ago). A
// reading before the anchor wraps the unsigned distance: it re-anchors too.
inline const TickAnchor& AnchorUpTo(uint64_t latest) {
  const TickAnchor& a = t_tick_anchor;
  if (__builtin_expect(a.ns_per_tick_q32 == 0 || latest - a.ticks > a.span, 0)) Reanchor();
  return a;
}
// Trace-clock ns of `ticks` from anchor `a`; the reading may precede the anchor (signed distance).
inline uint64_t AnchoredNs(const TickAnchor& a, uint64_t ticks) {
  if (ticks >= a.ticks) return a.ns + AnchoredSpanNs(a, ticks - a.ticks);
  const uint64_t back = AnchoredSpanNs(a, a.ticks - ticks);
  return back < a.ns ? a.ns - back : 0;
}
}  // namespace detail

// Trace-clock time of tick reading `ticks` taken on the calling thread (a moment ago).
inline uint64_t TicksToNs(uint64_t ticks) {
  return detail::AnchoredNs(detail::AnchorUpTo(ticks), ticks);
}

// Trace-clock ns of `t0` and the length in ns of [t0, t1]: two CallTicks() readings taken around a
// call on the calling thread (t0 <= t1), one anchor check for both.
inline void TicksToSpan(uint64_t t0, uint64_t t1, uint64_t* ts, uint64_t* dur) {
  const detail::TickAnchor& a = detail::AnchorUpTo(t1);
  *ts = detail::AnchoredNs(a, t0);
  *dur = t1 >= t0 ? detail::AnchoredSpanNs(a, t1 - t0) : 0;
}

// Ticks in `ns` nanoseconds (at least 1 for ns > 0): limits given in ns, compared with ticks.
uint64_t NsToTicks(uint64_t ns);

// The TSC is about to be disabled for the calling thread (prctl hook): no thread reads it again.
void StopReadingTsc();

}  // namespace idlescope
