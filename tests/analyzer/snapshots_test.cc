// The checkpoint-snapshot stage on its own (analysis/snapshots.h): candidates of host threads go
// in, the copies a checkpoint write turns into its snapshot come out.
#include "analyzer/analysis/snapshots.h"

#include <gtest/gtest.h>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

Candidate OnThread(uint32_t tid, EventClass event_class, Cause cause, double start_ms,
                   double end_ms) {
  Candidate c;
  c.process = 0;
  c.tid = tid;
  c.event_class = event_class;
  c.cause = cause;
  c.when = {Ms(start_ms), Ms(end_ms)};
  return c;
}
Candidate CopyToHost(uint32_t tid, double start_ms, double end_ms) {
  Candidate c = OnThread(tid, EventClass::kCopyPageable, Cause::kHostGpuTransfer, start_ms, end_ms);
  c.d2h = true;
  c.pageable = true;
  return c;
}
Candidate Sync(uint32_t tid, double start_ms, double end_ms) {
  return OnThread(tid, EventClass::kSync, Cause::kSynchronization, start_ms, end_ms);
}
Candidate ModelWrite(uint32_t tid, double start_ms, double end_ms) {
  return OnThread(tid, EventClass::kCheckpointWrite, Cause::kCheckpointing, start_ms, end_ms);
}

TEST(SnapshotRuns, CopiesAndSyncsBeforeAModelWriteOfTheThreadAreItsSnapshot) {
  SnapshotRuns runs;
  std::vector<Interval> snapshot;
  EXPECT_FALSE(runs.Note(Sync(7, 0, 10), &snapshot));  // no run yet: a plain sync
  EXPECT_FALSE(runs.Note(CopyToHost(7, 100, 140), &snapshot));
  EXPECT_TRUE(runs.MayBecomeSnapshot(Sync(7, 140, 150)));
  EXPECT_FALSE(runs.Note(Sync(7, 140, 150), &snapshot));
  EXPECT_TRUE(runs.Note(ModelWrite(7, 150, 200), &snapshot));
  ASSERT_EQ(snapshot.size(), 2u);
  EXPECT_EQ(snapshot[0], (Interval{Ms(100), Ms(140)}));
  EXPECT_EQ(snapshot[1], (Interval{Ms(140), Ms(150)}));
  // The write ended the run.
  EXPECT_FALSE(runs.Note(ModelWrite(7, 200, 210), &snapshot));
  EXPECT_FALSE(runs.MayBecomeSnapshot(Sync(7, 210, 220)));
}

TEST(SnapshotRuns, NoSnapshotAfterALaunchOnAnotherThreadOrAfterTheWindow) {
  std::vector<Interval> snapshot;
  {
    SnapshotRuns runs;
    runs.Note(CopyToHost(7, 100, 140), &snapshot);
    runs.EndRun(0, 7);  // a kernel launch: the copy was the training loop's
    EXPECT_FALSE(runs.Note(ModelWrite(7, 150, 200), &snapshot));
  }
  {
    SnapshotRuns runs;
    runs.Note(CopyToHost(7, 100, 140), &snapshot);
    EXPECT_FALSE(runs.Note(ModelWrite(8, 150, 200), &snapshot));  // another thread writes
    EXPECT_TRUE(runs.Note(ModelWrite(7, 150, 200), &snapshot));
  }
  {
    SnapshotRuns runs;
    runs.Note(CopyToHost(7, 100, 140), &snapshot);
    EXPECT_FALSE(runs.Note(ModelWrite(7, 1141, 1200), &snapshot));  // 1.001 s later
  }
  {
    SnapshotRuns runs;
    runs.Note(CopyToHost(7, 100, 140), &snapshot);
    EXPECT_FALSE(runs.Note(ModelWrite(7, 120, 200), &snapshot));  // starts before the copy ends
  }
}

TEST(SnapshotRuns, ALateCopyStartsANewRunAndARunKeepsItsNewestCopies) {
  SnapshotRuns runs;
  std::vector<Interval> snapshot;
  runs.Note(CopyToHost(7, 0, 10), &snapshot);
  runs.Note(CopyToHost(7, 2000, 2010), &snapshot);  // more than 1 s after the first
  ASSERT_TRUE(runs.Note(ModelWrite(7, 2020, 2030), &snapshot));
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].start, Ms(2000));
  for (int i = 0; i < 100; ++i) runs.Note(CopyToHost(7, 3000 + i, 3000 + i + 0.5), &snapshot);
  ASSERT_TRUE(runs.Note(ModelWrite(7, 3200, 3210), &snapshot));
  ASSERT_EQ(snapshot.size(), kMaxSnapshotRun);
  EXPECT_EQ(snapshot.back().start, Ms(3099));
}

TEST(SnapshotRuns, WhatMayBecomeASnapshotAndWhatASnapshotIs) {
  SnapshotRuns runs;
  Candidate copy = CopyToHost(7, 100, 140);
  EXPECT_TRUE(runs.MayBecomeSnapshot(copy));
  Candidate gpu = copy;
  gpu.gpu_side = true;  // seen only on the GPU: not a thread's copy
  EXPECT_FALSE(runs.MayBecomeSnapshot(gpu));
  EXPECT_TRUE(IsSnapshotCopy(copy, 0, 7, copy.when));
  EXPECT_FALSE(IsSnapshotCopy(copy, 0, 8, copy.when));
  EXPECT_FALSE(IsSnapshotCopy(copy, 0, 7, {Ms(100), Ms(141)}));
  MakeSnapshot(copy);
  EXPECT_EQ(copy.cause, Cause::kCheckpointing);
  EXPECT_TRUE(copy.snapshot);
  EXPECT_FALSE(copy.pageable);
  EXPECT_FALSE(IsSnapshotCopy(copy, 0, 7, copy.when));  // already one
  EXPECT_FALSE(runs.MayBecomeSnapshot(copy));
}

}  // namespace
}  // namespace idlescope::testing
