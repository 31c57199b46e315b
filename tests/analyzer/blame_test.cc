// Blame across ranks on its own (analysis/blame.h): the last arriver's candidates and the waiting
// ranks' NCCL kernels go in, the waits by the last arriver's activity come out.
#include "analyzer/analysis/blame.h"

#include <gtest/gtest.h>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

constexpr uint32_t kLastProcess = 3, kLastTid = 300;

RankActivity Activity(Cause cause, double start_ms, double end_ms, uint32_t tid = kLastTid) {
  return {.rank = 3,
          .when = {Ms(start_ms), Ms(end_ms)},
          .cause = cause,
          .process = kLastProcess,
          .tid = tid,
          .stack = 17,
          .object = 23};
}

CollectiveWait WaitFor(int32_t waiter, double start_ms, double end_ms) {
  return {.waiter = waiter,
          .last = 3,
          .last_process = kLastProcess,
          .last_tid = kLastTid,
          .when = {Ms(start_ms), Ms(end_ms)}};
}

TEST(RankBlame, AWaitIsTheLastArriversActivityWhereTheWaitersGpuSatInNccl) {
  RankBlame blame;
  blame.NoteCaller(kLastProcess, kLastTid);               // rank 3's thread calls the collectives
  blame.Note(Activity(Cause::kCheckpointing, 100, 180));  // rank 3 writes a checkpoint
  blame.NoteNcclKernel(0, {Ms(90), Ms(200)});             // rank 0's all-reduce kernel waits
  blame.NoteNcclKernel(1, {Ms(150), Ms(200)});            // rank 1's GPU got there later
  blame.Wait(WaitFor(0, 90, 200));
  blame.Wait(WaitFor(1, 90, 200));
  blame.Resolve(Ms(1000));
  const RankBlame::Straggler& s = blame.stragglers().at(3);
  const RankBlame::Blamed& b = s.causes[Index(Cause::kCheckpointing)];
  EXPECT_EQ(b.ns, Ms(80 + 30));  // rank 0: 100-180; rank 1: 150-180
  EXPECT_EQ(b.waiters.size(), 2u);
  EXPECT_EQ(s.unexplained_ns, Ms(30 + 20));  // 90-100, 180-200; 180-200
  EXPECT_EQ(blame.WaitedFor(0, Cause::kCheckpointing), Ms(80));
  EXPECT_EQ(blame.WaitedFor(1, Cause::kCheckpointing), Ms(30));
  ASSERT_EQ(b.stacks.Top(1).size(), 1u);
  EXPECT_EQ(b.stacks.Top(1)[0].first, (EvidenceKey{kLastProcess, 17}));
}

TEST(RankBlame, NoBlameForAnotherThreadsWorkAGpuThatWasBusyOrAWaitForItsOwnGpu) {
  RankBlame blame;
  blame.NoteCaller(kLastProcess, kLastTid);  // rank 3's thread calls the collectives
  // A background writer thread of rank 3 writes during the wait: it did not delay the call.
  blame.Note(Activity(Cause::kCheckpointing, 100, 180, kLastTid + 1));
  // Rank 3's calling thread waits for its own GPU: its kernels made it late.
  blame.Note(Activity(Cause::kSynchronization, 180, 200));
  blame.NoteNcclKernel(0, {Ms(90), Ms(200)});
  blame.Wait(WaitFor(0, 90, 200));
  // Rank 1's host ran ahead, its GPU was computing: no NCCL kernel in the wait, no wait.
  blame.NoteNcclKernel(1, {Ms(300), Ms(310)});
  blame.Wait(WaitFor(1, 90, 200));
  blame.Resolve(Ms(1000));
  const RankBlame::Straggler& s = blame.stragglers().at(3);
  for (int c = 0; c < kCauseCount; ++c) EXPECT_EQ(s.causes[c].ns, 0) << c;
  EXPECT_EQ(s.unexplained_ns, Ms(110));
  EXPECT_EQ(s.waiters.size(), 1u);
}

TEST(RankBlame, WaitsResolveOnceTheAnalysisPassedThemAndSnapshotsTurnCheckpointing) {
  RankBlame blame;
  blame.NoteCaller(kLastProcess, kLastTid);  // rank 3's thread calls the collectives
  RankActivity copy = Activity(Cause::kHostGpuTransfer, 100, 120);
  blame.Note(copy);
  blame.MarkSnapshot(3, kLastProcess, kLastTid, copy.when);  // its checkpoint write followed
  blame.Wait(WaitFor(0, 90, 200));
  blame.Resolve(Ms(150));  // rank 0's GPU records of the wait may still come
  EXPECT_TRUE(blame.stragglers().empty());
  blame.NoteNcclKernel(0, {Ms(90), Ms(200)});
  blame.Resolve(Ms(201));
  EXPECT_EQ(blame.WaitedFor(0, Cause::kCheckpointing), Ms(20));
  EXPECT_EQ(blame.WaitedFor(0, Cause::kHostGpuTransfer), 0);
}

TEST(RankBlame, ASnapshotFoundAfterTheWaitStillTurnsItsBlameCheckpointing) {
  // An asynchronous checkpoint: rank 3's training thread copies the model to host memory while
  // the others wait; its writer thread's writes show the copy was a snapshot only later.
  RankBlame blame;
  blame.NoteCaller(kLastProcess, kLastTid);  // rank 3's thread calls the collectives
  RankActivity copy = Activity(Cause::kHostGpuTransfer, 100, 180);
  blame.Note(copy);
  blame.NoteNcclKernel(0, {Ms(90), Ms(200)});
  blame.Wait(WaitFor(0, 90, 200));
  blame.MarkSnapshot(3, kLastProcess, kLastTid, copy.when);
  blame.Resolve(Ms(1000));
  EXPECT_EQ(blame.WaitedFor(0, Cause::kCheckpointing), Ms(80));
  EXPECT_EQ(blame.WaitedFor(0, Cause::kHostGpuTransfer), 0);
}

TEST(RankBlame, OnlyCallingThreadsAreKeptTheirEarlierActivityFromTheirFirstCall) {
  RankBlame blame;
  // Before its first collective call the thread reads its data; a helper thread of rank 3 (not
  // a caller) floods the rank with more activity than the rank keeps.
  blame.Note(Activity(Cause::kDataLoading, 100, 180));
  for (int i = 0; i < 2 * static_cast<int>(kMaxRankActivity); ++i) {
    blame.Note(
        Activity(Cause::kCheckpointing, 181 + i * 0.001, 181 + (i + 1) * 0.001, kLastTid + 1));
  }
  blame.NoteCaller(kLastProcess, kLastTid);
  blame.NoteNcclKernel(0, {Ms(90), Ms(200)});
  blame.Wait(WaitFor(0, 90, 200));
  blame.Resolve(Ms(1000));
  EXPECT_EQ(blame.WaitedFor(0, Cause::kDataLoading), Ms(80));
  EXPECT_EQ(blame.WaitedFor(0, Cause::kCheckpointing), 0);
}

}  // namespace
}  // namespace idlescope::testing
