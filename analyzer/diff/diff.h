// The "diff" stage: compares two analyzed runs of a job (before and after a fix) and decides the
// CI gates of `idlescope diff`. Plain data in, plain data out, so every rule is testable on
// synthetic JobReports; docs/diff.md documents the output and the JSON schema (kDiffSchemaVersion).
//
// Steps (the report's, analysis/steps.h): when both runs' steps are found, the wall-time gate
// compares their step times, with a confidence interval from a bootstrap over the steps
// (StepChange), and trips only on a change both above its threshold and significant.
//
// Runs of different lengths (a fix run for fewer steps, a shorter benchmark) are compared per
// step when both runs' steps can be recognized the same way:
//   1. NCCL: the number of collectives on the main communicator (the one with the most; NCCL's
//      per-communicator sequence numbers count them, and every rank sees the same count);
//   2. a repeating kernel: the count of the most frequent compute kernel name of BEFORE, when
//      AFTER runs it too with blocks of about the same size (a different grid means a different
//      batch size: the steps hold different work, so the runs are compared whole).
// Otherwise, or when both runs have the same number of steps, they are compared per run.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzer/diff/step_census.h"
#include "analyzer/model/causes.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/job_report.h"

namespace idlescope {

inline constexpr int kDiffSchemaVersion = 1;

// Exit codes of `idlescope diff` (docs/diff.md).
inline constexpr int kDiffExitOk = 0;
inline constexpr int kDiffExitUnreadable = 1;
inline constexpr int kDiffExitUsage = 2;
inline constexpr int kDiffExitGateTripped = 3;

// One run, as the diff sees it.
// A run's step times, summarized (StepCensus::steps).
struct StepStats {
  uint64_t count = 0;  // steps measured
  StepSource source = StepSource::kNone;
  std::string anchor;  // what each step begins with (Steps::anchor)
  uint64_t kernels_per_step = 0;
  Ns p25 = 0;
  Ns typical = 0;  // the step time the comparison rests on (StepChange)
  Ns median = 0;
  Ns p90 = 0;
  Ns max = 0;
};

struct RunSummary {
  std::string input;  // what the user named (directory or files)
  Ns span = 0;        // job span: wall time of the job
  uint32_t devices = 0;
  Ns gpu_time = 0;    // span x devices
  Ns compute_ns = 0;  // GPU compute busy, summed over devices
  Ns idle_ns = 0;     // sum of the causes
  double compute_util = 0;
  double kernel_active_util = 0;
  std::array<Ns, kCauseCount> cause_ns{};
  StepCensus steps;
  StepStats step_stats;
  // Several runs of one side (CombineRuns): each run's step times and wall time; the figures above
  // are their means, the steps above all of them. One run: its own.
  std::vector<std::vector<Ns>> run_steps;
  std::vector<Ns> run_spans;
  std::vector<std::array<Ns, kCauseCount>> run_causes;  // each run's idle time by cause
};

RunSummary SummarizeRun(std::string input, const JobReport& report, StepCensus steps);
// One side of several runs of the job (a directory of run directories): the mean of their
// figures, their steps together (the first run's way of finding them; a run whose steps were
// found otherwise adds none), and each run's steps and wall time for the intervals.
RunSummary CombineRuns(std::string input, std::vector<RunSummary> runs);

enum class NormalizationChoice { kAuto, kPerStep, kPerRun };

struct CauseGate {
  Cause cause = Cause::kUnknown;
  double pct = 0;
};

struct DiffOptions {
  NormalizationChoice normalization = NormalizationChoice::kAuto;
  std::optional<double> fail_if_slower_pct;
  std::vector<CauseGate> cause_gates;
  // A cause that grows by less than this fraction of BEFORE's wall time never trips its gate:
  // a cause absent before and a few microseconds after is noise, not a regression.
  double cause_noise_fraction = 0.005;
  // Of the step time's confidence interval (StepChange).
  double confidence = 0.95;
};

// Steps each run needs for the step-time comparison.
inline constexpr uint64_t kMinDiffSteps = 10;
// Bootstrap resamples, and the most steps of a run one resample draws from (evenly spaced ones
// past that).
inline constexpr int kBootstrapResamples = 2000;
inline constexpr size_t kMaxBootstrapSteps = 20000;

// Steps longer than this many typical ones (25th percentile) are the job's own outliers (a
// checkpoint, an evaluation): the step time counts their excess (diff.cc, StepTime).
inline constexpr double kOutlierSteps = 10;

// The change of the step time, AFTER against BEFORE: the ratio of the runs' step times less 1
// (the typical step, the 25th percentile, plus the excess of outlier steps: a loaded machine
// slows some steps by a few time slices, neither the fast quarter nor by 10 times: diff.cc,
// StepTime), and
// its confidence interval from a moving-block bootstrap over steps (each run's steps drawn in
// blocks of cbrt(steps) consecutive ones, with replacement, kBootstrapResamples times, the ratio
// each time; the interval holds the middle `confidence` of them). Deterministic: a fixed seed.
struct StepChange {
  bool measured = false;  // both runs have kMinDiffSteps steps or more
  double change = 0;
  double low = 0;
  double high = 0;
  double confidence = 0;
  // The interval excludes no change.
  bool significant() const { return measured && (low > 0 || high < 0); }
};

// Each side: its runs' step times. With several runs the bootstrap draws runs with replacement,
// then blocks of each drawn run's steps: the runs' spread widens the interval.
using RunSteps = std::vector<std::vector<Ns>>;
StepChange CompareSteps(const RunSteps& before, const RunSteps& after, double confidence);
// The same for the mean step time: what every step's time, a loaded machine's contention
// included, adds up to.
StepChange CompareMeanSteps(const RunSteps& before, const RunSteps& after, double confidence);
// The mean of a figure of several runs per side (at least 2 each: their wall times, a cause's idle
// time), with Welch's interval (Student's t, the sides' variances apart): a few runs a side is the
// common case, where a bootstrap over the runs is far too narrow.
StepChange CompareRunMeans(const std::vector<Ns>& before, const std::vector<Ns>& after,
                           double confidence);
// The p-quantile (p > 0.5) of Student's t distribution with `df` (> 0, not only whole) degrees
// of freedom.
double StudentTQuantile(double p, double df);

// "checkpointing:10" -> {kCheckpointing, 10}. Cause names as in the report's JSON.
absl::StatusOr<CauseGate> ParseCauseGate(std::string_view spec);

// How the steps were counted.
enum class StepBasis : uint8_t {
  kNone,             // no steps recognized: compared per run
  kKernel,           // launches of BEFORE's most frequent compute kernel
  kNcclCollectives,  // collectives on the main communicator
};

// What the repeating-kernel rule found.
enum class KernelCheck : uint8_t {
  kNoKernels,       // BEFORE ran no compute kernel
  kCounted,         // AFTER runs BEFORE's most frequent kernel with about the same grid
  kMissingInAfter,  // AFTER never runs it
  kGridChanged,     // it runs with a different grid: a batch size change, steps not comparable
};

// The normalization chosen, and why (the exporters say it in words: diff/diff_exporters.h).
struct Normalization {
  bool per_step = false;
  StepBasis basis = StepBasis::kNone;
  NormalizationChoice choice = NormalizationChoice::kAuto;  // what was asked
  KernelCheck kernel_check = KernelCheck::kNoKernels;
  std::string kernel;        // BEFORE's most frequent compute kernel ("" when none)
  uint64_t before_grid = 0;  // its median grid in each run (kGridChanged)
  uint64_t after_grid = 0;
  uint64_t before_steps = 0;  // 0 when no steps were recognized
  uint64_t after_steps = 0;
};

// One compared figure; times in ns per unit (per step or per run).
struct DiffValue {
  double before = 0;
  double after = 0;
  double change() const { return after - before; }
  // (after - before) / before; nullopt when before is 0.
  std::optional<double> relative() const;
};

struct CauseDiff {
  Cause cause = Cause::kUnknown;
  DiffValue idle;
};

enum class GateKind : uint8_t { kFailIfSlower, kFailIfCauseGrows };

struct GateResult {
  GateKind kind = GateKind::kFailIfSlower;
  Cause cause = Cause::kUnknown;  // kFailIfCauseGrows
  double threshold_pct = 0;
  bool tripped = false;
  std::optional<double> measured_pct;  // nullopt: before was 0
  DiffValue value;                     // wall time, or the cause's idle time, per unit
  bool per_step = false;               // the figures are per step
  // kFailIfCauseGrows: the cause grew past the threshold, but by less than the noise floor.
  bool below_noise = false;
  double noise_ns = 0;
  // kFailIfSlower on the step time (JobDiff::step_time) instead of the wall time (docs/diff.md,
  // "The slower gate"): it trips when the change is above the threshold and significant.
  bool on_steps = false;
  // On the mean of several runs per side, when compared per run: kFailIfSlower on their wall
  // time (JobDiff::wall_runs) when no steps are compared, kFailIfCauseGrows on the cause's idle
  // time; either trips above the threshold and significant (an interval over the runs).
  bool on_runs = false;
  std::optional<double> mean_pct;  // the mean step's change (shown, not gated)
  bool not_significant = false;    // above the threshold, but the interval includes no change
};

// Stable identifiers (JSON): "none", "kernel", "nccl_collectives"; "fail_if_slower",
// "fail_if_cause_grows".
std::string_view StepBasisName(StepBasis basis);
std::string_view GateKindName(GateKind kind);

struct JobDiff {
  RunSummary before;
  RunSummary after;
  Normalization normalization;
  DiffValue wall;          // job span
  DiffValue compute;       // GPU compute busy
  DiffValue idle;          // all causes
  DiffValue compute_util;  // ratios: never normalized
  DiffValue kernel_active_util;
  std::vector<CauseDiff> causes;  // non-zero in either run, largest (either run) first
  double speedup = 0;             // before wall / after wall (per unit); 0 when unknown
  // The runs' steps are not the same work (found differently, other activities per step, or the
  // repeating kernel's grid changed: a batch size change): their times are not compared.
  bool steps_differ = false;
  StepChange step_time;       // the step time's change (StepTime: what the gate compares)
  StepChange mean_step_time;  // the mean step time's change (shown, not gated)
  StepChange wall_runs;       // several runs per side: the mean wall time's change
  std::vector<GateResult> gates;
  bool tripped() const;
  int exit_code() const { return tripped() ? kDiffExitGateTripped : kDiffExitOk; }
};

Normalization ChooseNormalization(const StepCensus& before, const StepCensus& after,
                                  NormalizationChoice choice);

JobDiff CompareRuns(const RunSummary& before, const RunSummary& after, const DiffOptions& options);

}  // namespace idlescope
