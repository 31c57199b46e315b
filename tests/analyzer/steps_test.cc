// The job's steps (analysis/steps.h): FindSteps on activity sequences, a process's finder fed
// records directly (the window, NVTX ranges), the choice among processes, and the report's block.
#include "analyzer/analysis/steps.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace idlescope {
namespace {

struct Sequence {
  std::vector<uint32_t> names;
  std::vector<Ns> starts;
  void Add(uint32_t name, Ns gap = 10) {
    starts.push_back(starts.empty() ? 0 : starts.back() + gap);
    names.push_back(name);
  }
};

TEST(FindSteps, AStepOfManyLayersAndOneOptimizerKernel) {
  Sequence s;  // 100 layer kernels (0) then the optimizer (1): layers repeat every kernel
  for (int step = 0; step < 20; ++step) {
    for (int l = 0; l < 100; ++l) s.Add(0);
    s.Add(1, step % 2 == 0 ? 10 : 30);  // every other step 20 ns longer
  }
  std::optional<FoundSteps> found = FindSteps(s.names, s.starts);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->anchor, 1u);
  EXPECT_EQ(found->kernels_per_step, 101u);
  ASSERT_EQ(found->starts.size(), 20u);
  // The step after an even one: +30 at its end.
  EXPECT_EQ(found->starts[1] - found->starts[0], 101 * 10 + 20);
  EXPECT_EQ(found->starts[2] - found->starts[1], 101 * 10);
}

TEST(FindSteps, AKernelTwiceAStepIsNoStep) {
  Sequence s;  // A B A C: A repeats every 2 kernels, but the sequence repeats every 4
  for (int step = 0; step < 30; ++step) {
    s.Add(0);
    s.Add(1);
    s.Add(0);
    s.Add(2);
  }
  std::optional<FoundSteps> found = FindSteps(s.names, s.starts);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->kernels_per_step, 4u);
  EXPECT_EQ(found->anchor, 1u);
  EXPECT_EQ(found->starts.size(), 30u);
}

TEST(FindSteps, AnEvaluationEveryTenStepsIsNotTheStep) {
  Sequence s;  // steps of (0, 1, 2); every 10th step an evaluation kernel (3) after it
  for (int step = 0; step < 100; ++step) {
    s.Add(0);
    s.Add(1);
    s.Add(2);
    if (step % 10 == 9) s.Add(3);
  }
  std::optional<FoundSteps> found = FindSteps(s.names, s.starts);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->kernels_per_step, 3u);
  EXPECT_EQ(found->starts.size(), 100u);
}

TEST(FindSteps, OneKernelOverAndOverHasNoSteps) {
  Sequence s;
  for (int i = 0; i < 500; ++i) s.Add(0);
  EXPECT_FALSE(FindSteps(s.names, s.starts));
  Sequence few;  // a cycle seen 3 times: fewer than kMinStepAnchors
  for (int step = 0; step < 3; ++step) {
    few.Add(0);
    few.Add(1);
    few.Add(2);
  }
  EXPECT_FALSE(FindSteps(few.names, few.starts));
}

TEST(StepMarkerName, TheStepNumberIsDropped) {
  EXPECT_EQ(StepMarkerName("ProfilerStep#12"), "ProfilerStep");
  EXPECT_EQ(StepMarkerName("train_step#0"), "train_step");
  EXPECT_EQ(StepMarkerName("step 3"), "step");
  EXPECT_EQ(StepMarkerName("iteration_41"), "iteration");
  EXPECT_EQ(StepMarkerName("forward"), "forward");
  EXPECT_EQ(StepMarkerName("fp16"), "fp");  // a name ending in digits is a numbered step too
}

GpuRecord Activity(GpuActivityKind kind, uint64_t name, Ns start) {
  GpuRecord r;
  r.kind = kind;
  r.name_id = name;
  r.copy_kind = COPY_H2D;
  r.start = start;
  r.end = start + 10;
  return r;
}

TEST(ProcessStepFinder, StepsBeginAtTheCopyOfEachBatch) {
  ProcessStepFinder finder;
  Ns t = 0;
  for (int step = 0; step < 12; ++step) {  // a pageable batch copy, then 3 layers
    finder.AddActivity(Activity(GPU_MEMCPY, 0, t));
    for (int l = 0; l < 3; ++l) finder.AddActivity(Activity(GPU_KERNEL, 7, t + 100 + 10 * l));
    t += step == 5 ? 2000 : 1000;
  }
  ProcessSteps steps = finder.Take(3, "");
  EXPECT_EQ(steps.process, 3u);
  EXPECT_EQ(steps.activities, 48u);
  EXPECT_EQ(ActivityTokenName(steps.anchor), "GPU_MEMCPY:COPY_H2D");
  EXPECT_EQ(steps.per_step, 4u);
  ASSERT_EQ(steps.anchor_starts.size(), 12u);
  EXPECT_EQ(steps.anchor_starts[6] - steps.anchor_starts[5], 2000);
  EXPECT_EQ(steps.anchor_starts[7] - steps.anchor_starts[6], 1000);
}

