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
Candidate ModelWrite(uint32_t tid, double start_ms, double end_ms, uint64_t bytes = 1 << 20) {
  Candidate c =
      OnThread(tid, EventClass::kCheckpointWrite, Cause::kCheckpointing, start_ms, end_ms);
  c.bytes = bytes;
  return c;
}
Candidate BigCopyToHost(uint32_t tid, double start_ms, double end_ms, uint64_t bytes) {
  Candidate c = CopyToHost(tid, start_ms, end_ms);
  c.bytes = bytes;
  return c;
}

TEST(SnapshotRuns, CopiesAndSyncsBeforeAModelWriteOfTheThreadAreItsSnapshot) {
  SnapshotRuns runs;
  std::vector<Interval> snapshot;
  uint32_t tid = 0;
  EXPECT_FALSE(runs.Note(Sync(7, 0, 10), &snapshot, &tid));  // no run yet: a plain sync
  EXPECT_FALSE(runs.Note(CopyToHost(7, 100, 140), &snapshot, &tid));
  EXPECT_TRUE(runs.MayBecomeSnapshot(Sync(7, 140, 150)));
  EXPECT_FALSE(runs.Note(Sync(7, 140, 150), &snapshot, &tid));
  EXPECT_TRUE(runs.Note(ModelWrite(7, 150, 200), &snapshot, &tid));
  ASSERT_EQ(snapshot.size(), 2u);
  EXPECT_EQ(snapshot[0], (Interval{Ms(100), Ms(140)}));
  EXPECT_EQ(snapshot[1], (Interval{Ms(140), Ms(150)}));
  // The write ended the run.
  EXPECT_FALSE(runs.Note(ModelWrite(7, 200, 210), &snapshot, &tid));
  EXPECT_FALSE(runs.MayBecomeSnapshot(Sync(7, 210, 220)));
}

TEST(SnapshotRuns, NoSnapshotAfterALaunchOnAnotherThreadOrAfterTheWindow) {
  std::vector<Interval> snapshot;
  uint32_t tid = 0;
  {
    SnapshotRuns runs;
    runs.Note(CopyToHost(7, 100, 140), &snapshot, &tid);
    runs.EndRun(0, 7, &snapshot);  // a kernel launch: the copy was the training loop's
    EXPECT_FALSE(runs.Note(ModelWrite(7, 150, 200), &snapshot, &tid));
  }
  {
    SnapshotRuns runs;
    runs.Note(CopyToHost(7, 100, 140), &snapshot, &tid);
    EXPECT_FALSE(runs.Note(ModelWrite(8, 150, 200), &snapshot, &tid));  // another thread writes
    EXPECT_TRUE(runs.Note(ModelWrite(7, 150, 200), &snapshot, &tid));
  }
  {
    SnapshotRuns runs;
    runs.Note(CopyToHost(7, 100, 140), &snapshot, &tid);
    EXPECT_FALSE(runs.Note(ModelWrite(7, 1141, 1200), &snapshot, &tid));  // 1.001 s later
  }
  {
    SnapshotRuns runs;
    runs.Note(CopyToHost(7, 100, 140), &snapshot, &tid);
    EXPECT_FALSE(
        runs.Note(ModelWrite(7, 120, 200), &snapshot, &tid));  // starts before the copy ends
  }
}

TEST(SnapshotRuns, ALateCopyStartsANewRunAndARunKeepsItsNewestCopies) {
  SnapshotRuns runs;
  std::vector<Interval> snapshot;
  uint32_t tid = 0;
  runs.Note(CopyToHost(7, 0, 10), &snapshot, &tid);
  runs.Note(CopyToHost(7, 2000, 2010), &snapshot, &tid);  // more than 1 s after the first
  ASSERT_TRUE(runs.Note(ModelWrite(7, 2020, 2030), &snapshot, &tid));
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].start, Ms(2000));
  for (int i = 0; i < 100; ++i) runs.Note(CopyToHost(7, 3000 + i, 3000 + i + 0.5), &snapshot, &tid);
  ASSERT_TRUE(runs.Note(ModelWrite(7, 3200, 3210), &snapshot, &tid));
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

