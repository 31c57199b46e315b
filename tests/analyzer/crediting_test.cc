// The crediting stage on its own (analysis/crediting.h): slices and candidates go in; per-cause
// totals, the longest gaps, and what an observer sees come out. The observer's slices, with their
// corrections applied, add up to the totals: it sees everything the report counts.
#include "analyzer/analysis/crediting.h"

#include <gtest/gtest.h>

#include <array>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

Candidate Host(Cause cause, EventClass event_class, double start_ms, double end_ms,
               uint64_t bytes = 0) {
  Candidate c;
  c.cause = cause;
  c.event_class = event_class;
  c.when = {Ms(start_ms), Ms(end_ms)};
  c.process = 0;
  c.tid = 100;
  c.stack = 42;
  c.object = 5;
  c.bytes = bytes;
  return c;
}

Interval At(double start_ms, double end_ms) { return {Ms(start_ms), Ms(end_ms)}; }

// Per-cause totals as an observer would draw them.
class Totals : public SliceObserver {
 public:
  std::array<Ns, kCauseCount> ns{};
  int corrections = 0;
  void OnSlice(const CreditedSlice& s) override {
    ns[Index(s.cause)] += s.when.length();
    if (s.correction) {
      ns[Index(s.replaces)] -= s.when.length();
      ++corrections;
    }
  }
};

void ExpectObserverMatchesTotals(const Crediting& crediting, const Totals& observer) {
  for (int c = 0; c < kCauseCount; ++c) {
    EXPECT_EQ(observer.ns[c], crediting.totals(0)[c].ns) << InfoOf(static_cast<Cause>(c)).name;
  }
}

TEST(Crediting, SlicesGoToTheirCauseAndTheRestToTheGapsResidualCause) {
  Crediting crediting(10);
  Totals observer;
  crediting.SetObserver(&observer);
  crediting.AddDevice();
  Candidate write = Host(Cause::kCheckpointing, EventClass::kCheckpointWrite, 100, 140, 40 << 20);
  crediting.Credit(0, &write, At(100, 120), false);  // half of the write's time
  crediting.Credit(0, nullptr, At(120, 200), false);
  EXPECT_EQ(observer.ns[Index(Cause::kUnknown)], 0);  // residual waits for the gap's end
  crediting.CloseGap(0, At(100, 200), GapKind::kMiddle);
  const auto& totals = crediting.totals(0);
  EXPECT_EQ(totals[Index(Cause::kCheckpointing)].ns, Ms(20));
  EXPECT_DOUBLE_EQ(totals[Index(Cause::kCheckpointing)].bytes, 20 << 20);  // bytes pro rata
  EXPECT_EQ(totals[Index(Cause::kUnknown)].ns, Ms(80));
  ExpectObserverMatchesTotals(crediting, observer);
  ASSERT_EQ(crediting.top_gaps().size(), 1u);
  const ClosedGap& gap = crediting.top_gaps()[0];
  EXPECT_EQ(gap.cause_ns[Index(Cause::kCheckpointing)], Ms(20));
  EXPECT_FALSE(gap.has_main);  // 20 ms of evidence does not illustrate 80 ms unexplained

  crediting.Credit(0, nullptr, At(300, 310), false);
  crediting.CloseGap(0, At(300, 310), GapKind::kTail);
  crediting.Credit(0, nullptr, At(0, 5), false);
  crediting.CloseGap(0, At(0, 5), GapKind::kStartup);
  EXPECT_EQ(crediting.totals(0)[Index(Cause::kTail)].ns, Ms(10));
  EXPECT_EQ(crediting.totals(0)[Index(Cause::kStartup)].ns, Ms(5));
  ExpectObserverMatchesTotals(crediting, observer);
}

TEST(Crediting, ALauncherThatReadDataSpentTheRestOfTheGapPreprocessing) {
  Crediting crediting(10);
  crediting.AddDevice();
  Candidate read = Host(Cause::kDataLoading, EventClass::kReadLocal, 101, 102);
  crediting.Credit(0, nullptr, At(100, 101), false);
  crediting.Credit(0, &read, At(101, 102), false);
  crediting.Credit(0, nullptr, At(102, 200), false);
  crediting.NoteLauncherRead(0);
  crediting.CloseGap(0, At(100, 200), GapKind::kMiddle);
  const CauseTotals& loading = crediting.totals(0)[Index(Cause::kDataLoading)];
  EXPECT_EQ(loading.ns, Ms(100));
  EXPECT_EQ(loading.preprocess_ns, Ms(99));
  EXPECT_EQ(crediting.totals(0)[Index(Cause::kUnknown)].ns, 0);
}

TEST(Crediting, ALateEventTakesBackResidualTimeOpenOrClosed) {
  Crediting crediting(10);
  Totals observer;
  crediting.SetObserver(&observer);
  crediting.AddDevice();
  crediting.Credit(0, nullptr, At(100, 200), false);
  crediting.CloseGap(0, At(100, 200), GapKind::kMiddle);  // 100 ms unknown
  crediting.Credit(0, nullptr, At(300, 400), false);      // still open
  // A 250 ms write recorded when it returned: it covers [150, 200) and [300, 350).
  Candidate write = Host(Cause::kCheckpointing, EventClass::kCheckpointWrite, 150, 350);
  crediting.Reclaim(0, write, Ms(400), false);
  EXPECT_EQ(crediting.reclaimed_ns(), Ms(100));
  crediting.CloseGap(0, At(300, 400), GapKind::kMiddle);
  const auto& totals = crediting.totals(0);
  EXPECT_EQ(totals[Index(Cause::kCheckpointing)].ns, Ms(100));
  EXPECT_EQ(totals[Index(Cause::kUnknown)].ns, Ms(100));
  EXPECT_EQ(observer.corrections, 1);  // the closed slice was handed out before
  ExpectObserverMatchesTotals(crediting, observer);
  EXPECT_EQ(crediting.late_candidates(), 0u);
  Candidate ancient = Host(Cause::kCheckpointing, EventClass::kCheckpointWrite, 100, 110);
  crediting.Reclaim(0, ancient, kResidualHorizon + Ms(200), false);
  EXPECT_EQ(crediting.late_candidates(), 1u);
}

