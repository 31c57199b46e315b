// Unit tests of the diff logic (analyzer/diff/diff.h) on synthetic run summaries: normalization
// choice, per-step figures, speedup, the CI gates and their exit code, the JSON shape.
#include "analyzer/diff/diff.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "analyzer/diff/diff_exporters.h"

namespace idlescope {
namespace {

constexpr Ns kMs = 1'000'000;
constexpr Ns kS = 1000 * kMs;

RunSummary MakeRun(Ns span, Ns compute, Ns checkpoint, Ns transfer, StepCensus steps = {}) {
  RunSummary r;
  r.input = "run";
  r.span = span;
  r.devices = 1;
  r.gpu_time = span;
  r.compute_ns = compute;
  r.cause_ns[Index(Cause::kCheckpointing)] = checkpoint;
  r.cause_ns[Index(Cause::kHostGpuTransfer)] = transfer;
  r.idle_ns = checkpoint + transfer;
  r.compute_util = static_cast<double>(compute) / static_cast<double>(span);
  r.kernel_active_util = r.compute_util;
  r.steps = std::move(steps);
  return r;
}

StepCensus KernelSteps(uint64_t count, uint64_t grid = 264) {
  StepCensus c;
  c.kernels.push_back({"layer_forward", count, grid});
  c.kernels.push_back({"other", count / 4, grid});
  return c;
}

TEST(DiffNormalization, KernelsWinOverBucketedCollectives) {
  // The fix buckets the all-reduce: 4 collectives per step instead of 1, same compute per step.
  StepCensus before = KernelSteps(400), after = KernelSteps(200);
  before.nccl_collectives = 100;
  after.nccl_collectives = 200;
  Normalization n = ChooseNormalization(before, after, NormalizationChoice::kAuto);
  EXPECT_TRUE(n.per_step);
  EXPECT_EQ(n.basis, StepBasis::kKernel);
  EXPECT_EQ(n.before_steps, 400u);
  EXPECT_EQ(n.after_steps, 200u);
}

TEST(DiffNormalization, NcclCollectivesWhenKernelsCannotTell) {
  StepCensus before, after;  // e.g. compute in a library CUPTI did not see
  before.nccl_collectives = 100;
  after.nccl_collectives = 50;
  Normalization n = ChooseNormalization(before, after, NormalizationChoice::kAuto);
  EXPECT_TRUE(n.per_step);
  EXPECT_EQ(n.basis, StepBasis::kNcclCollectives);
  EXPECT_EQ(n.kernel_check, KernelCheck::kNoKernels);
  EXPECT_EQ(n.before_steps, 100u);
  EXPECT_EQ(n.after_steps, 50u);
}

TEST(DiffNormalization, MostFrequentKernelWhenNoNccl) {
  Normalization n =
      ChooseNormalization(KernelSteps(400), KernelSteps(100), NormalizationChoice::kAuto);
  EXPECT_TRUE(n.per_step);
  EXPECT_EQ(n.basis, StepBasis::kKernel);
  EXPECT_EQ(n.kernel_check, KernelCheck::kCounted);
  EXPECT_EQ(n.kernel, "layer_forward");
  EXPECT_EQ(n.before_steps, 400u);
  EXPECT_EQ(n.after_steps, 100u);
}

TEST(DiffNormalization, SameStepCountIsPerRun) {
  Normalization n =
      ChooseNormalization(KernelSteps(400), KernelSteps(400), NormalizationChoice::kAuto);
  EXPECT_FALSE(n.per_step);
  EXPECT_EQ(n.basis, StepBasis::kKernel);
  EXPECT_EQ(n.before_steps, n.after_steps);
}

TEST(DiffNormalization, BatchSizeChangeIsPerRun) {
  // 32x larger grid: the fixed run's steps hold 32x the samples, steps are not comparable.
  Normalization n = ChooseNormalization(KernelSteps(4096, 32), KernelSteps(128, 1024),
                                        NormalizationChoice::kAuto);
  EXPECT_FALSE(n.per_step);
  EXPECT_EQ(n.kernel_check, KernelCheck::kGridChanged);
  EXPECT_EQ(n.before_grid, 32u);
  EXPECT_EQ(n.after_grid, 1024u);
  EXPECT_EQ(n.basis, StepBasis::kNone);
}

TEST(DiffNormalization, NoCommonKernelIsPerRun) {
  StepCensus after;
  after.kernels.push_back({"something_else", 100, 264});
  Normalization n = ChooseNormalization(KernelSteps(400), after, NormalizationChoice::kAuto);
  EXPECT_FALSE(n.per_step);
  EXPECT_EQ(n.basis, StepBasis::kNone);
  EXPECT_EQ(n.kernel_check, KernelCheck::kMissingInAfter);
}

TEST(DiffNormalization, ForcedChoices) {
  EXPECT_FALSE(ChooseNormalization(KernelSteps(400), KernelSteps(100), NormalizationChoice::kPerRun)
                   .per_step);
  EXPECT_TRUE(ChooseNormalization(KernelSteps(400), KernelSteps(400), NormalizationChoice::kPerStep)
                  .per_step);
  // --per-step without recognizable steps falls back to per run and says so.
  Normalization n = ChooseNormalization({}, {}, NormalizationChoice::kPerStep);
  EXPECT_FALSE(n.per_step);
  EXPECT_EQ(n.choice, NormalizationChoice::kPerStep);
}

TEST(DiffCompare, PerStepFiguresAndSpeedup) {
  // Before: 400 steps in 4 s with 1 s of checkpointing; after: 100 steps in 0.5 s, none.
  RunSummary before = MakeRun(4 * kS, 2 * kS, 1 * kS, 1 * kS, KernelSteps(400));
  RunSummary after = MakeRun(kS / 2, kS / 2, 0, 0, KernelSteps(100));
  JobDiff d = CompareRuns(before, after, {});
  ASSERT_TRUE(d.normalization.per_step);
  EXPECT_DOUBLE_EQ(d.wall.before, 10.0 * kMs);
  EXPECT_DOUBLE_EQ(d.wall.after, 5.0 * kMs);
  EXPECT_DOUBLE_EQ(d.speedup, 2.0);
  ASSERT_EQ(d.causes.size(), 2u);
  // Ordered by the larger of the two sides; both 1 s before: cause order breaks the tie.
  EXPECT_EQ(d.causes[0].cause, Cause::kHostGpuTransfer);
  EXPECT_EQ(d.causes[1].cause, Cause::kCheckpointing);
  EXPECT_DOUBLE_EQ(d.causes[1].idle.before, 2.5 * kMs);
  EXPECT_DOUBLE_EQ(*d.causes[1].idle.relative(), -1.0);
  EXPECT_FALSE(d.tripped());
  EXPECT_EQ(d.exit_code(), kDiffExitOk);
}

TEST(DiffCompare, PerRunWhenNoSteps) {
  JobDiff d = CompareRuns(MakeRun(4 * kS, 2 * kS, kS, 0), MakeRun(2 * kS, 2 * kS, 0, 0), {});
  EXPECT_FALSE(d.normalization.per_step);
  EXPECT_DOUBLE_EQ(d.wall.before, 4.0 * kS);
  EXPECT_DOUBLE_EQ(d.speedup, 2.0);
  EXPECT_DOUBLE_EQ(d.compute_util.before, 0.5);
  EXPECT_DOUBLE_EQ(d.compute_util.after, 1.0);
}

TEST(DiffGates, SlowerTripsOnlyAboveThreshold) {
  DiffOptions options;
  options.fail_if_slower_pct = 10;
  JobDiff ok =
      CompareRuns(MakeRun(10 * kS, kS, 0, 0), MakeRun(10 * kS + kS / 2, kS, 0, 0), options);
  ASSERT_EQ(ok.gates.size(), 1u);
  EXPECT_FALSE(ok.gates[0].tripped);
  EXPECT_NEAR(*ok.gates[0].measured_pct, 5.0, 1e-9);
  JobDiff slow = CompareRuns(MakeRun(10 * kS, kS, 0, 0), MakeRun(12 * kS, kS, 0, 0), options);
  EXPECT_TRUE(slow.gates[0].tripped);
  EXPECT_EQ(slow.exit_code(), kDiffExitGateTripped);
  EXPECT_NE(FormatTextDiff(slow).find("TRIPPED"), std::string::npos);
}

TEST(DiffGates, CauseGrowth) {
  DiffOptions options;
  options.cause_gates.push_back({Cause::kCheckpointing, 20});
  options.cause_gates.push_back({Cause::kHostGpuTransfer, 20});
  // checkpointing +50% trips; transfer +10% does not.
  JobDiff d = CompareRuns(MakeRun(10 * kS, kS, 2 * kS, kS),
                          MakeRun(11 * kS, kS, 3 * kS, kS + kS / 10), options);
  ASSERT_EQ(d.gates.size(), 2u);
  EXPECT_TRUE(d.gates[0].tripped);
  EXPECT_EQ(d.gates[0].kind, GateKind::kFailIfCauseGrows);
  EXPECT_EQ(d.gates[0].cause, Cause::kCheckpointing);
  EXPECT_FALSE(d.gates[1].tripped);
  EXPECT_EQ(d.exit_code(), kDiffExitGateTripped);
}

TEST(DiffGates, NewCauseTripsAboveNoiseFloorOnly) {
  DiffOptions options;
  options.cause_gates.push_back({Cause::kCheckpointing, 10});
  // 10 s wall: the floor is 50 ms. 1 ms of new checkpointing is noise; 1 s is not.
  JobDiff noise = CompareRuns(MakeRun(10 * kS, kS, 0, 0), MakeRun(10 * kS, kS, kMs, 0), options);
  EXPECT_FALSE(noise.gates[0].tripped);
  EXPECT_TRUE(noise.gates[0].below_noise);
  EXPECT_DOUBLE_EQ(noise.gates[0].noise_ns, 50.0 * kMs);
  EXPECT_FALSE(noise.gates[0].measured_pct.has_value());
  JobDiff real = CompareRuns(MakeRun(10 * kS, kS, 0, 0), MakeRun(11 * kS, kS, kS, 0), options);
  EXPECT_TRUE(real.gates[0].tripped);
}

TEST(DiffGates, ParseCauseGate) {
  absl::StatusOr<CauseGate> g = ParseCauseGate("checkpointing:12.5");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->cause, Cause::kCheckpointing);
  EXPECT_DOUBLE_EQ(g->pct, 12.5);
  EXPECT_FALSE(ParseCauseGate("checkpointing").ok());
  EXPECT_FALSE(ParseCauseGate("checkpointing:").ok());
  EXPECT_FALSE(ParseCauseGate("checkpointing:-3").ok());
  EXPECT_FALSE(ParseCauseGate("checkpointing:abc").ok());
  absl::StatusOr<CauseGate> bad = ParseCauseGate("disk:10");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("host_gpu_transfer"), std::string::npos);
}

