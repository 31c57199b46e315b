// The step census as a sink (diff/step_census.h), fed records directly: per communicator and per
// kernel name the most any one process saw, the median grid, names resolved after the read.
#include "analyzer/diff/step_census.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace idlescope {
namespace {

class Names : public SymbolSource {
 public:
  std::map<std::pair<uint32_t, uint64_t>, std::string> strings;
  std::string String(uint32_t process, uint64_t id) const override {
    auto it = strings.find({process, id});
    return it == strings.end() ? "" : it->second;
  }
  std::vector<SymbolFrame> Stack(uint32_t, uint64_t) const override { return {}; }
};

void Kernel(StepCensusSink& sink, uint32_t process, uint64_t name, uint64_t grid, bool nccl = false,
            GpuActivityKind kind = GPU_KERNEL) {
  GpuRecord r;
  r.process = process;
  r.kind = kind;
  r.name_id = name;
  r.grid = grid;
  r.nccl = nccl;
  sink.AddGpuRecord(r);
}

void Collective(StepCensusSink& sink, uint32_t process, uint64_t comm) {
  HostEvent e;
  e.process = process;
  e.type = NCCL_COLLECTIVE;
  e.comm = comm;
  sink.AddHostEvent(e);
}

TEST(StepCensus, MostPerProcessMedianGridAndNamesFromEachProcess) {
  StepCensusSink sink;
  sink.AddProcess(0, {});
  sink.AddProcess(1, {});
  // Process 0 runs "gemm" 5 times (grids 8, 8, 8, 16, 16), process 1 (its own name ids) 3 times.
  for (uint64_t grid : {8, 16, 8, 16, 8}) Kernel(sink, 0, 1, grid);
  for (int i = 0; i < 3; ++i) Kernel(sink, 1, 7, 32);
  Kernel(sink, 0, 2, 4);                     // "relu" once
  Kernel(sink, 0, 3, 4, /*nccl=*/true);      // NCCL kernels are no steps
  Kernel(sink, 0, 1, 4, false, GPU_MEMCPY);  // nor copies
  Kernel(sink, 1, 9, 4);                     // a name its file never defined
  for (int i = 0; i < 4; ++i) Collective(sink, 0, 0xa);
  for (int i = 0; i < 6; ++i) Collective(sink, 1, 0xa);
  for (int i = 0; i < 6; ++i) Collective(sink, 1, 0x5);  // a tie: the smaller id is main

  Names names;
  names.strings[{0, 1}] = "gemm";
  names.strings[{0, 2}] = "relu";
  names.strings[{1, 7}] = "gemm";
  StepCensus census = sink.Census(names);
  EXPECT_EQ(census.nccl_collectives, 6u);
  EXPECT_EQ(census.nccl_comm, 0x5u);
  ASSERT_EQ(census.kernels.size(), 3u);
  EXPECT_EQ(census.kernels[0].name, "gemm");
  EXPECT_EQ(census.kernels[0].count, 5u);  // the most by one process, not the sum
  EXPECT_EQ(census.kernels[0].median_grid, 8u);
  EXPECT_EQ(census.kernels[1].count, 1u);
  EXPECT_EQ(census.kernels[2].count, 1u);
  bool unnamed = false;
  for (const KernelCount& k : census.kernels) unnamed |= k.name == "kernel#9";
  EXPECT_TRUE(unnamed);
}

TEST(StepCensus, KeepsAtMostEightKernelsMostFrequentFirst) {
  StepCensusSink sink;
  sink.AddProcess(0, {});
  Names names;
  for (uint64_t id = 1; id <= 12; ++id) {
    names.strings[{0, id}] = "k" + std::to_string(id);
    for (uint64_t i = 0; i < id; ++i) Kernel(sink, 0, id, 1);
  }
  StepCensus census = sink.Census(names);
  ASSERT_EQ(census.kernels.size(), kMaxCensusKernels);
  EXPECT_EQ(census.kernels[0].name, "k12");
  EXPECT_EQ(census.kernels[0].count, 12u);
  EXPECT_EQ(census.kernels.back().count, 5u);
}

}  // namespace
}  // namespace idlescope

