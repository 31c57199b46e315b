// The merge of a job's parts (analysis/job_merge.h) and the rules it runs on devices whose job
// ended after they were finished (analysis/device_result.h); the shards' merge
// (analyzer/shard/merge.h) around it: summaries checked, matched to the plan's shards, shards that
// must be analyzed again sent back.
#include "analyzer/analysis/job_merge.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/shard/merge.h"
#include "analyzer/shard/plan.h"
#include "analyzer/shard/summary.h"
#include "analyzer/shard/summary_file.h"

namespace idlescope::testing {
namespace {

constexpr Ns kMinGap = 1'000'000;  // 1 ms

class NoSymbols : public SymbolSource {
 public:
  std::string String(uint32_t, uint64_t) const override { return ""; }
  std::vector<SymbolFrame> Stack(uint32_t, uint64_t) const override { return {}; }
};

// A device that ran kernels from 10 ms to `last_kernel_end`, finished at `finished_at`, with
// its tail gap attributed (a checkpoint write of 2 ms explains part of it) when it is long.
DeviceResult Device(std::string id, Ns last_kernel_end, Ns finished_at) {
  DeviceResult d;
  d.id = std::move(id);
  d.host = "node0";
  d.first_kernel = 10'000'000;
  d.last_kernel_end = last_kernel_end;
  d.finished_at = finished_at;
  d.kernels.kernels = 10;
  d.compute_ns = 5'000'000;
  const Ns tail = finished_at - last_kernel_end;
  if (tail >= kMinGap) {
    ++d.long_gaps;
    ClosedGap& g = d.last_gap;
    d.has_last_gap = true;
    g.gap = {last_kernel_end, finished_at};
    g.kind = GapKind::kTail;
    g.main = {.when = {last_kernel_end, last_kernel_end + 2'000'000},
              .cause = Cause::kCheckpointing};
    g.main_found = true;
    g.main_ns = 2'000'000;
    g.residual_ns = tail - g.main_ns;
    g.has_main = g.MainShown();
    g.cause_ns[Index(Cause::kCheckpointing)] = g.main_ns;
    g.cause_ns[Index(Cause::kTail)] = g.residual_ns;
    d.causes[Index(Cause::kCheckpointing)].ns = g.main_ns;
    d.causes[Index(Cause::kCheckpointing)].tail_ns = g.main_ns;
    d.causes[Index(Cause::kTail)].ns = g.residual_ns;
    d.causes[Index(Cause::kTail)].tail_ns = g.residual_ns;
  } else if (tail > 0) {
    ++d.short_gaps;
    d.short_gap_ns = tail;
  }
  return d;
}

TEST(DeviceTail, TheLastGapRunsOnToTheJobsEndAsResidualTailTime) {
  DeviceResult d = Device("node0/a", 20'000'000, 23'000'000);
  ASSERT_TRUE(d.last_gap.has_main);  // 2 ms of 3 explained: shown while the rest is shorter
  EXPECT_EQ(TailChangeAt(d, 23'000'000, kMinGap), TailChange::kNone);
  ASSERT_EQ(TailChangeAt(d, 40'000'000, kMinGap), TailChange::kExtend);
  ExtendToJobEnd(d, 40'000'000, kMinGap);
  EXPECT_EQ(d.finished_at, 40'000'000);
  EXPECT_EQ(d.last_gap.gap.end, 40'000'000);
  EXPECT_EQ(d.last_gap.residual_ns, 18'000'000);
  EXPECT_EQ(d.last_gap.cause_ns[Index(Cause::kTail)], 18'000'000);
  EXPECT_FALSE(d.last_gap.has_main);  // now mostly unexplained
  EXPECT_EQ(d.causes[Index(Cause::kTail)].ns, 18'000'000);
  EXPECT_EQ(d.causes[Index(Cause::kTail)].tail_ns, 18'000'000);
  EXPECT_EQ(d.causes[Index(Cause::kCheckpointing)].ns, 2'000'000);
  EXPECT_EQ(d.long_gaps, 1u);
}

TEST(DeviceTail, ADeviceFinishedAtItsLastKernelGetsANewGapShortOrLong) {
  DeviceResult shorter = Device("node0/a", 20'000'000, 20'000'000);
  ExtendToJobEnd(shorter, 20'500'000, kMinGap);
  EXPECT_FALSE(shorter.has_last_gap);
  EXPECT_EQ(shorter.short_gaps, 1u);
  EXPECT_EQ(shorter.short_gap_ns, 500'000);

  DeviceResult longer = Device("node0/a", 20'000'000, 20'000'000);
  ExtendToJobEnd(longer, 23'000'000, kMinGap);
  ASSERT_TRUE(longer.has_last_gap);
  EXPECT_EQ(longer.long_gaps, 1u);
  EXPECT_EQ(longer.last_gap.kind, GapKind::kTail);
  EXPECT_EQ(longer.last_gap.gap.start, 20'000'000);
  EXPECT_EQ(longer.last_gap.gap.end, 23'000'000);
  EXPECT_FALSE(longer.last_gap.main_found);
  EXPECT_EQ(longer.causes[Index(Cause::kTail)].ns, 3'000'000);
}

TEST(DeviceTail, AShortTailThatGrowsLongIsAnalyzedAgainOneThatStaysShortGrows) {
  DeviceResult d = Device("node0/a", 20'000'000, 20'400'000);
  EXPECT_EQ(TailChangeAt(d, 22'000'000, kMinGap), TailChange::kRemap);
  ASSERT_EQ(TailChangeAt(d, 20'900'000, kMinGap), TailChange::kExtend);
  ExtendToJobEnd(d, 20'900'000, kMinGap);
  EXPECT_EQ(d.short_gaps, 1u);
  EXPECT_EQ(d.short_gap_ns, 900'000);
  // A device that ran no kernel: its one gap is long whatever its length, always extended.
  DeviceResult idle;
  idle.finished_at = 100;
  EXPECT_EQ(TailChangeAt(idle, 200, kMinGap), TailChange::kExtend);
}

ProcessInfo Process(uint32_t pid, int32_t rank, Ns start) {
  ProcessInfo info;
  info.pid = pid;
  info.ppid = 1;
  info.rank = rank;
  info.host = "node0";
  info.start = start;
  info.file = "/t/node0-" + std::to_string(pid) + ".idlescope";
  return info;
}

PartResults Part(uint32_t process, Ns end, std::vector<DeviceResult> devices) {
  PartResults part(10);
  part.end = end;
  part.finished_at = end;
  part.processes.push_back({.process = process, .last_seen = end, .end = end, .ended = true});
  part.devices = std::move(devices);
  return part;
}

JobInputs TwoRanks() {
  JobInputs inputs;
  inputs.processes = {Process(100, 0, 0), Process(101, 1, 0)};
  return inputs;
}

TEST(JobMerge, PartsThatAnalyzedOneDeviceAreAnalyzedAsOne) {
  JobInputs inputs = TwoRanks();
  inputs.processes.push_back(Process(102, 2, 0));
  JobMerge merge({.min_gap = kMinGap}, inputs);
  merge.Add(Part(0, 30'000'000, {Device("node0/a", 20'000'000, 30'000'000)}));
  merge.Add(Part(1, 30'000'000, {Device("node0/b", 20'000'000, 30'000'000)}));
  merge.Add(Part(2, 30'000'000, {Device("node0/a", 25'000'000, 30'000'000)}));
  JobMerge::Regroup regroup = merge.Check();
  EXPECT_TRUE(regroup.shared_devices);
  EXPECT_EQ(regroup.group_of, (std::vector<uint32_t>{0, 1, 0}));
  EXPECT_TRUE(regroup.finish_later.empty());
}

TEST(JobMerge, APartWhoseShortTailGrowsLongByTheJobsEndIsFinishedLater) {
  JobMerge merge({.min_gap = kMinGap}, TwoRanks());
  // Rank 0 ended 0.4 ms after its last kernel; rank 1 runs on to 40 ms.
  merge.Add(Part(0, 20'400'000, {Device("node0/a", 20'000'000, 20'400'000)}));
  merge.Add(Part(1, 40'000'000, {Device("node0/b", 30'000'000, 40'000'000)}));
  JobMerge::Regroup regroup = merge.Check();
  EXPECT_FALSE(regroup.shared_devices);
  EXPECT_EQ(regroup.finish_later, std::vector<uint32_t>{0});
  EXPECT_EQ(regroup.job_end, 40'000'000);
}

TEST(JobMerge, TheReportHasEveryPartsDevicesAndGapsWithTheLastGapsRunOnToTheJobsEnd) {
  JobMerge merge({.min_gap = kMinGap, .top_gaps = 10}, TwoRanks());
  PartResults first = Part(0, 25'000'000, {Device("node0/a", 20'000'000, 25'000'000)});
  // Its own list has its last gap as it was where the part ended: replaced by the extended one.
  first.top_gaps.push_back(first.devices[0].last_gap);
  ClosedGap middle;
  middle.gap = {12'000'000, 15'000'000};
  middle.cause_ns[Index(Cause::kUnknown)] = 3'000'000;
  middle.residual_ns = 3'000'000;
  first.top_gaps.push_back(middle);
  first.host_events = 7;
  first.gpu_records = 3;
  merge.Add(std::move(first));
  PartResults second = Part(1, 40'000'000, {Device("node0/b", 30'000'000, 40'000'000)});
  second.host_events = 5;
  second.gpu_records = 2;
  merge.Add(std::move(second));
  ASSERT_TRUE(merge.Check().empty());
  CrossRank cross_rank;
  cross_rank.Finish();
  const JobReport report = merge.Build(cross_rank, NoSymbols());
  EXPECT_EQ(report.span, 40'000'000);
  EXPECT_EQ(report.events, 12u);
  EXPECT_EQ(report.gpu_activities, 5u);
  ASSERT_EQ(report.devices.size(), 2u);
  ASSERT_EQ(report.top_gaps.size(), 3u);
  EXPECT_EQ(report.top_gaps[0].device, "node0/a");  // 20 -> 40 ms: the extended tail
  EXPECT_EQ(report.top_gaps[0].length, 20'000'000);
  EXPECT_EQ(report.top_gaps[1].device, "node0/b");
  EXPECT_EQ(report.top_gaps[1].length, 10'000'000);
  EXPECT_EQ(report.top_gaps[2].length, 3'000'000);
  const auto tail = std::find_if(report.causes.begin(), report.causes.end(),
                                 [](const CauseReport& c) { return c.cause == Cause::kTail; });
  ASSERT_NE(tail, report.causes.end());
  EXPECT_EQ(tail->ns, 18'000'000 + 8'000'000);
}

FileReport File(std::string path) {
  FileReport f;
  f.path = std::move(path);
  return f;
}

TEST(JobMerge, WarningsComeInTheReadersOrderWhateverThePartsOrder) {
  JobInputs inputs = TwoRanks();
  inputs.skipped.push_back(
      {.kind = WarningKind::kSkippedFile, .subject = "/t/notes.txt", .text = "not a trace"});
  JobMerge merge({.min_gap = kMinGap}, inputs);
  auto warning = [](WarningKind kind, uint32_t pid) {
    return ReportWarning{.kind = kind, .subject = "/t/node0-" + std::to_string(pid)};
  };
  PartResults second = Part(1, 30'000'000, {});
  second.warnings.push_back({1, warning(WarningKind::kRecorderNotice, 101)});
  second.warnings.push_back({1, warning(WarningKind::kNoFooter, 101)});
  second.files.push_back({1, File("/t/node0-101.idlescope")});
  PartResults first = Part(0, 30'000'000, {});
  first.warnings.push_back({0, warning(WarningKind::kNoFooter, 100)});
  first.warnings.push_back({0, warning(WarningKind::kRecorderNotice, 100)});
  first.files.push_back({0, File("/t/node0-100.idlescope")});
  merge.Add(std::move(second));
  merge.Add(std::move(first));
  CrossRank cross_rank;
  cross_rank.Finish();
  const JobReport report = merge.Build(cross_rank, NoSymbols());
  std::vector<std::string> order;
  for (const ReportWarning& w : report.warnings) {
    order.push_back(std::to_string(static_cast<int>(w.kind)) + " " + w.subject);
  }
  auto kind = [](WarningKind k) { return std::to_string(static_cast<int>(k)) + " "; };
  EXPECT_EQ(order, (std::vector<std::string>{kind(WarningKind::kRecorderNotice) + "/t/node0-100",
                                             kind(WarningKind::kRecorderNotice) + "/t/node0-101",
                                             kind(WarningKind::kSkippedFile) + "/t/notes.txt",
                                             kind(WarningKind::kNoFooter) + "/t/node0-100",
                                             kind(WarningKind::kNoFooter) + "/t/node0-101"}));
  ASSERT_EQ(report.files.size(), 2u);
  EXPECT_EQ(report.files[0].path, "/t/node0-100.idlescope");
}

// --- the shards' merge ---

std::string TempPath(const std::string& name) {
  return std::string(::testing::TempDir()) + "/" + name + "-" + std::to_string(getpid());
}

// A plan of two ranks, a shard each; summaries of parts written to files and opened.
class ShardMerge : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_.set_format(kShardFormat);
    for (uint32_t i = 0; i < 2; ++i) {
      shard::PlannedFile* f = plan_.add_files();
      f->set_path("/t/node0-" + std::to_string(100 + i) + ".idlescope");
      f->set_owner(i);
      f->mutable_process()->set_pid(100 + i);
      f->mutable_process()->set_ppid(1);
      f->mutable_process()->set_rank(static_cast<int32_t>(i));
      f->mutable_process()->set_host("node0");
      plan_.add_shards()->add_owned(i);
    }
    plan_.mutable_options()->set_min_gap(kMinGap);
  }
  void Write(uint32_t shard, const PartResults& part) {
    const std::string path = TempPath("shard" + std::to_string(shard));
    absl::StatusOr<std::unique_ptr<SummaryWriter>> w = SummaryWriter::Create(path);
    ASSERT_TRUE(w.ok()) << w.status();
    CrossRankRecorder cross_rank;
    ASSERT_TRUE((*w)->Finish(Summarize(part, cross_rank, NoSymbols(),
                                       plan_.shards(static_cast<int>(shard)), shard, true))
                    .ok());
    absl::StatusOr<std::unique_ptr<SummaryFile>> file = SummaryFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    files_.push_back(std::move(*file));
    unlink(path.c_str());
  }
  absl::StatusOr<MergeResult> Merge() {
    std::vector<const SummaryFile*> view;
    for (const auto& f : files_) view.push_back(f.get());
    return MergeSummaries(plan_, view);
  }
  shard::Plan plan_;
  std::vector<std::unique_ptr<SummaryFile>> files_;
};

TEST_F(ShardMerge, TwoShardsGiveTheReportOfTheirParts) {
  Write(0, Part(0, 30'000'000, {Device("node0/a", 20'000'000, 30'000'000)}));
  Write(1, Part(1, 30'000'000, {Device("node0/b", 20'000'000, 30'000'000)}));
  absl::StatusOr<MergeResult> merged = Merge();
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_TRUE(merged->report.has_value());
  EXPECT_EQ(merged->report->devices.size(), 2u);
}

TEST_F(ShardMerge, ShardsThatDroveOneDeviceComeBackAsOne) {
  Write(0, Part(0, 30'000'000, {Device("node0/a", 20'000'000, 30'000'000)}));
  Write(1, Part(1, 30'000'000, {Device("node0/a", 25'000'000, 30'000'000)}));
  absl::StatusOr<MergeResult> merged = Merge();
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_FALSE(merged->report.has_value());
  EXPECT_EQ(merged->why, MergeResult::Why::kSharedDevice);
  ASSERT_EQ(merged->replan.shards_size(), 1);
  EXPECT_EQ(merged->replan.shards(0).owned_size(), 2);
  EXPECT_EQ(merged->remap, std::vector<uint32_t>{0});
}

TEST_F(ShardMerge, ASummaryNamingAProcessOutsideThePlanIsCorruptAMissingOneAnError) {
  Write(0, Part(0, 30'000'000, {}));
  absl::StatusOr<MergeResult> merged = Merge();
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.status().message(), "no summary of shard 1 of the plan");
  PartResults bad = Part(1, 30'000'000, {});
  bad.processes[0].process = 7;
  Write(1, bad);
  merged = Merge();
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.status().message(), "summary of shard 1 is corrupt: a process out of range");
}

}  // namespace
}  // namespace idlescope::testing
