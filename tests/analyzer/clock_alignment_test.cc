// Clock alignment across hosts (analyzer/read/clock_alignment.h): pairing a file's NCCL calls
// with their kernels, and the hosts' corrections from the collectives they share.
#include "analyzer/read/clock_alignment.h"

#include <gtest/gtest.h>

#include <random>

namespace idlescope {
namespace {

constexpr Ns kUs = 1000;
constexpr Ns kMs = 1000 * kUs;

Event Launch(uint64_t stream, uint64_t correlation) {
  Event e;
  e.set_type(CUDA_LAUNCH);
  e.set_stream(stream);
  e.set_correlation(correlation);
  return e;
}

Event Collective(uint64_t stream, uint64_t seq, uint32_t group_depth = 0) {
  Event e;
  e.set_type(NCCL_COLLECTIVE);
  e.set_stream(stream);
  e.set_comm(0xc0);
  e.set_seq(seq);
  e.set_group_depth(group_depth);
  return e;
}

GpuActivity Kernel(uint32_t stream, Ns dur, bool nccl, uint64_t correlation = 0) {
  GpuActivity a;
  a.set_kind(GPU_KERNEL);
  a.set_stream(stream);
  a.set_dur(static_cast<uint64_t>(dur));
  a.set_nccl(nccl);
  a.set_correlation(correlation);
  return a;
}

TEST(CollectiveEndCollector, PairsCallsWithKernelsOnTheStreamALaunchNames) {
  CollectiveEndCollector c;
  c.AddEvent(Launch(5, 77), 0);
  c.AddActivity(Kernel(13, 1 * kMs, false, 77), 10 * kUs);
  c.AddEvent(Collective(5, 1), 2 * kMs);
  c.AddEvent(Collective(5, 2), 4 * kMs);
  // Another host stream's collectives (no launch names its GPU stream) do not take these kernels.
  c.AddEvent(Collective(6, 1), 2 * kMs);
  c.AddEvent(Launch(6, 0), 0);
  c.AddActivity(Kernel(13, 1 * kMs, true), 2 * kMs + 5 * kUs);
  c.AddActivity(Kernel(13, 1 * kMs, true), 4 * kMs + 5 * kUs);
  c.AddActivity(Kernel(20, 1 * kMs, true), 2 * kMs + 5 * kUs);  // NCCL's own stream
  std::vector<CollectiveEnd> ends = c.Finish();
  ASSERT_EQ(ends.size(), 3u);  // stream 5 with 13, and the pair left: 6 with 20
  std::sort(ends.begin(), ends.end(), [](const CollectiveEnd& a, const CollectiveEnd& b) {
    return std::tie(a.seq, a.end) < std::tie(b.seq, b.end);
  });
  EXPECT_EQ(ends[0].seq, 1u);
  EXPECT_EQ(ends[0].end, 3 * kMs + 5 * kUs);
  EXPECT_EQ(ends[1].seq, 1u);
  EXPECT_EQ(ends[2].seq, 2u);
  EXPECT_EQ(ends[2].end, 5 * kMs + 5 * kUs);
}

TEST(CollectiveEndCollector, GroupedCallsAndKernelsBeforeTheirCallAreNotPaired) {
  CollectiveEndCollector grouped;
  grouped.AddEvent(Collective(5, 1, /*group_depth=*/1), 0);
  grouped.AddEvent(Collective(5, 2, /*group_depth=*/1), 0);
  grouped.AddActivity(Kernel(13, kMs, true), 10 * kUs);
  EXPECT_TRUE(grouped.Finish().empty());

  CollectiveEndCollector early;  // the kernel started before the call: not its kernel
  early.AddEvent(Collective(5, 1), 2 * kMs);
  early.AddActivity(Kernel(13, kMs, true), 1 * kMs);
  EXPECT_TRUE(early.Finish().empty());
}

// Three hosts; the ranks' ends of collective `seq` at true time seq * 10 ms plus jitter, each
// host's times shifted by its error.
std::vector<CollectiveEnd> Ends(Ns error, int from, int to, std::mt19937_64& rng, Ns jitter) {
  std::uniform_int_distribution<Ns> d(-jitter, jitter);
  std::vector<CollectiveEnd> ends;
  for (int seq = from; seq <= to; ++seq) {
    ends.push_back({0xc0, static_cast<uint64_t>(seq), seq * 10 * kMs + error + d(rng)});
  }
  return ends;
}

TEST(AlignHosts, RecoversEachHostsErrorDespiteOutliers) {
  std::mt19937_64 rng(3);
  std::vector<std::vector<CollectiveEnd>> ends = {
      Ends(0, 1, 200, rng, 20 * kUs), Ends(0, 1, 200, rng, 20 * kUs),  // host 0: two ranks
      Ends(+37 * kMs, 1, 200, rng, 20 * kUs), Ends(-48 * kMs, 1, 200, rng, 20 * kUs)};
  // A few pairings that slipped: ends 5 ms off.
  for (int i = 0; i < 20; ++i) ends[2][static_cast<size_t>(i * 9)].end += 5 * kMs;
  HostAlignment a = AlignHosts({"a", "b", "c"}, {0, 0, 1, 2}, ends);
  EXPECT_EQ(a.clocks[0].method, ClockMethod::kReference);
  EXPECT_NEAR(a.correction[1], 37 * kMs, 100 * kUs);
  EXPECT_NEAR(a.correction[2], -48 * kMs, 100 * kUs);
  EXPECT_EQ(a.clocks[1].method, ClockMethod::kCollectives);
  EXPECT_EQ(a.clocks[1].collectives, 200u);
  EXPECT_GT(a.clocks[1].residual_ns, 0);
  EXPECT_LT(a.clocks[1].residual_ns, 40 * kUs);
}

TEST(AlignHosts, ChainsHostsThatShareNoCollectiveWithTheReference) {
  std::mt19937_64 rng(4);
  // a and b share collectives 1-100, b and c share 101-200 (another communicator's sequence
  // numbers would do the same); a and c none.
  std::vector<std::vector<CollectiveEnd>> ends = {Ends(0, 1, 100, rng, 20 * kUs),
                                                  Ends(12 * kMs, 1, 200, rng, 20 * kUs),
                                                  Ends(-30 * kMs, 101, 200, rng, 20 * kUs)};
  HostAlignment a = AlignHosts({"a", "b", "c"}, {0, 1, 2}, ends);
  EXPECT_NEAR(a.correction[1], 12 * kMs, 100 * kUs);
  EXPECT_NEAR(a.correction[2], -30 * kMs, 100 * kUs);
  EXPECT_EQ(a.clocks[2].via, "b");
}

TEST(AlignHosts, AHostWithoutSharedCollectivesKeepsItsRealtimeSnapshot) {
  std::mt19937_64 rng(5);
  std::vector<std::vector<CollectiveEnd>> ends = {
      Ends(0, 1, 50, rng, 20 * kUs), Ends(3 * kMs, 1, 50, rng, 20 * kUs), {}};
  HostAlignment a = AlignHosts({"a", "b", "c"}, {0, 1, 2}, ends);
  EXPECT_EQ(a.clocks[2].method, ClockMethod::kRealtime);
  EXPECT_EQ(a.correction[2], 0);
  EXPECT_EQ(a.clocks[1].method, ClockMethod::kCollectives);
}

}  // namespace
}  // namespace idlescope
