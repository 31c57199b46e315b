// The timeline and gap stages alone: IntervalUnion, DeviceTimeline, and Done-when 3 (device idle
// is the union over streams, never the sum of per-stream gaps).
#include "analyzer/analysis/timeline.h"

#include <gtest/gtest.h>

#include <random>

#include "analyzer/analysis/interval_union.h"
#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

std::vector<Interval> SealAll(IntervalUnion& u, Ns until) {
  std::vector<Interval> out;
  u.Seal(until, [&](const Interval& iv) { out.push_back(iv); });
  return out;
}

TEST(IntervalUnion, MergesOverlappingAndTouchingOutOfOrder) {
  IntervalUnion u;
  u.Add(50, 60);
  u.Add(10, 20);
  u.Add(20, 30);  // touches [10, 20)
  u.Add(55, 70);
  u.Add(0, 5);
  u.Add(25, 52);  // bridges [10, 30) and [50, 70)
  EXPECT_EQ(SealAll(u, 100), (std::vector<Interval>{{0, 5}, {10, 70}}));
}

TEST(IntervalUnion, SealSplitsAndCountsLateRecords) {
  IntervalUnion u;
  u.Add(0, 100);
  EXPECT_EQ(SealAll(u, 40), (std::vector<Interval>{{0, 40}}));
  u.Add(10, 50);  // [10, 40) is already sealed: late
  EXPECT_EQ(u.late_records(), 1u);
  EXPECT_EQ(u.late_ns(), 30);
  EXPECT_EQ(SealAll(u, 200), (std::vector<Interval>{{40, 100}}));
}

TEST(IntervalUnion, MatchesBruteForceOnRandomInput) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    IntervalUnion u;
    std::vector<bool> covered(2000, false);
    for (int i = 0; i < 300; ++i) {
      Ns s = rng() % 1900;
      Ns e = s + 1 + rng() % 50;
      u.Add(s, e);
      for (Ns t = s; t < e; ++t) covered[t] = true;
    }
    Ns sealed = 0;
    for (Ns until : {500, 1000, 3000}) {
      for (const Interval& iv : SealAll(u, until)) {
        for (Ns t = iv.start; t < iv.end; ++t) {
          EXPECT_TRUE(covered[t]);
          covered[t] = false;
        }
        EXPECT_GE(iv.start, sealed);
        sealed = iv.end;
      }
    }
    for (bool c : covered) EXPECT_FALSE(c);
  }
}

TEST(DeviceTimeline, GapsIncludeStartupAndTail) {
  DeviceTimeline t(0, /*job_start=*/0, /*min_gap=*/10);
  GpuRecord k;
  k.kind = GPU_KERNEL;
  k.start = 100;
  k.end = 200;
  t.AddActivity(k);
  k.start = 300;
  k.end = 400;
  t.AddActivity(k);
  k.start = 405;  // a 5 ns gap: short
  k.end = 500;
  t.AddActivity(k);
  std::vector<GapEvent> events;
  t.Finish(1000, &events);
  std::vector<std::pair<Interval, GapKind>> closed;
  Ns pieces = 0;
  for (const GapEvent& e : events) {
    if (e.type == GapEvent::kClose) closed.push_back({e.gap, e.kind});
    if (e.type == GapEvent::kPiece) pieces += e.piece.length();
  }
  ASSERT_EQ(closed.size(), 3u);
  EXPECT_EQ(closed[0], (std::pair<Interval, GapKind>{{0, 100}, GapKind::kStartup}));
  EXPECT_EQ(closed[1], (std::pair<Interval, GapKind>{{200, 300}, GapKind::kMiddle}));
  EXPECT_EQ(closed[2], (std::pair<Interval, GapKind>{{500, 1000}, GapKind::kTail}));
  EXPECT_EQ(pieces, 100 + 100 + 500);
  EXPECT_EQ(t.short_gap_ns(), 5);
  EXPECT_EQ(t.compute_ns(), 295);
}