namespace idlescope::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(SnapshotRuns, AnAsynchronousCheckpointsCopiesAreTheSnapshotOfAnotherThreadsWrites) {
  std::vector<Interval> snapshot;
  uint32_t tid = 0;
  {  // copied on thread 7, which goes on training; thread 8 writes the 64 MiB
    SnapshotRuns runs;
    runs.Note(BigCopyToHost(7, 100, 140, 64 * kMiB), &snapshot, &tid);
    runs.EndRun(0, 7, &snapshot);
    EXPECT_FALSE(runs.Note(ModelWrite(8, 150, 160, 16 * kMiB), &snapshot, &tid));
    EXPECT_TRUE(runs.Note(ModelWrite(8, 160, 170, 16 * kMiB), &snapshot, &tid));  // half
    EXPECT_EQ(tid, 7u);
    ASSERT_EQ(snapshot.size(), 1u);
    EXPECT_EQ(snapshot[0], (Interval{Ms(100), Ms(140)}));
    EXPECT_FALSE(runs.Note(ModelWrite(8, 170, 180, 32 * kMiB), &snapshot, &tid));  // linked once
  }
  {  // the writer starts before the copying thread launches again
    SnapshotRuns runs;
    runs.Note(BigCopyToHost(7, 100, 140, 64 * kMiB), &snapshot, &tid);
    EXPECT_TRUE(runs.Note(ModelWrite(8, 150, 160, 32 * kMiB), &snapshot, &tid));
    EXPECT_EQ(tid, 7u);
  }
}

TEST(SnapshotRuns, HandOffsMatchWritesThatArriveOutOfOrder) {
  std::vector<Interval> snapshot;
  uint32_t tid = 0;
  {  // the writer's packet arrives before the copying thread's: the writes wait for the run
    SnapshotRuns runs;
    EXPECT_FALSE(runs.Note(ModelWrite(8, 150, 160, 32 * kMiB), &snapshot, &tid));
    runs.Note(BigCopyToHost(7, 100, 140, 64 * kMiB), &snapshot, &tid);
    EXPECT_TRUE(runs.EndRun(0, 7, &snapshot));
    ASSERT_EQ(snapshot.size(), 1u);
    EXPECT_EQ(snapshot[0], (Interval{Ms(100), Ms(140)}));
  }
  {  // the next checkpoint's copy arrives before the writes of the first: each its own run
    SnapshotRuns runs;
    runs.Note(BigCopyToHost(7, 100, 140, 64 * kMiB), &snapshot, &tid);
    EXPECT_FALSE(runs.EndRun(0, 7, &snapshot));
    runs.Note(BigCopyToHost(7, 300, 340, 64 * kMiB), &snapshot, &tid);
    EXPECT_FALSE(runs.EndRun(0, 7, &snapshot));
    EXPECT_TRUE(runs.Note(ModelWrite(8, 150, 160, 32 * kMiB), &snapshot, &tid));
    ASSERT_EQ(snapshot.size(), 1u);
    EXPECT_EQ(snapshot[0], (Interval{Ms(100), Ms(140)}));
    EXPECT_TRUE(runs.Note(ModelWrite(8, 350, 360, 32 * kMiB), &snapshot, &tid));
    ASSERT_EQ(snapshot.size(), 1u);
    EXPECT_EQ(snapshot[0], (Interval{Ms(300), Ms(340)}));
  }
}

TEST(SnapshotRuns, NoHandOffForSmallCopiesLateWritesFewBytesOrTheCopyingThreadsOwnWrites) {
  std::vector<Interval> snapshot;
  uint32_t tid = 0;
  {  // a loss read-back, then another thread writes a model file
    SnapshotRuns runs;
    runs.Note(BigCopyToHost(7, 100, 101, 4), &snapshot, &tid);
    runs.EndRun(0, 7, &snapshot);
    EXPECT_FALSE(runs.Note(ModelWrite(8, 150, 160, 64 * kMiB), &snapshot, &tid));
  }
  {  // the first write comes more than 1 s after the copies
    SnapshotRuns runs;
    runs.Note(BigCopyToHost(7, 100, 140, 64 * kMiB), &snapshot, &tid);
    runs.EndRun(0, 7, &snapshot);
    EXPECT_FALSE(runs.Note(ModelWrite(8, 1141, 1200, 64 * kMiB), &snapshot, &tid));
  }
  {  // the writes so far are a small file, not the copies' bytes
    SnapshotRuns runs;
    runs.Note(BigCopyToHost(7, 100, 140, 64 * kMiB), &snapshot, &tid);
    runs.EndRun(0, 7, &snapshot);
    EXPECT_FALSE(runs.Note(ModelWrite(8, 150, 160, 1 * kMiB), &snapshot, &tid));
  }
  {  // the copying thread writes after a launch: its training loop's copy (the same-thread rule)
    SnapshotRuns runs;
    runs.Note(BigCopyToHost(7, 100, 140, 64 * kMiB), &snapshot, &tid);
    runs.EndRun(0, 7, &snapshot);
    EXPECT_FALSE(runs.Note(ModelWrite(7, 150, 160, 64 * kMiB), &snapshot, &tid));
  }
}

}  // namespace
}  // namespace idlescope::testing
