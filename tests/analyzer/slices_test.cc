// ResolveSlices alone: slicing, precedence by tier then cause, the two refinements.
#include <gtest/gtest.h>

#include "analyzer/analysis/attribution.h"

namespace idlescope {
namespace {

Candidate Make(Ns s, Ns e, Cause cause, EventClass cls, bool gpu = false) {
  Candidate c;
  c.when = {s, e};
  c.cause = cause;
  c.event_class = cls;
  c.gpu_side = gpu;
  return c;
}

TEST(ResolveSlices, CutsAtBoundariesAndLeavesResidual) {
  Candidate copy = Make(10, 30, Cause::kHostGpuTransfer, EventClass::kCopyPageable);
  Candidate read = Make(20, 50, Cause::kDataLoading, EventClass::kReadLocal);
  std::vector<RankedCandidate> ranked = {{&read, Tier::kLaunchingThread},
                                         {&copy, Tier::kLaunchingThread}};
  std::vector<Slice> slices = ResolveSlices({0, 100}, ranked);
  ASSERT_EQ(slices.size(), 4u);
  EXPECT_EQ(slices[0].when, (Interval{0, 10}));
  EXPECT_EQ(slices[0].winner, -1);
  EXPECT_EQ(slices[1].when, (Interval{10, 30}));
  EXPECT_EQ(slices[1].cause, Cause::kHostGpuTransfer);
  EXPECT_EQ(slices[2].when, (Interval{30, 50}));
  EXPECT_EQ(slices[2].cause, Cause::kDataLoading);
  EXPECT_EQ(slices[3].when, (Interval{50, 100}));
  EXPECT_EQ(slices[3].winner, -1);
}

TEST(ResolveSlices, TierBeatsCauseOrder) {
  Candidate copy = Make(0, 100, Cause::kHostGpuTransfer, EventClass::kCopyPageable);
  Candidate sync = Make(0, 100, Cause::kSynchronization, EventClass::kSync);
  std::vector<RankedCandidate> ranked = {{&copy, Tier::kJobProcess},
                                         {&sync, Tier::kLaunchingThread}};
  std::vector<Slice> slices = ResolveSlices({0, 100}, ranked);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0].cause, Cause::kSynchronization);
}

TEST(ResolveSlices, SyncRefinedByDeviceActivity) {
  Candidate sync = Make(0, 100, Cause::kSynchronization, EventClass::kSync);
  Candidate nccl = Make(0, 40, Cause::kCommunication, EventClass::kNccl, true);
  std::vector<RankedCandidate> ranked = {{&sync, Tier::kLaunchingThread}, {&nccl, Tier::kGpu}};
  std::vector<Slice> slices = ResolveSlices({0, 100}, ranked);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0].cause, Cause::kCommunication);
  EXPECT_EQ(slices[0].when, (Interval{0, 40}));
  EXPECT_EQ(slices[1].cause, Cause::kSynchronization);
}

TEST(ResolveSlices, QueueWaitRefinedByWorkerRead) {
  Candidate wait = Make(0, 100, Cause::kDataLoading, EventClass::kReadWorkerQueue);
  Candidate read = Make(50, 100, Cause::kDataLoading, EventClass::kReadRemote);
  Candidate write = Make(0, 50, Cause::kIntermediateUpload, EventClass::kUploadWrite);
  std::vector<RankedCandidate> ranked = {
      {&wait, Tier::kLaunchingThread}, {&read, Tier::kJobProcess}, {&write, Tier::kJobProcess}};
  std::vector<Slice> slices = ResolveSlices({0, 100}, ranked);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0].winner, 0);  // a worker writing a log does not explain the wait
  EXPECT_EQ(slices[1].winner, 1);
}

TEST(TopEvidence, KeepsTheHeaviestWithinCapacity) {
  TopEvidence top(8);
  for (uint64_t id = 1; id <= 1000; ++id)
    top.Add({0, id}, static_cast<Ns>(id % 10 == 0 ? 1000 : 1), 0);
  EXPECT_LE(top.size(), 8u);
  EXPECT_TRUE(top.evicted());
  auto best = top.Top(1);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].second.ns, 1000);
}

}  // namespace
}  // namespace idlescope