TEST(DeviceTimeline, LongOpenGapIsHandedOutInPieces) {
  DeviceTimeline t(0, 0, 10);
  GpuRecord k;
  k.kind = GPU_KERNEL;
  k.start = 0;
  k.end = 100;
  t.AddActivity(k);
  std::vector<GapEvent> events;
  t.Advance(150, &events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, GapEvent::kPiece);
  EXPECT_EQ(events[0].piece, (Interval{100, 150}));
  EXPECT_EQ(t.attributed_until(), 150);
  k.start = 400;
  k.end = 500;
  t.AddActivity(k);
  events.clear();
  t.Advance(450, &events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].piece, (Interval{150, 400}));
  EXPECT_EQ(events[1].type, GapEvent::kClose);
  EXPECT_EQ(events[1].gap, (Interval{100, 400}));
}

TEST(DeviceTimeline, NcclAndCopiesAreBandsNotCompute) {
  DeviceTimeline t(0, 0, 10);
  GpuRecord r;
  r.kind = GPU_KERNEL;
  r.start = 0;
  r.end = 100;
  t.AddActivity(r);
  r.nccl = true;
  r.start = 50;
  r.end = 300;
  t.AddActivity(r);
  r.nccl = false;
  r.kind = GPU_MEMCPY;
  r.start = 300;
  r.end = 400;
  t.AddActivity(r);
  std::vector<GapEvent> events;
  t.Finish(1000, &events);
  EXPECT_EQ(t.compute_ns(), 100);
  EXPECT_EQ(t.comm_ns(), 250);
  EXPECT_EQ(t.transfer_ns(), 100);
  EXPECT_EQ(t.any_kernel_ns(), 300);
}

// "any" (every kernel, NCCL included) is the union of the compute and comm bands, found as both
// are sealed: against a brute-force union, sealed at random times.
TEST(DeviceTimeline, AnyKernelTimeIsTheUnionOfComputeAndCommAcrossSeals) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 50; ++round) {
    DeviceTimeline t(0, 0, 1'000'000);
    std::vector<bool> busy(20000, false);
    std::vector<GapEvent> events;
    Ns at = 0;
    for (int i = 0; i < 200; ++i) {
      GpuRecord r;
      r.kind = GPU_KERNEL;
      r.nccl = rng() % 3 == 0;
      r.start = at + static_cast<Ns>(rng() % 60);
      r.end = r.start + 1 + static_cast<Ns>(rng() % 120);
      at += static_cast<Ns>(rng() % 80);
      for (Ns x = r.start; x < r.end; ++x) busy[static_cast<size_t>(x)] = true;
      t.AddActivity(r);
      if (rng() % 8 == 0) t.Advance(at - 200, &events);  // records stay >= the sealed time
    }
    t.Finish(20000, &events);
    Ns expected = 0;
    for (bool b : busy) expected += b;
    ASSERT_EQ(t.any_kernel_ns(), expected) << "round " << round;
  }
}

// Done-when 3: two streams, each idle for 2 x 100 ms, concurrently: the device is idle 200 ms,
// not the 400 ms the per-stream gaps add up to.
TEST(DeviceIdle, TwoStreamsReportTheDeviceGapNotTheSumOfStreamGaps) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a");
  job.Launch(p, 100, 0);
  for (uint32_t stream : {13u, 14u}) {
    job.Kernel(p, 0, 300, 0, false, stream);
    job.Kernel(p, 400, 700, 0, false, stream);
    job.Kernel(p, 800, 1000, 0, false, stream);
  }
  // Partly overlapping kernels on a third stream do not hide the gaps either.
  job.Kernel(p, 250, 300, 0, false, 15);
  job.End(p, 1000);
  JobReport r = job.Finish();
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].idle_ns, Ms(200));
  EXPECT_EQ(r.idle_ns, Ms(200));
  EXPECT_EQ(r.devices[0].long_gaps, 2u);
  EXPECT_DOUBLE_EQ(r.compute_util, 0.8);
}