// --- FindSteps: the training steps of a GPU activity sequence -----------------------------------

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
  ASSERT_EQ(found->durations.size(), 19u);
  EXPECT_EQ(found->durations[0], 101 * 10 + 20);  // the step after an even one: +30 at its end
  EXPECT_EQ(found->durations[1], 101 * 10);
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
  EXPECT_EQ(found->durations.size(), 29u);
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
  EXPECT_EQ(found->durations.size(), 99u);
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

TEST(StepCensus, StepsAreTheMainProcessesCopiesAndKernels) {
  StepCensusSink sink;
  sink.AddProcess(0, {});
  sink.AddProcess(1, {});
  Names names;
  names.strings[{1, 7}] = "layer";
  Ns t = 0;
  for (int step = 0; step < 12; ++step) {  // process 1: a pageable batch copy, then 3 layers
    GpuRecord copy;
    copy.process = 1;
    copy.kind = GPU_MEMCPY;
    copy.copy_kind = COPY_H2D;
    copy.start = t;
    sink.AddGpuRecord(copy);
    for (int l = 0; l < 3; ++l) {
      GpuRecord k;
      k.process = 1;
      k.kind = GPU_KERNEL;
      k.name_id = 7;
      k.grid = 64;
      k.start = t + 100 + 10 * l;
      sink.AddGpuRecord(k);
    }
    t += step == 5 ? 2000 : 1000;
  }
  StepCensus census = sink.Census(names);
  EXPECT_EQ(census.steps.anchor, "GPU_MEMCPY:COPY_H2D");
  EXPECT_EQ(census.steps.kernels_per_step, 4u);
  ASSERT_EQ(census.steps.durations.size(), 11u);
  EXPECT_EQ(census.steps.durations[5], 2000);
  EXPECT_EQ(census.steps.durations[6], 1000);
}

}  // namespace
}  // namespace idlescope

namespace idlescope {
namespace {

TEST(StepMarkerName, TheStepNumberIsDropped) {
  EXPECT_EQ(StepMarkerName("ProfilerStep#12"), "ProfilerStep");
  EXPECT_EQ(StepMarkerName("train_step#0"), "train_step");
  EXPECT_EQ(StepMarkerName("step 3"), "step");
  EXPECT_EQ(StepMarkerName("iteration_41"), "iteration");
  EXPECT_EQ(StepMarkerName("forward"), "forward");
  EXPECT_EQ(StepMarkerName("fp16"), "fp");  // a name ending in digits is a numbered step too
}

TEST(StepCensus, NvtxRangesComeBeforeTheGpuWork) {
  StepCensusSink sink;
  sink.AddProcess(0, {});
  Names names;
  for (int step = 0; step < 8; ++step) {
    HostEvent range;
    range.process = 0;
    range.type = NVTX_RANGE;
    range.start = step * 1000 + (step == 3 ? 500 : 0);
    range.end = range.start + 400;
    range.count = 1;
    std::string name = "ProfilerStep#" + std::to_string(step);
    range.path = name;
    sink.AddHostEvent(range);
    HostEvent nested = range;  // depth 2: never a step
    nested.count = 2;
    nested.path = "forward";
    sink.AddHostEvent(nested);
  }
  StepCensus census = sink.Census(names);
  EXPECT_EQ(census.steps.source, Steps::Source::kNvtx);
  EXPECT_EQ(census.steps.anchor, "ProfilerStep");
  ASSERT_EQ(census.steps.durations.size(), 7u);
  EXPECT_EQ(census.steps.durations[2], 1500);
  EXPECT_EQ(census.steps.durations[3], 500);
  StepCensusSink forward;
  forward.AddProcess(0, {});
  forward.SetStepMarker("forward");
  HostEvent nested;
  nested.type = NVTX_RANGE;
  nested.count = 2;
  nested.end = 10;
  nested.path = "forward";
  for (int i = 0; i < 8; ++i) forward.AddHostEvent(nested);
  EXPECT_EQ(forward.Census(names).steps.source, Steps::Source::kNone);
}

}  // namespace
}  // namespace idlescope