TEST(DiffFormat, JsonCarriesSchemaNormalizationAndGates) {
  DiffOptions options;
  options.fail_if_slower_pct = 5;
  JobDiff d = CompareRuns(MakeRun(4 * kS, 2 * kS, kS, kS, KernelSteps(400)),
                          MakeRun(kS, kS / 2, 0, 0, KernelSteps(100)), options);
  std::string json = FormatJsonDiff(d);
  EXPECT_NE(json.find("\"schema_version\": 1"), std::string::npos);
  EXPECT_NE(json.find("\"unit\": \"step\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"basis\": \"kernel\""), std::string::npos);
  EXPECT_NE(json.find("\"cause\": \"checkpointing\""), std::string::npos);
  EXPECT_NE(json.find("\"speedup\": 1.0000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"gate\": \"fail_if_slower\""), std::string::npos);
  EXPECT_NE(json.find("\"result\": \"ok\""), std::string::npos);
  std::string text = FormatTextDiff(d);
  EXPECT_NE(text.find("normalization: per step"), std::string::npos) << text;
  EXPECT_NE(text.find("speedup: 1.00x"), std::string::npos) << text;
}

// The words of the diff come from its typed normalization and gates, in the exporter only.
TEST(DiffFormat, NormalizationAndGatesInWords) {
  Normalization n =
      ChooseNormalization(KernelSteps(400), KernelSteps(100), NormalizationChoice::kAuto);
  EXPECT_EQ(NormalizationText(n),
            "per step: steps = launches of the most frequent kernel layer_forward: 400 before, "
            "100 after");
  n = ChooseNormalization(KernelSteps(400), KernelSteps(400), NormalizationChoice::kAuto);
  EXPECT_EQ(NormalizationText(n),
            "per run: both runs have the same number of steps (steps = launches of the most "
            "frequent kernel layer_forward: 400 before, 400 after)");
  n = ChooseNormalization(KernelSteps(4096, 32), KernelSteps(128, 1024),
                          NormalizationChoice::kAuto);
  EXPECT_EQ(NormalizationText(n),
            "steps differ in size (kernel layer_forward: 32 blocks before, 1024 after, a batch "
            "size change): compared per run");
  StepCensus after;
  after.kernels.push_back({"something_else", 100, 264});
  n = ChooseNormalization(KernelSteps(400), after, NormalizationChoice::kPerRun);
  EXPECT_EQ(NormalizationText(n),
            "per run (--per-run); AFTER never runs BEFORE's most frequent kernel layer_forward: "
            "compared per run");
  n = ChooseNormalization({}, {}, NormalizationChoice::kPerStep);
  EXPECT_EQ(NormalizationText(n),
            "per run (--per-step: no steps recognized (no compute kernels, no NCCL "
            "collectives))");
  StepCensus nccl_before, nccl_after;
  nccl_before.nccl_collectives = 100;
  nccl_after.nccl_collectives = 50;
  n = ChooseNormalization(nccl_before, nccl_after, NormalizationChoice::kAuto);
  EXPECT_EQ(NormalizationText(n),
            "per step: steps = NCCL collectives on the main communicator: 100 before, 50 after");

  DiffOptions options;
  options.fail_if_slower_pct = 10;
  options.cause_gates.push_back({Cause::kCheckpointing, 10});
  JobDiff d = CompareRuns(MakeRun(10 * kS, kS, 0, 0), MakeRun(12 * kS, kS, kMs, 0), options);
  ASSERT_EQ(d.gates.size(), 2u);
  EXPECT_EQ(GateLabel(d.gates[0]), "fail-if-slower 10%");
  EXPECT_EQ(GateDetail(d.gates[0]), "wall time +20.0% (no steps: no confidence interval)");
  EXPECT_EQ(GateLabel(d.gates[1]), "fail-if-cause-grows checkpointing:10%");
  EXPECT_EQ(GateDetail(d.gates[1]),
            "checkpointing 0.0 us -> 1.00 ms (new), below the noise floor of 50.00 ms");
}

}  // namespace
}  // namespace idlescope

