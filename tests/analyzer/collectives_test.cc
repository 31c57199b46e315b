// The collectives stage on its own (analysis/collectives.h): calls of each rank go in, the ranks
// the others waited for come out.
#include "analyzer/analysis/collectives.h"

#include <gtest/gtest.h>

namespace idlescope {
namespace {

constexpr Ns kMs = 1'000'000;

TEST(Collectives, TheLastArriverIsTheOneWaitedFor) {
  Collectives c;
  // Collective 1 of communicator 7, three ranks: rank 2 arrives 30 ms after rank 0.
  c.Note(7, 1, 3, 0, -1, 100 * kMs);
  c.Note(7, 1, 3, 2, -1, 130 * kMs);
  c.Note(7, 1, 3, 1, -1, 110 * kMs);
  EXPECT_EQ(c.matched(), 1u);
  std::vector<Finding> s = c.Stragglers(3);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kind, FindingKind::kStragglerRank);
  EXPECT_EQ(s[0].rank, 2);
  EXPECT_EQ(s[0].count, 1u);
  EXPECT_EQ(s[0].of_count, 1u);
  EXPECT_EQ(s[0].ns, 30 * kMs + 20 * kMs);  // rank 0 waited 30 ms, rank 1 20 ms
  EXPECT_EQ(s[0].other_ns, 30 * kMs);
}

TEST(Collectives, JobRankIsReportedWhenKnown) {
  Collectives c;
  c.Note(7, 1, 2, 0, 5, 0);
  c.Note(7, 1, 2, 1, 9, 10 * kMs);
  std::vector<Finding> s = c.Stragglers(3);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].rank, 9);
}

// A rank whose host runs ahead (asynchronous collectives) cannot wait at collective k for longer
// than since collective k-1 completed: its calls' drift is not waiting.
TEST(Collectives, WaitsCountFromThePreviousCollectivesLastArrival) {
  Collectives c;
  for (int k = 1; k <= 10; ++k) {
    c.Note(7, k, 2, 0, -1, k * kMs);        // rank 0: one call per ms
    c.Note(7, k, 2, 1, -1, 100 * k * kMs);  // rank 1: one call per 100 ms
  }
  std::vector<Finding> s = c.Stragglers(3);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].rank, 1);
  EXPECT_EQ(s[0].count, 10u);
  EXPECT_EQ(s[0].ns, 99 * kMs + 9 * 100 * kMs);  // not the 5.445 s of summed drift
  EXPECT_EQ(s[0].other_ns, 100 * kMs);
}

TEST(Collectives, MostWaitedForFirstAtMostN) {
  Collectives c;
  c.Note(1, 1, 2, 0, -1, 0);
  c.Note(1, 1, 2, 1, -1, 5 * kMs);  // rank 1 late by 5 ms
  c.Note(1, 2, 2, 1, -1, 10 * kMs);
  c.Note(1, 2, 2, 0, -1, 30 * kMs);  // rank 0 late by 20 ms
  std::vector<Finding> s = c.Stragglers(3);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].rank, 0);
  EXPECT_EQ(s[1].rank, 1);
  EXPECT_EQ(c.Stragglers(1).size(), 1u);
}

TEST(Collectives, MissingRanksAreIncompleteAfterTheHorizonOrAtTheEnd) {
  Collectives c;
  c.Note(7, 1, 2, 0, -1, 0);  // rank 1's file is not part of the job
  c.Note(7, 2, 2, 0, -1, 5 * kMs);
  c.Expire(kCollectiveHorizon);  // collective 1's last arrival is exactly at the horizon: kept
  EXPECT_EQ(c.incomplete(), 0u);
  c.Expire(kCollectiveHorizon + 1);
  EXPECT_EQ(c.incomplete(), 1u);
  c.Finish();
  EXPECT_EQ(c.incomplete(), 2u);
  EXPECT_EQ(c.matched(), 0u);
  EXPECT_TRUE(c.Stragglers(3).empty());
}

TEST(Collectives, UnmatchableCallsAreIgnored) {
  Collectives c;
  c.Note(0, 1, 2, 0, -1, 0);  // no communicator
  c.Note(7, 0, 2, 0, -1, 0);  // Send/Recv: no sequence number
  c.Note(7, 1, 1, 0, -1, 0);  // one rank
  c.Note(7, 1, 2, -1, 3, 0);  // no NCCL rank
  c.Finish();
  EXPECT_EQ(c.incomplete(), 0u);
  EXPECT_EQ(c.matched(), 0u);
}

}  // namespace
}  // namespace idlescope
