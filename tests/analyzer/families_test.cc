// Candidates by family (docs/attribution.md, "Tiers and precedence"): a process's host events
// explain only the gaps of the devices that it drives, or, for a process that drives none, those
// of its nearest driving ancestor and of its descendants. Another rank of the job, even one forked
// by this rank, is never a candidate for its gaps.
#include <gtest/gtest.h>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

// Rank 0 (pid 100, device GPU-a) computes [0, 100) and [200, 1000): a 100 ms gap at [100, 200)
// spent in its own CPU work (no host event). Rank 1 drives GPU-b, busy all along.
struct TwoRanks {
  JobBuilder job;
  uint32_t r0 = 0;
  uint32_t r1 = 0;
  // `r1_forked_by_r0`: rank 1 is a fork() of rank 0 that did not exec (a program that forks its
  // ranks itself); else both are started by a launcher (pid 1).
  explicit TwoRanks(bool r1_forked_by_r0) {
    r0 = job.Process(100, 1, 0);
    r1 = r1_forked_by_r0 ? job.ForkedProcess(200, 100) : job.Process(200, 1, 1);
    job.Device(r0, 0, "GPU-a");
    job.Device(r1, 0, "GPU-b");
    job.Launch(r0, 100, 0);
    job.Launch(r1, 200, 0);
    job.Kernel(r0, 0, 100);
    job.Kernel(r0, 200, 1000);
    job.Kernel(r1, 0, 1000);
  }
  // Rank 1 synchronizes and writes its log in rank 0's gap.
  void Rank1SyncsAndLogs() {
    job.Sync(r1, 200, 110, 150);
    job.Io(r1, 200, FILE_WRITE, 150, 190, "/logs/rank1.log");
  }
  JobReport Finish() {
    job.End(r0, 1000);
    job.End(r1, 1000);
    return job.Finish();
  }
};

// Rank 0's idle time on GPU-a, by cause.
Ns Rank0Ns(const JobReport& r, Cause cause) {
  for (const DeviceReport& d : r.devices) {
    if (d.id.ends_with("GPU-a")) return d.cause_ns[Index(cause)];
  }
  return -1;
}

// Rank 1's syncs and log writes in rank 0's gap leave it unexplained: rank 0's own CPU work.
void ExpectRank0GapUnexplained(bool r1_forked_by_r0) {
  TwoRanks s(r1_forked_by_r0);
  s.Rank1SyncsAndLogs();
  JobReport r = s.Finish();
  EXPECT_EQ(Rank0Ns(r, Cause::kSynchronization), 0);
  EXPECT_EQ(Rank0Ns(r, Cause::kIntermediateUpload), 0);
  EXPECT_EQ(Rank0Ns(r, Cause::kUnknown), Ms(100));
}

TEST(CandidateFamilies, AForkedRankIsNoCandidateForItsParentsGaps) {
  ExpectRank0GapUnexplained(/*r1_forked_by_r0=*/true);
}

TEST(CandidateFamilies, ARankStartedByALauncherIsNoCandidateEither) {
  ExpectRank0GapUnexplained(/*r1_forked_by_r0=*/false);
}

TEST(CandidateFamilies, AWorkerOfTheRankExplainsItsGaps) {
  // The close case: the forked child drives no device (a DataLoader worker): its reads are the
  // rank's data loading.
  JobBuilder job;
  uint32_t r0 = job.Process(100, 1, 0);
  uint32_t worker = job.ForkedProcess(101, 100);
  job.Device(r0, 0, "GPU-a");
  job.Launch(r0, 100, 0);
  job.Kernel(r0, 0, 100);
  job.Kernel(r0, 200, 1000);
  job.Io(worker, 101, FILE_READ, 110, 190, "/data/shard0.tar");
  job.End(r0, 1000);
  job.End(worker, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(Rank0Ns(r, Cause::kDataLoading), Ms(80));
}

TEST(CandidateFamilies, AWorkerOfTheOtherRankDoesNotExplainThisRanksGaps) {
  TwoRanks s(/*r1_forked_by_r0=*/true);
  uint32_t worker = s.job.ForkedProcess(201, 200);  // rank 1's DataLoader worker
  s.job.Io(worker, 201, FILE_READ, 110, 190, "/data/shard1.tar");
  s.job.End(worker, 1000);
  JobReport r = s.Finish();
  EXPECT_EQ(Rank0Ns(r, Cause::kDataLoading), 0);
}

TEST(CandidateFamilies, ALauncherWithoutDevicesExplainsTheDevicesOfTheRanksItStarted) {
  JobBuilder job;
  uint32_t launcher = job.Process(50, 1, -1, "python", "python launch.py");
  uint32_t r0 = job.Process(100, 50, 0);
  uint32_t r1 = job.Process(200, 50, 1);
  job.Device(r0, 0, "GPU-a");
  job.Device(r1, 0, "GPU-b");
  job.Launch(r0, 100, 0);
  job.Launch(r1, 200, 0);
  job.Kernel(r0, 0, 100);
  job.Kernel(r0, 200, 1000);
  job.Kernel(r1, 0, 100);
  job.Kernel(r1, 200, 1000);
  job.Io(launcher, 50, FILE_READ, 100, 200, "/data/index.json");
  for (uint32_t p : {launcher, r0, r1}) job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 2 * Ms(100));  // both devices' gaps
}

}  // namespace
}  // namespace idlescope::testing
