#include "interpose/hooks/io_clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <atomic>

#include "interpose/recorder.h"

namespace idlescope::io {
namespace {

// Refresh a thread's anchor this often (in ns): bounds the error of a tick->ns conversion by
// ratio error x this interval (~0.6 us right after load, ~ns once refined).
constexpr uint64_t kAnchorNs = 10'000'000;
// Refine the global ratio once this much time has passed since the calibration origin.
constexpr uint64_t kRefineNs = 100'000'000;

uint64_t g_origin_ns = 0;
uint64_t g_origin_ticks = 0;
std::atomic<uint64_t> g_refined_at{0};

struct Anchor {
  uint64_t ns = 0;
  uint64_t ticks = 0;
};
__thread Anchor t_anchor __attribute__((tls_model("initial-exec")));

#if defined(__x86_64__)
bool InvariantTsc() {
  unsigned a, b, c, d;
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) == 0 || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
}
#endif

// Sets the ratio from `ns` nanoseconds measured over `ticks` ticks.
void SetRatio(uint64_t ns, uint64_t ticks) {
  uint64_t q32 = static_cast<uint64_t>((static_cast<unsigned __int128>(ns) << 32) / ticks);
  detail::g_hot.ns_per_tick_q32.store(q32 == 0 ? 1 : q32, std::memory_order_relaxed);
}

__attribute__((constructor)) void CalibrateAtLoad() {
#if defined(__x86_64__)
  if (!InvariantTsc()) return;
  // ~200 us against CLOCK_MONOTONIC: good to ~1e-3 now, refined over 100 ms+ later.
  uint64_t ns0 = NowNs(), t0 = __rdtsc();
  uint64_t ns1 = ns0, t1 = t0;
  while (ns1 - ns0 < 200'000) {
    ns1 = NowNs();
    t1 = __rdtsc();
  }
  if (t1 <= t0) return;
  g_origin_ns = ns0;
  g_origin_ticks = t0;
  SetRatio(ns1 - ns0, t1 - t0);
  detail::g_hot.use_tsc = true;
#endif
}

void Reanchor(uint64_t ticks_now) {
  t_anchor.ns = NowNs();
  t_anchor.ticks = CallTicks();
  (void)ticks_now;
  uint64_t since = t_anchor.ns - g_origin_ns;
  uint64_t refined = g_refined_at.load(std::memory_order_relaxed);
  if (UseTsc() && since >= kRefineNs && since >= 2 * refined && t_anchor.ticks > g_origin_ticks) {
    // Longer baselines, better ratio; refining at doubling intervals keeps this rare.
    SetRatio(since, t_anchor.ticks - g_origin_ticks);
    g_refined_at.store(since, std::memory_order_relaxed);
  }
}

}  // namespace

uint64_t NowNsForClock() { return NowNs(); }

uint64_t NsToTicks(uint64_t ns) {
  if (!UseTsc()) return ns;
  uint64_t q32 = detail::g_hot.ns_per_tick_q32.load(std::memory_order_relaxed);
  uint64_t ticks = static_cast<uint64_t>((static_cast<unsigned __int128>(ns) << 32) / q32);
  return ticks == 0 && ns > 0 ? 1 : ticks;
}

uint64_t TicksToNs(uint64_t ticks) {
  if (!UseTsc()) return ticks;
  if (t_anchor.ns == 0 || ticks < t_anchor.ticks ||
      TickSpanNs(ticks - t_anchor.ticks) > kAnchorNs) {
    Reanchor(ticks);
  }
  // The reading was taken before or after the anchor: signed distance.
  if (ticks >= t_anchor.ticks) return t_anchor.ns + TickSpanNs(ticks - t_anchor.ticks);
  uint64_t back = TickSpanNs(t_anchor.ticks - ticks);
  return back < t_anchor.ns ? t_anchor.ns - back : 0;
}

}  // namespace idlescope::io
