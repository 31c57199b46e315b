// The per-collective view on its own (analysis/collective_stats.h), fed as CrossRank feeds it:
// calls, the collectives Collectives resolved, and each rank's NCCL kernels.
#include "analyzer/analysis/collective_stats.h"

#include <gtest/gtest.h>

#include "analyzer/analysis/cross_rank.h"
#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

constexpr uint64_t kComm = 0xc0111;

CollectiveArrival Call(int32_t rank, uint64_t seq, double at_ms, bool grouped = false) {
  return {.comm = kComm,
          .seq = seq,
          .nranks = 3,
          .nccl_rank = rank,
          .job_rank = rank,
          .arrival = Ms(at_ms),
          .process = static_cast<uint32_t>(rank),
          .tid = 1,
          .op = NCCL_ALL_REDUCE,
          .bytes = 64 << 20,
          .grouped = grouped};
}

TEST(CollectiveStats, TransferIsTheShortestKernelBusBandwidthAsNcclTestsAndTheSlowestKept) {
  CrossRank x;
  // Collective 1: rank 2 arrives 30 ms late; the others' kernels wait for it.
  x.Arrival(Call(0, 1, 100));
  x.Arrival(Call(1, 1, 100));
  x.Arrival(Call(2, 1, 130));
  x.NcclKernel(0, {Ms(100), Ms(132)});
  x.NcclKernel(1, {Ms(100), Ms(132)});
  x.NcclKernel(2, {Ms(130), Ms(132)});  // 2 ms: the transfer
  // Collective 2: all on time, 3 ms each.
  for (int32_t r = 0; r < 3; ++r) x.Arrival(Call(r, 2, 200));
  for (int32_t r = 0; r < 3; ++r) x.NcclKernel(r, {Ms(200), Ms(203)});
  x.Finish();
  std::vector<CollectiveReport> all = x.stats().Summaries();
  ASSERT_EQ(all.size(), 1u);
  const CollectiveReport& c = all[0];
  EXPECT_EQ(c.comm, kComm);
  EXPECT_EQ(c.op, NCCL_ALL_REDUCE);
  EXPECT_EQ(c.nranks, 3);
  EXPECT_EQ(c.collectives, 2u);
  EXPECT_EQ(c.timed, 2u);
  EXPECT_EQ(c.size_bytes, 2u * (64 << 20));
  EXPECT_EQ(c.transfer_ns, Ms(2) + Ms(3));
  EXPECT_DOUBLE_EQ(c.algbw, 2.0 * (64 << 20) / Ms(5));
  EXPECT_DOUBLE_EQ(c.busbw, c.algbw * 2 * 2 / 3);  // all-reduce: 2(n-1)/n
  EXPECT_EQ(c.waited_ns, Ms(60));
  EXPECT_EQ(c.most_last_rank, 0);  // collective 2's last arrival is rank 0's (all equal: first)
  std::vector<CollectiveDetail> slowest = x.stats().Slowest(5, Ms(50));
  ASSERT_EQ(slowest.size(), 1u);  // collective 2 had no wait
  EXPECT_EQ(slowest[0].seq, 1u);
  EXPECT_EQ(slowest[0].last_rank, 2);
  EXPECT_EQ(slowest[0].transfer_ns, Ms(2));
  ASSERT_EQ(slowest[0].ranks.size(), 3u);
  EXPECT_EQ(slowest[0].ranks[0].arrival, Ms(50));  // since the job start
  EXPECT_EQ(slowest[0].ranks[0].kernel_ns, Ms(32));
  EXPECT_EQ(slowest[0].ranks[0].waited_ns, Ms(30));
}

TEST(CollectiveStats, ARankThatCallsInAGroupIsNotPairedAndItsCollectivesAreNotTimed) {
  CrossRank x;
  x.Arrival(Call(0, 1, 100));
  x.Arrival(Call(1, 1, 100, /*grouped=*/true));  // one kernel for several calls: no pairing
  x.Arrival(Call(2, 1, 101));
  x.NcclKernel(0, {Ms(100), Ms(102)});
  x.NcclKernel(1, {Ms(100), Ms(102)});
  x.NcclKernel(2, {Ms(101), Ms(102)});
  x.Finish();
  std::vector<CollectiveReport> all = x.stats().Summaries();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].collectives, 1u);
  EXPECT_EQ(all[0].timed, 1u);  // the last arriver's kernel is paired: timed by it
  EXPECT_EQ(all[0].transfer_ns, Ms(1));
}

TEST(CollectiveStats, SizesAndBusFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(BusFactor(NCCL_ALL_REDUCE, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusFactor(NCCL_ALL_GATHER, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusFactor(NCCL_REDUCE_SCATTER, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusFactor(NCCL_BROADCAST, 4), 1.0);
  // An all-gather's S is what every rank ends up with; a rank sends its part.
  EXPECT_EQ(CollectiveSize(NCCL_ALL_GATHER, 1000, 8), 8000u);
  EXPECT_EQ(CollectiveSize(NCCL_REDUCE_SCATTER, 8000, 8), 8000u);
  EXPECT_EQ(CollectiveSize(NCCL_ALL_REDUCE, 1000, 8), 1000u);
}

}  // namespace
}  // namespace idlescope::testing