// A long job fed in time order with the window moving on: the candidates held stay bounded.
TEST(StreamingAnalysis, CandidatesHeldStayBounded) {
  JobBuilder job(AnalysisOptions{.min_gap = Ms(1), .advance_quantum = Ms(10)});
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a");
  job.Launch(p, 100, 0);
  for (int step = 0; step < 20000; ++step) {
    double t = step * 10.0;
    job.Io(p, 100, FILE_READ, t, t + 2, "/data/x");  // 2 ms of loading per 10 ms step
    job.Kernel(p, t + 2, t + 10);
    job.analysis().AdvanceTo(Ms(t) - Ms(100));
  }
  job.End(p, 200000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(2) * 20000);
  EXPECT_LT(job.analysis().peak_pending_candidates(), 3000u);
}

}  // namespace
}  // namespace idlescope::testing

namespace idlescope::testing {
namespace {

// A long blocking call is recorded when it returns: its event arrives after the analysis window
// has moved past its start, and takes back the idle time attributed as residual meanwhile.
TEST(StreamingAnalysis, LateLongCallTakesBackResidualIdle) {
  JobBuilder job(AnalysisOptions{.min_gap = Ms(1), .advance_quantum = Ms(1)});
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a");
  job.Launch(p, 100, 0);
  job.Kernel(p, 0, 100);
  // A helper thread reads a little in the middle of the gap (arrives in time).
  job.Io(p, 555, FILE_READ, 1000, 1100, "/data/x");
  job.analysis().AdvanceTo(Ms(5000));  // the gap is attributed up to 5 s: mostly residual
  // The launcher's 10 s checkpoint write, recorded when it returned.
  job.Io(p, 100, FILE_WRITE, 100, 10100, "/ckpt/model.pt");
  job.Kernel(p, 10100, 10200);
  job.End(p, 10200);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(10000) - Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));  // not taken back: it had an owner
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  Ns sum = 0;
  for (Ns ns : r.devices[0].cause_ns) sum += ns;
  EXPECT_EQ(sum + r.devices[0].compute_ns, r.span);
}

TEST(StreamingAnalysis, LateCallAfterGapClosedMovesClosedResidual) {
  JobBuilder job(AnalysisOptions{.min_gap = Ms(1), .advance_quantum = Ms(1)});
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a");
  job.Launch(p, 100, 0);
  job.Kernel(p, 0, 100);
  job.Kernel(p, 300, 400);
  job.analysis().AdvanceTo(Ms(350));  // gap [100, 300) closed as unknown
  job.Sync(p, 100, 150, 250);
  job.End(p, 400);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
}

// The snapshot copy was attributed (to host_gpu_transfer) before its checkpoint write arrived:
// its credited time moves to checkpointing, in the open gap and in a closed one.
TEST(StreamingAnalysis, LateCheckpointWriteTakesItsSnapshotCopyFromTransfer) {
  for (bool gap_closed : {false, true}) {
    JobBuilder job(AnalysisOptions{.min_gap = Ms(1), .advance_quantum = Ms(1)});
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a");
    job.Launch(p, 100, 0);
    job.Kernel(p, 0, 100);
    job.CopyToHost(p, 100, 100, 300);
    if (gap_closed) job.Kernel(p, 5000, 5100);
    job.analysis().AdvanceTo(Ms(4000));
    // The write of 4.7 s, recorded when it returned.
    job.Io(p, 100, FILE_WRITE, 300, 5000, "/ckpt/model.pt");
    if (!gap_closed) job.Kernel(p, 5000, 5100);
    job.End(p, 5100);
    JobReport r = job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), 0) << gap_closed;
    EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(4900)) << gap_closed;
    EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0) << gap_closed;
    Ns sum = 0;
    for (Ns ns : r.devices[0].cause_ns) sum += ns;
    EXPECT_EQ(sum + r.devices[0].compute_ns, r.span);
    if (!gap_closed) {  // the open gap's split moves too; a closed one keeps its first split
      ASSERT_FALSE(r.top_gaps.empty());
      ASSERT_FALSE(r.top_gaps[0].causes.empty());
      EXPECT_EQ(r.top_gaps[0].causes[0].first, Cause::kCheckpointing);
      EXPECT_EQ(r.top_gaps[0].causes[0].second, Ms(4900));
    }
  }
}

}  // namespace
}  // namespace idlescope::testing
