// The plan of a job analyzed in shards (analyzer/shard/plan.h): which process each shard reads,
// and owns, from the files' headers alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/shard/plan.h"

namespace idlescope::testing {
namespace {

constexpr uint64_t kStart = 1'000'000'000'000;

struct Spec {
  uint32_t pid;
  uint32_t ppid;
  int32_t rank = -1;
  std::string cmdline = "python3 train.py";
  std::string host = "node0";
  bool forked = false;
};

shard::FileIndex Index(const Spec& s) {
  shard::FileIndex f;
  f.set_path(s.host + "-" + std::to_string(s.pid) + ".idlescope");
  f.set_readable(true);
  f.set_listed(true);
  Header& h = *f.mutable_header();
  h.set_magic("IDLESCOPE");
  h.set_format_version(2);
  h.set_pid(s.pid);
  h.set_ppid(s.ppid);
  h.set_host(s.host);
  h.set_boot_id("boot-" + s.host);
  h.set_exe("/usr/bin/python3");
  for (size_t at = 0; at < s.cmdline.size();) {
    size_t space = s.cmdline.find(' ', at);
    if (space == std::string::npos) space = s.cmdline.size();
    h.add_cmdline(s.cmdline.substr(at, space - at));
    at = space + 1;
  }
  if (s.rank >= 0) h.set_rank(s.rank);
  h.mutable_clock()->set_monotonic_ns(kStart);
  h.mutable_clock()->set_realtime_ns(kStart * 2);
  h.set_process_start_ns(kStart + s.pid);
  h.set_origin(s.forked ? ORIGIN_FORK : ORIGIN_PRELOAD);
  return f;
}

// The plan's shards as pids: owned, then guests.
struct PlannedShard {
  std::vector<uint32_t> owned, guests;
  friend bool operator==(const PlannedShard&, const PlannedShard&) = default;
};

std::vector<PlannedShard> Shards(const std::vector<Spec>& specs) {
  std::vector<shard::FileIndex> files;
  for (const Spec& s : specs) files.push_back(Index(s));
  absl::StatusOr<shard::Plan> plan = MakePlan(files, AnalysisOptions{}, 2'000'000'000);
  EXPECT_TRUE(plan.ok()) << plan.status();
  std::vector<PlannedShard> out;
  if (!plan.ok()) return out;
  for (const shard::Shard& s : plan->shards()) {
    PlannedShard p;
    for (uint32_t i : s.owned()) p.owned.push_back(specs[i].pid);
    for (uint32_t i : s.guests()) p.guests.push_back(specs[i].pid);
    out.push_back(p);
    for (uint32_t i : s.owned()) {
      EXPECT_EQ(plan->files(static_cast<int>(i)).owner(), out.size() - 1) << specs[i].pid;
    }
  }
  return out;
}

TEST(ShardPlan, ARankWithItsWorkersEachAndTheLauncherAGuestOfTheRanksItStarted) {
  // torchrun (no rank) starts ranks 0 and 1, each with a DataLoader worker; a monitor beside.
  std::vector<PlannedShard> shards = Shards({
      {.pid = 10, .ppid = 1, .cmdline = "torchrun --nproc-per-node 2 train.py"},
      {.pid = 20, .ppid = 10, .rank = 0},
      {.pid = 21, .ppid = 10, .rank = 1},
      {.pid = 30, .ppid = 20, .forked = true},
      {.pid = 31, .ppid = 21, .forked = true},
      {.pid = 40, .ppid = 1, .cmdline = "nvidia-smi dmon"},
  });
  EXPECT_EQ(shards, (std::vector<PlannedShard>{
                        {.owned = {10, 40}, .guests = {}},  // no rank: launcher, monitor
                        {.owned = {20, 30}, .guests = {10}},
                        {.owned = {21, 31}, .guests = {10}},
                    }));
}

TEST(ShardPlan, AnInstallerAndWhatItRunsAreReadByEveryShard) {
  // Rank 0 runs pip (which inherits RANK, and runs a compiler); a job-wide pip beside the ranks.
  std::vector<PlannedShard> shards = Shards({
      {.pid = 20, .ppid = 1, .rank = 0},
      {.pid = 21, .ppid = 1, .rank = 1},
      {.pid = 50, .ppid = 20, .rank = 0, .cmdline = "python3 -m pip install -r requirements.txt"},
      {.pid = 51, .ppid = 50, .rank = 0, .cmdline = "gcc -c ext.c"},
      {.pid = 60, .ppid = 1, .cmdline = "pip install wandb"},
  });
  EXPECT_EQ(shards, (std::vector<PlannedShard>{
                        {.owned = {60}, .guests = {50, 51}},
                        {.owned = {20, 50, 51}, .guests = {60}},
                        {.owned = {21}, .guests = {50, 51, 60}},
                    }));
}

TEST(ShardPlan, RanksForkedByARankGoWithItAndAJobWithoutRanksIsOneShard) {
  EXPECT_EQ(Shards({
                {.pid = 20, .ppid = 1, .rank = 0},
                {.pid = 21, .ppid = 20, .rank = 1, .forked = true},
                {.pid = 22, .ppid = 1, .rank = 2},
            }),
            (std::vector<PlannedShard>{{.owned = {20, 21}, .guests = {}},
                                       {.owned = {22}, .guests = {}}}));
  EXPECT_EQ(Shards({{.pid = 20, .ppid = 1}, {.pid = 30, .ppid = 20, .forked = true}}),
            (std::vector<PlannedShard>{{.owned = {20, 30}, .guests = {}}}));
}

TEST(ShardPlan, HostsAreApartAFileNamedThatIsNoTraceIsAnErrorAListedOneIsSkipped) {
  // Two hosts: their pids may collide without being related.
  std::vector<PlannedShard> shards = Shards({
      {.pid = 20, .ppid = 1, .rank = 0, .host = "a"},
      {.pid = 30, .ppid = 20, .host = "a", .forked = true},
      {.pid = 20, .ppid = 1, .rank = 1, .host = "b"},
  });
  EXPECT_EQ(shards, (std::vector<PlannedShard>{{.owned = {20, 30}, .guests = {}},
                                               {.owned = {20}, .guests = {}}}));

  std::vector<shard::FileIndex> files = {Index({.pid = 20, .ppid = 1, .rank = 0})};
  shard::FileIndex bad;
  bad.set_path("junk.idlescope");
  bad.set_why("junk.idlescope: not an idlescope trace");
  bad.set_listed(true);
  files.push_back(bad);
  absl::StatusOr<shard::Plan> plan = MakePlan(files, AnalysisOptions{}, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->skipped_size(), 1);
  EXPECT_EQ(plan->skipped(0).path(), "junk.idlescope");
  files[1].set_listed(false);
  plan = MakePlan(files, AnalysisOptions{}, 1);
  EXPECT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(), "junk.idlescope: not an idlescope trace");
}

}  // namespace
}  // namespace idlescope::testing
