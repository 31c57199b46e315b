#include "interpose/call_clock.h"

#include <sys/prctl.h>

#if defined(__x86_64__) && __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#elif defined(__x86_64__)
#include <cpuid.h>
#endif

#include <atomic>

#include "interpose/recorder.h"

namespace idlescope {
namespace {

// Refresh a thread's anchor this often (in ns): bounds the error of a tick->ns conversion by
// ratio error x this interval (~1e-3 x 1 ms right after the first measure, less once refined).
constexpr uint64_t kAnchorNs = 1'000'000;
// The first ratio is measured over at least this long since load (waiting for the rest if the
// first conversion comes sooner): ~1e-3 given clock_gettime's ~50 ns jitter.
constexpr uint64_t kFirstMeasureNs = 50'000;
// Refine the ratio once this much time has passed since load, then at doubling intervals.
constexpr uint64_t kRefineNs = 1'000'000;

// The reading at load that every ratio is measured from. Written by the constructor, before any
// thread of the program can read a tick.
uint64_t g_origin_ns = 0;
uint64_t g_origin_ticks = 0;
std::atomic<uint64_t> g_refined_at{0};

#if defined(__x86_64__)
// CPUID 0x80000007 EDX bit 8. glibc (2.33+) read CPUID at startup and keeps the answer: CPUID
// itself traps to the hypervisor in a VM (12 us each on the build VMs, three of them at every
// process start before).
bool InvariantTsc() {
#if __has_include(<sys/platform/x86.h>)
  return CPU_FEATURE_PRESENT(INVARIANT_TSC);
#else
  unsigned a, b, c, d;
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) == 0 || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
#endif
}

// RDTSC faults in this thread (a sandbox or a record/replay tool disabled it before exec).
bool TscDisabled() {
  int state = 0;
  return prctl(PR_GET_TSC, &state, 0, 0, 0) == 0 && state == PR_TSC_SIGSEGV;
}
#endif

// Sets the ratio from `ns` nanoseconds measured over `ticks` ticks.
uint64_t SetRatio(uint64_t ns, uint64_t ticks) {
  uint64_t q32 = static_cast<uint64_t>((static_cast<unsigned __int128>(ns) << 32) / ticks);
  if (q32 == 0) q32 = 1;
  io::detail::g_hot.ns_per_tick_q32.store(q32, std::memory_order_relaxed);
  return q32;
}

// At load only the origin is read: measuring the ratio needs time between two readings, and a
// process that never converts a tick (most short ones) never waits for it (docs/architecture.md,
// "Process life": what a traced process costs at start).
__attribute__((constructor)) void ClockAtLoad() {
#if defined(__x86_64__)
  if (TscDisabled()) {
    detail::g_clock_by_syscall.store(true, std::memory_order_relaxed);
    return;
  }
  if (!InvariantTsc()) return;
  g_origin_ns = NowNs();
  g_origin_ticks = __rdtsc();
  io::detail::g_hot.clock.store(kClockTsc, std::memory_order_relaxed);
#endif
}

}  // namespace

namespace detail {

__thread TickAnchor t_tick_anchor __attribute__((tls_model("initial-exec")));

void Reanchor() {
  TickAnchor& a = t_tick_anchor;
  a.ticks = CallTicks();
  a.ns = TicksAreNs() ? a.ticks : NowNs();
  const uint64_t since = a.ns - g_origin_ns;
  const uint64_t refined = g_refined_at.load(std::memory_order_relaxed);
  // Longer baselines, better ratio; refining at doubling intervals keeps this rare. Not from
  // estimated ticks: they are made with the ratio.
  if (CallClockSource() == kClockTsc && since >= kRefineNs && since >= 2 * refined &&
      a.ticks > g_origin_ticks) {
    SetRatio(since, a.ticks - g_origin_ticks);
    g_refined_at.store(since, std::memory_order_relaxed);
  }
  a.ns_per_tick_q32 = TickSpanNs(uint64_t{1} << 32);
  if (a.ns_per_tick_q32 == 0) a.ns_per_tick_q32 = 1;
  a.span = (kAnchorNs << 32) / a.ns_per_tick_q32;
}

}  // namespace detail

uint64_t MeasureRatio() {
#if defined(__x86_64__)
  if (CallClockSource() == kClockTsc) {
    uint64_t ns = NowNs(), ticks = __rdtsc();
    while (ns - g_origin_ns < kFirstMeasureNs) {
      ns = NowNs();
      ticks = __rdtsc();
    }
    if (ticks > g_origin_ticks) return SetRatio(ns - g_origin_ns, ticks - g_origin_ticks);
  }
#endif
  return SetRatio(1, 1);  // 1 ns per tick: only reached without a TSC, where it is not used
}

uint64_t TicksWithoutTsc() {
  uint64_t now = NowNs();
  if (CallClockSource() != kClockTscFromNs) return now;
  // The TSC as it would read now: origin + elapsed ns / (ns per tick).
  return g_origin_ticks +
         static_cast<uint64_t>((static_cast<unsigned __int128>(now - g_origin_ns) << 32) /
                               RatioQ32());
}

void StopReadingTsc() {
  // clock_gettime's vDSO reads the TSC too (recorder.h, ReadClock).
  detail::g_clock_by_syscall.store(true, std::memory_order_relaxed);
  if (CallClockSource() != kClockTsc) return;
  RatioQ32();  // measured while this thread can still read the TSC
  io::detail::g_hot.clock.store(kClockTscFromNs, std::memory_order_relaxed);
}

uint64_t NsToTicks(uint64_t ns) {
  if (TicksAreNs()) return ns;
  uint64_t ticks = static_cast<uint64_t>((static_cast<unsigned __int128>(ns) << 32) / RatioQ32());
  return ticks == 0 && ns > 0 ? 1 : ticks;
}

}  // namespace idlescope