// --- CompareSteps: the step time's change and its confidence interval ---------------------------

namespace idlescope {
namespace {

std::vector<Ns> NoisySteps(size_t n, Ns base, uint64_t seed, double slow_share) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Ns> out;
  for (size_t i = 0; i < n; ++i) {
    double t = static_cast<double>(base) * (1 + 0.002 * u(rng));
    if (u(rng) < slow_share) t += static_cast<double>(base) * (0.25 + u(rng));  // a lost slice
    out.push_back(static_cast<Ns>(t));
  }
  return out;
}

TEST(CompareSteps, IdenticalRunsOnALoadedMachineShowNoChange) {
  // 60% and 40% of the steps slowed: the median moves, the fast quarter does not.
  StepChange c = CompareSteps({NoisySteps(300, 4'000'000, 1, 0.6)},
                              {NoisySteps(300, 4'000'000, 2, 0.4)}, 0.95);
  ASSERT_TRUE(c.measured);
  EXPECT_LT(std::fabs(c.change), 0.01);
  EXPECT_LT(c.low, 0.05);
}

TEST(CompareSteps, ATenPercentSlowerStepIsSignificant) {
  StepChange c = CompareSteps({NoisySteps(200, 4'000'000, 3, 0.1)},
                              {NoisySteps(200, 4'400'000, 4, 0.1)}, 0.95);
  ASSERT_TRUE(c.measured);
  EXPECT_NEAR(c.change, 0.10, 0.01);
  EXPECT_TRUE(c.significant());
  EXPECT_GT(c.low, 0.05);
  EXPECT_LE(c.low, c.change);
  EXPECT_GE(c.high, c.change);
}

TEST(CompareSteps, ACheckpointStepEveryTwentyStepsIsTheJobsOwn) {
  // AFTER stops every 20th step for 30 steps' time (a synchronous checkpoint): the typical step
  // is the same, the outliers' excess is 29/20 of a step per step.
  std::vector<Ns> before = NoisySteps(400, 4'000'000, 13, 0.3);
  std::vector<Ns> after = NoisySteps(400, 4'000'000, 14, 0.3);
  for (size_t i = 19; i < after.size(); i += 20) after[i] = 30 * 4'000'000;
  StepChange c = CompareSteps({before}, {after}, 0.95);
  ASSERT_TRUE(c.measured);
  EXPECT_NEAR(c.change, 29.0 / 20, 0.1);
  EXPECT_TRUE(c.significant());
}

TEST(CompareSteps, TooFewStepsAreNotMeasured) {
  EXPECT_FALSE(
      CompareSteps({NoisySteps(9, 1000, 5, 0)}, {NoisySteps(50, 1000, 6, 0)}, 0.95).measured);
}

// One run of `span` whose steps are `census`, summarized as `idlescope diff` does it.
RunSummary SummarizedRun(Ns span, const StepCensus& census) {
  RunSummary r = SummarizeRun("run", JobReport{}, census);
  r.span = span;
  r.steps = census;
  r.run_spans = {span};
  return r;
}

TEST(CompareRunMeans, StudentsQuantilesAsTabulated) {
  EXPECT_NEAR(StudentTQuantile(0.975, 1), 12.706, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.975, 2), 4.303, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.975, 4), 2.776, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.95, 10), 1.812, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.975, 1e6), 1.960, 1e-3);
  // Between df 2 (9.925) and 3 (5.841); 7.1637 by integrating the density numerically.
  EXPECT_NEAR(StudentTQuantile(0.995, 2.5), 7.1637, 1e-3);
}

