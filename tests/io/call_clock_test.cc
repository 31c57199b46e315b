#include "interpose/call_clock.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

#include "interpose/recorder.h"

namespace idlescope {
namespace {

void SleepNs(long ns) {
  timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

TEST(CallClock, TicksConvertToTheTraceClock) {
  // Loose bounds: the machine may be loaded; what matters is that tick times land on
  // CLOCK_MONOTONIC and spans are not off by a factor.
  for (int i = 0; i < 50; ++i) {
    uint64_t before = NowNs();
    uint64_t ticks = CallTicks();
    uint64_t after = NowNs();
    uint64_t at = TicksToNs(ticks);
    EXPECT_GE(at + 50'000, before);
    EXPECT_LE(at, after + 50'000);
  }
}

TEST(CallClock, SpansMatchElapsedTime) {
  uint64_t ns0 = NowNs();
  uint64_t t0 = CallTicks();
  SleepNs(20'000'000);
  uint64_t t1 = CallTicks();
  uint64_t ns1 = NowNs();
  double span = static_cast<double>(TickSpanNs(t1 - t0));
  double real = static_cast<double>(ns1 - ns0);
  EXPECT_GT(span, real * 0.9);
  EXPECT_LT(span, real * 1.1);
}

TEST(CallClock, LaterReadingsAreLaterTimes) {
  uint64_t prev = TicksToNs(CallTicks());
  for (int i = 0; i < 1000; ++i) {
    uint64_t now = TicksToNs(CallTicks());
    EXPECT_GE(now + 2000, prev);  // anchors may move by the calibration error, never far
    prev = now;
  }
}

// The CUDA hooks' form (two readings around a call, one anchor check): the same times as
// TicksToNs and TickSpanNs give for each reading, within the calibration error.
TEST(CallClock, SpanOfACallMatchesItsReadings) {
  uint64_t before = NowNs();
  uint64_t t0 = CallTicks();
  SleepNs(2'000'000);  // longer than an anchor's 1 ms: t1 re-anchors, t0 precedes the anchor
  uint64_t t1 = CallTicks();
  uint64_t after = NowNs();
  uint64_t ts = 0, dur = 0;
  TicksToSpan(t0, t1, &ts, &dur);
  EXPECT_GE(ts + 50'000, before);
  EXPECT_LE(ts + dur, after + 50'000);
  EXPECT_NEAR(static_cast<double>(ts), static_cast<double>(TicksToNs(t0)), 5'000);
  EXPECT_NEAR(static_cast<double>(dur), static_cast<double>(TickSpanNs(t1 - t0)), 5'000);
  TicksToSpan(t1, t0, &ts, &dur);
  EXPECT_EQ(dur, 0u);  // t1 > t0 swapped: no negative length
}

// The program disables the TSC (prctl(PR_SET_TSC, PR_TSC_SIGSEGV), after StopReadingTsc as the
// prctl hook does): RDTSC, and clock_gettime's vDSO, would fault from then on. Readings go on in
// the same unit: a span across the switch is still right. In a child: the switch is for good.
TEST(CallClock, TicksKeepTheirUnitWhenTheTscIsDisabled) {
  EXPECT_EXIT(
      {
        uint64_t ns0 = NowNs();
        uint64_t t0 = CallTicks();
        SleepNs(20'000'000);
        StopReadingTsc();
        prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
        uint64_t t1 = CallTicks();
        uint64_t ns1 = NowNs();
        double span = static_cast<double>(TickSpanNs(t1 - t0));
        double real = static_cast<double>(ns1 - ns0);
        uint64_t at = TicksToNs(CallTicks());
        bool ok =
            span > real * 0.9 && span < real * 1.1 && at + 50'000 >= ns1 && at <= NowNs() + 50'000;
        _exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace idlescope
