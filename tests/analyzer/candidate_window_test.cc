// The candidate window on its own, and split by process (analysis/candidate_window.h:
// CandidateWindow, CandidateWindows).
#include "analyzer/analysis/candidate_window.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

Candidate At(double start_ms, double end_ms, uint32_t tid = 1) {
  Candidate c;
  c.when = {Ms(start_ms), Ms(end_ms)};
  c.tid = tid;
  c.cause = Cause::kHostGpuTransfer;
  return c;
}

std::vector<Ns> StartsReaching(const CandidateWindow& w, double start_ms, double end_ms) {
  std::vector<Ns> starts;
  w.ForEachReaching({Ms(start_ms), Ms(end_ms)},
                    [&](const Candidate& c) { starts.push_back(c.when.start); });
  return starts;
}

TEST(CandidateWindow, MergedInStartOrderAndFoundByTheLongestReach) {
  CandidateWindow w;
  w.Add(At(50, 60));
  w.Add(At(10, 100));  // the longest: reaches 90 ms past its start
  w.Add(At(30, 31));
  EXPECT_EQ(w.size(), 3u);
  EXPECT_TRUE(StartsReaching(w, 0, 1000).empty());  // not merged yet
  w.Merge();
  EXPECT_EQ(StartsReaching(w, 0, 1000), (std::vector<Ns>{Ms(10), Ms(30), Ms(50)}));
  // A piece at [95, 96): only candidates starting at most 90 ms before it are looked at; the
  // caller checks the actual overlap.
  EXPECT_EQ(StartsReaching(w, 95, 96), (std::vector<Ns>{Ms(10), Ms(30), Ms(50)}));
  EXPECT_EQ(StartsReaching(w, 130, 140), (std::vector<Ns>{Ms(50)}));
  EXPECT_EQ(StartsReaching(w, 0, 20), (std::vector<Ns>{Ms(10)}));
  EXPECT_EQ(w.peak(), 3u);
}

TEST(CandidateWindow, PruneForgetsWhatIsDoneAndShrinksTheReach) {
  CandidateWindow w;
  w.Add(At(10, 100));
  w.Add(At(200, 201));
  w.Merge();
  w.Prune([](const Candidate& c) { return c.when.end <= Ms(150); });
  EXPECT_EQ(w.size(), 1u);
  EXPECT_EQ(w.merged(), 1u);
  // The 90 ms candidate is gone: a piece far after 201 ms reaches nothing.
  EXPECT_TRUE(StartsReaching(w, 300, 301).empty());
  EXPECT_EQ(w.forgotten(), 0u);  // pruning what no device needs is no forgetting
  EXPECT_FALSE(w.WantsPrune());
  for (int i = 0; i < 1030; ++i) w.Add(At(1000 + i, 1000.5 + i));
  w.Merge();
  EXPECT_TRUE(w.WantsPrune());
}

TEST(CandidateWindow, MarksTheCopyOfASnapshotMergedOrNew) {
  CandidateWindow w;
  Candidate copy = At(100, 140, 7);
  w.Add(copy);
  w.Merge();
  w.Add(At(100, 140, 8));  // another thread's copy
  Candidate fresh = At(300, 310, 7);
  w.Add(fresh);
  w.MarkSnapshot(0, 7, copy.when);
  w.MarkSnapshot(0, 7, fresh.when);
  int snapshots = 0;
  w.Merge();
  w.ForEachReaching({0, Ms(1000)}, [&](const Candidate& c) {
    if (c.snapshot) {
      ++snapshots;
      EXPECT_EQ(c.tid, 7u);
      EXPECT_EQ(c.cause, Cause::kCheckpointing);
    }
  });
  EXPECT_EQ(snapshots, 2);
}

}  // namespace
}  // namespace idlescope::testing

namespace idlescope::testing {
namespace {

std::vector<uint32_t> TidsReaching(CandidateWindows& w, std::vector<size_t> slots, double start_ms,
                                   double end_ms) {
  std::vector<uint32_t> tids;
  w.ForEachReaching(slots, {Ms(start_ms), Ms(end_ms)},
                    [&](const Candidate& c) { tids.push_back(c.tid); });
  return tids;
}

// Issue 15: a gap looks only at the windows of the processes that drive its device and the
// shared one, and gets their candidates in the order one window would give them.
TEST(CandidateWindows, OnlyTheSlotsAskedForInStartThenArrivalOrder) {
  CandidateWindows w;
  const size_t rank0 = CandidateWindows::SlotOf(0), rank1 = CandidateWindows::SlotOf(1);
  w.Add(rank0, At(10, 20, /*tid=*/1));
  w.Add(rank1, At(10, 20, /*tid=*/2));
  w.Add(CandidateWindows::kShared, At(10, 20, /*tid=*/3));  // same start: arrival order
  w.Add(rank0, At(5, 20, /*tid=*/4));
  w.Merge();
  EXPECT_EQ(w.size(), 4u);
  EXPECT_EQ(TidsReaching(w, {CandidateWindows::kShared, rank0}, 0, 100),
            (std::vector<uint32_t>{4, 1, 3}));
  EXPECT_EQ(TidsReaching(w, {CandidateWindows::kShared, rank1}, 0, 100),
            (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(TidsReaching(w, {rank1, rank0, CandidateWindows::kShared}, 0, 100),
            (std::vector<uint32_t>{4, 1, 2, 3}));
  w.Prune([](const Candidate& c) { return c.tid == 1; });
  EXPECT_EQ(w.size(), 3u);
  EXPECT_EQ(TidsReaching(w, {rank0}, 0, 100), (std::vector<uint32_t>{4}));
}

}  // namespace
}  // namespace idlescope::testing