TEST(CompareRunMeans, ThreeRunsASideThatDoNotOverlapButSpreadAreNotSignificant) {
  // A cause's idle time in three identical runs a side beside CPU hogs (ms): +11% on the mean,
  // every AFTER run above every BEFORE run, which a bootstrap over the runs calls significant.
  StepChange c = CompareRunMeans({594, 609, 597}, {640, 660, 700}, 0.95);
  ASSERT_TRUE(c.measured);
  EXPECT_NEAR(c.change, 2000.0 / 3 / 600 - 1, 1e-9);
  EXPECT_LT(c.low, 0);
  EXPECT_FALSE(c.significant());
  // The same growth, the runs of each side alike: significant.
  StepChange tight = CompareRunMeans({600, 602, 598}, {664, 668, 666}, 0.95);
  EXPECT_GT(tight.low, 0.09);
  EXPECT_LT(tight.high, 0.13);
  EXPECT_TRUE(tight.significant());
  // Identical runs: no interval width, no change.
  StepChange same = CompareRunMeans({600, 600}, {600, 600}, 0.95);
  EXPECT_TRUE(same.measured);
  EXPECT_FALSE(same.significant());
  EXPECT_FALSE(CompareRunMeans({600}, {600, 601}, 0.95).measured);
}

TEST(CompareRuns, TheSlowerGateComparesStepTimesWhenBothRunsHaveSteps) {
  auto run = [](Ns step, uint64_t seed) {
    StepCensus census;
    census.steps.durations = NoisySteps(200, step, seed, 0.5);
    return SummarizedRun(1'000'000'000, census);
  };
  DiffOptions options;
  options.fail_if_slower_pct = 5;
  RunSummary slower = run(4'400'000, 10);
  slower.span = 900'000'000;  // a shorter run: its wall time is no measure
  JobDiff tripped = CompareRuns(run(4'000'000, 9), slower, options);
  ASSERT_EQ(tripped.gates.size(), 1u);
  EXPECT_TRUE(tripped.gates[0].on_steps);
  EXPECT_TRUE(tripped.gates[0].tripped);
  EXPECT_NEAR(*tripped.gates[0].measured_pct, 10, 1);
  JobDiff same = CompareRuns(run(4'000'000, 11), run(4'000'000, 12), options);
  EXPECT_FALSE(same.gates[0].tripped);
  EXPECT_EQ(same.exit_code(), kDiffExitOk);
  EXPECT_EQ(tripped.exit_code(), kDiffExitGateTripped);
}

TEST(CompareRuns, StepsOfAnotherBatchSizeAreNotCompared) {
  auto run = [](uint64_t grid, Ns span, uint64_t seed) {
    StepCensus census;
    census.kernels = {{"gemm", 400, grid}};
    census.steps.source = StepSource::kGpuActivity;
    census.steps.anchor = "GPU_MEMCPY:COPY_H2D";
    census.steps.kernels_per_step = 9;
    census.steps.durations = NoisySteps(100, 4'000'000, seed, 0);
    return SummarizedRun(span, census);
  };
  DiffOptions options;
  options.fail_if_slower_pct = 5;
  // The fixed twin's 4x batch: steps of the same time, a quarter as many, a third of the wall.
  JobDiff d = CompareRuns(run(4096, 300'000'000, 15), run(1024, 900'000'000, 16), options);
  EXPECT_TRUE(d.steps_differ);
  EXPECT_FALSE(d.step_time.measured);
  ASSERT_EQ(d.gates.size(), 1u);
  EXPECT_FALSE(d.gates[0].on_steps);
  EXPECT_TRUE(d.gates[0].tripped);  // the wall time: 3x
}

TEST(CombineRuns, SeveralRunsWidenTheInterval) {
  // Three runs a side whose typical steps differ by up to 4% from run to run (another node, a
  // warmer cache): steps alone would call 2% significant, the runs' spread does not.
  auto run = [](Ns step, uint64_t seed) {
    StepCensus census;
    census.steps.source = StepSource::kGpuActivity;
    census.steps.anchor = "k";
    census.steps.kernels_per_step = 3;
    census.steps.durations = NoisySteps(200, step, seed, 0);
    JobReport report;
    report.span = 200 * step;
    return SummarizeRun("run", report, census);
  };
  std::vector<RunSummary> b, a;
  b.push_back(run(4'000'000, 20));
  b.push_back(run(4'160'000, 21));
  b.push_back(run(4'080'000, 22));
  a.push_back(run(4'160'000, 23));
  a.push_back(run(4'240'000, 24));
  a.push_back(run(4'080'000, 25));
  RunSummary before = CombineRuns("before", std::move(b)), after = CombineRuns("after", a);
  EXPECT_EQ(before.run_steps.size(), 3u);
  EXPECT_EQ(before.step_stats.count, 600u);
  StepChange pooled = CompareSteps(before.run_steps, after.run_steps, 0.95);
  ASSERT_TRUE(pooled.measured);
  EXPECT_LT(pooled.low, 0);  // the runs' spread: no significant change
  StepChange one = CompareSteps({before.run_steps[0]}, {after.run_steps[0]}, 0.95);
  EXPECT_GT(one.low, 0);  // one run a side: 4% and significant
  StepChange walls = CompareRunMeans(before.run_spans, after.run_spans, 0.95);
  ASSERT_TRUE(walls.measured);
  EXPECT_NEAR(walls.change, (4'160'000 + 4'240'000 + 4'080'000) / 12'240'000.0 - 1, 1e-6);
}

TEST(CombineRuns, ACauseGateTripsOnlyOnAGrowthThatHoldsAcrossTheRuns) {
  auto side = [](std::vector<Ns> checkpoints) {
    std::vector<RunSummary> runs;
    for (Ns c : checkpoints) runs.push_back(MakeRun(10 * kS, 5 * kS, c, 0));
    return CombineRuns("side", std::move(runs));
  };
  DiffOptions options;
  options.cause_gates.push_back({Cause::kCheckpointing, 5});
  // +10% on the mean, the runs 40% apart: not significant.
  JobDiff noisy = CompareRuns(side({1000 * kMs, 1400 * kMs, 600 * kMs}),
                              side({1600 * kMs, 700 * kMs, 1000 * kMs}), options);
  ASSERT_EQ(noisy.gates.size(), 1u);
  EXPECT_TRUE(noisy.gates[0].on_runs);
  EXPECT_TRUE(noisy.gates[0].not_significant);
  EXPECT_FALSE(noisy.tripped());
  EXPECT_NE(GateDetail(noisy.gates[0]).find("not significant"), std::string::npos);
  // +30% in every run: significant.
  JobDiff grown = CompareRuns(side({1000 * kMs, 1010 * kMs, 990 * kMs}),
                              side({1300 * kMs, 1310 * kMs, 1290 * kMs}), options);
  EXPECT_TRUE(grown.gates[0].tripped);
  EXPECT_FALSE(grown.gates[0].not_significant);
  // One run a side: the threshold and the noise floor, no interval.
  JobDiff one = CompareRuns(MakeRun(10 * kS, 5 * kS, 1000 * kMs, 0),
                            MakeRun(10 * kS, 5 * kS, 1100 * kMs, 0), options);
  EXPECT_TRUE(one.gates[0].tripped);
  EXPECT_FALSE(one.gates[0].on_runs);
}

}  // namespace
}  // namespace idlescope