TEST(Crediting, ASnapshotCopyMovesItsCreditedSlicesToCheckpointing) {
  Crediting crediting(10);
  Totals observer;
  crediting.SetObserver(&observer);
  crediting.AddDevice();
  Candidate copy = Host(Cause::kHostGpuTransfer, EventClass::kCopyPageable, 100, 140, 1 << 20);
  copy.d2h = true;
  copy.pageable = true;
  crediting.Credit(0, &copy, At(100, 140), /*may_become_snapshot=*/true);
  crediting.Credit(0, nullptr, At(140, 150), false);
  crediting.CloseGap(0, At(100, 150), GapKind::kMiddle);
  EXPECT_EQ(crediting.totals(0)[Index(Cause::kHostGpuTransfer)].pageable_ns, Ms(40));
  crediting.ReclassifySnapshot(0, 0, 100, copy.when);
  const auto& totals = crediting.totals(0);
  EXPECT_EQ(totals[Index(Cause::kHostGpuTransfer)].ns, 0);
  EXPECT_EQ(totals[Index(Cause::kHostGpuTransfer)].pageable_ns, 0);
  EXPECT_EQ(totals[Index(Cause::kCheckpointing)].ns, Ms(40));
  EXPECT_EQ(totals[Index(Cause::kCheckpointing)].snapshot_ns, Ms(40));
  EXPECT_DOUBLE_EQ(totals[Index(Cause::kCheckpointing)].bytes, 0);  // copied, not written
  ExpectObserverMatchesTotals(crediting, observer);
  // Once moved, it is no longer remembered.
  crediting.ReclassifySnapshot(0, 0, 100, copy.when);
  EXPECT_EQ(crediting.totals(0)[Index(Cause::kCheckpointing)].ns, Ms(40));
  // A credit not remembered (not a possible snapshot) does not move.
  Candidate other = copy;
  other.when = At(200, 210);
  crediting.Credit(0, &other, At(200, 210), false);
  crediting.ReclassifySnapshot(0, 0, 100, other.when);
  EXPECT_EQ(crediting.totals(0)[Index(Cause::kHostGpuTransfer)].ns, Ms(10));
}

TEST(Crediting, KeepsTheLongestGapsAndTheirMainEvent) {
  Crediting crediting(2);
  crediting.AddDevice();
  for (int i = 1; i <= 4; ++i) {
    Candidate read = Host(Cause::kDataLoading, EventClass::kReadLocal, 1000 * i, 1000 * i + 10 * i);
    crediting.Credit(0, &read, At(1000 * i, 1000 * i + 10 * i), false);
    crediting.CloseGap(0, At(1000 * i, 1000 * i + 10 * i), GapKind::kMiddle);
  }
  ASSERT_EQ(crediting.top_gaps().size(), 2u);
  for (const ClosedGap& g : crediting.top_gaps()) {
    EXPECT_GE(g.gap.length(), Ms(30));
    EXPECT_TRUE(g.has_main);
    EXPECT_EQ(g.main.cause, Cause::kDataLoading);
  }
}

}  // namespace
}  // namespace idlescope::testing

namespace idlescope::testing {
namespace {

// Through the whole analysis: what an observer (a timeline exporter) sees adds up, per device
// and cause, to the report's idle time of the attributed gaps, late events and snapshot copies
// included.
TEST(Crediting, AnObserverOfAJobSeesEveryAttributedSlice) {
  Totals observer;
  JobBuilder job(AnalysisOptions{.advance_quantum = 1});
  job.analysis().SetSliceObserver(&observer);
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80ull << 30, 132);
  job.Launch(p, 100, 0);
  job.Kernel(p, 0, 100);
  job.Kernel(p, 200, 300);
  job.Kernel(p, 400, 1000);
  job.analysis().AdvanceTo(Ms(1000));  // both gaps attributed: all residual so far
  // Recorded late: a write covering part of the first gap, and a snapshot copy + write in the
  // second.
  job.Io(p, 100, FILE_WRITE, 120, 160, "/runs/metrics.csv");
  job.CopyToHost(p, 100, 300, 340);
  job.Io(p, 100, FILE_WRITE, 340, 380, "/ckpt/model.pt");
  job.End(p, 1000);
  JobReport r = job.Finish();
  ASSERT_EQ(r.devices.size(), 1u);
  for (int c = 0; c < kCauseCount; ++c) {
    Ns want = r.devices[0].cause_ns[c];
    if (static_cast<Cause>(c) == Cause::kLaunchBound) want -= r.devices[0].short_gap_ns;
    EXPECT_EQ(observer.ns[c], want) << InfoOf(static_cast<Cause>(c)).name;
  }
  EXPECT_EQ(observer.ns[Index(Cause::kIntermediateUpload)], Ms(40));
  EXPECT_EQ(observer.ns[Index(Cause::kCheckpointing)], Ms(80));
  EXPECT_GT(observer.corrections, 0);
}

}  // namespace
}  // namespace idlescope::testing