TEST(ProcessStepFinder, PastTheWindowOnlyTheAnchorIsKept) {
  // More activities than the window: the cycle is chosen in the first kStepWindow, every later
  // step still counts (the records arrive a little out of order: sorted at the end); the starts
  // of the first kMaxSteps are kept.
  ProcessStepFinder finder;
  const size_t steps = kMaxSteps + 100;
  for (size_t s = 0; s < steps; ++s) {
    const Ns t = static_cast<Ns>(s) * 100;
    finder.AddActivity(Activity(GPU_KERNEL, 2, t + 50));  // arrives before its step's first
    finder.AddActivity(Activity(GPU_KERNEL, 1, t));
  }
  ProcessSteps found = finder.Take(0, "");
  EXPECT_EQ(found.anchor, 1u);
  EXPECT_EQ(found.per_step, 2u);
  EXPECT_EQ(found.anchor_runs, steps);
  ASSERT_EQ(found.anchor_starts.size(), kMaxSteps);
  for (size_t k = 1; k < found.anchor_starts.size(); ++k) {
    ASSERT_EQ(found.anchor_starts[k] - found.anchor_starts[k - 1], 100) << k;
  }
  StepsReport report = ReportSteps(found, false, "k", 1, 0, {}, {});
  EXPECT_EQ(report.steps, steps - 1);
  EXPECT_EQ(report.durations.size(), kMaxSteps - 1);
}

HostEvent Range(const std::string& name, Ns start, uint64_t depth) {
  HostEvent range;
  range.type = NVTX_RANGE;
  range.start = start;
  range.end = start + 400;
  range.count = depth;
  range.path = name;
  return range;
}

TEST(ChooseSteps, NvtxRangesComeBeforeTheGpuWork) {
  std::vector<ProcessSteps> processes;
  ProcessStepFinder ranks[2];
  for (int step = 0; step < 8; ++step) {
    const Ns start = step * 1000 + (step == 3 ? 500 : 0);
    ranks[1].AddRange(Range("ProfilerStep#" + std::to_string(step), start, 1));
    ranks[1].AddRange(Range("forward", start + 10, 2));  // depth 2: never a step
    for (int k = 0; k < 4; ++k) ranks[0].AddActivity(Activity(GPU_KERNEL, 1 + k % 2, start + k));
  }
  processes.push_back(ranks[0].Take(0, ""));
  processes.push_back(ranks[1].Take(1, ""));
  bool from_markers = false;
  const ProcessSteps* chosen = ChooseSteps(processes, &from_markers);
  ASSERT_NE(chosen, nullptr);
  EXPECT_TRUE(from_markers);
  EXPECT_EQ(chosen->process, 1u);
  EXPECT_EQ(chosen->marker, "ProfilerStep");
  StepsReport report = ReportSteps(*chosen, true, chosen->marker, 42, 0, {}, {});
  EXPECT_EQ(report.source, StepSource::kNvtx);
  ASSERT_EQ(report.durations.size(), 7u);
  EXPECT_EQ(report.durations[2], 1500);
  EXPECT_EQ(report.durations[3], 500);

  // Only "forward" asked for, and every "forward" range is nested: no steps.
  ProcessStepFinder forward;
  for (int i = 0; i < 8; ++i) forward.AddRange(Range("forward", i * 10, 2));
  std::vector<ProcessSteps> only = {forward.Take(0, "forward")};
  EXPECT_EQ(ChooseSteps(only, &from_markers), nullptr);
}

TEST(ReportSteps, TheSlowestStepsNameTheLongestGapInsideThem) {
  ProcessSteps steps;
  steps.anchor = 5;
  steps.per_step = 3;
  // 20 steps of 100, step 8 takes 900 (a checkpoint), step 14 takes 250 (over twice the median).
  Ns t = 1000;
  for (int k = 1; k <= 21; ++k) {
    steps.anchor_starts.push_back(t);
    t += k == 8 ? 900 : k == 14 ? 250 : 100;
  }
  GapReport checkpoint;
  checkpoint.device = "h/GPU-0";
  checkpoint.start = 7 * 100 + 50;  // since the job start (1000): inside step 8
  checkpoint.length = 800;
  checkpoint.causes = {{Cause::kCheckpointing, 760}, {Cause::kUnknown, 40}};
  GapReport elsewhere = checkpoint;  // the same time on another device: not the step's
  elsewhere.device = "h/GPU-1";
  elsewhere.length = 850;
  elsewhere.causes = {{Cause::kCommunication, 850}};
  StepsReport r = ReportSteps(steps, false, "gemm", 7, 1000, {elsewhere, checkpoint}, {"h/GPU-0"});
  EXPECT_EQ(r.source, StepSource::kGpuActivity);
  EXPECT_EQ(r.anchor, "gemm");
  EXPECT_EQ(r.pid, 7u);
  EXPECT_EQ(r.first_start, 0);
  ASSERT_EQ(r.durations.size(), 20u);
  EXPECT_EQ(r.median, 100);
  EXPECT_EQ(r.max, 900);
  ASSERT_EQ(r.slowest.size(), 2u);
  EXPECT_EQ(r.slowest[0].number, 8u);
  EXPECT_EQ(r.slowest[0].start, 700);
  EXPECT_EQ(r.slowest[0].gap_ns, 800);
  EXPECT_EQ(r.slowest[0].cause, Cause::kCheckpointing);
  EXPECT_EQ(r.slowest[0].cause_ns, 760);
  EXPECT_EQ(r.slowest[1].number, 14u);
  EXPECT_EQ(r.slowest[1].gap_ns, 0);
}

}  // namespace
}  // namespace idlescope
