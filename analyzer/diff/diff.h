// The "diff" stage: compares two analyzed runs of a job (before and after a fix) and decides the
// CI gates of `idlescope diff`. Plain data in, plain data out, so every rule is testable on
// synthetic JobReports; docs/diff.md documents the output and the JSON schema (kDiffSchemaVersion).
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
};

RunSummary SummarizeRun(std::string input, const JobReport& report, StepCensus steps);

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
};

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
  std::vector<GateResult> gates;
  bool tripped() const;
  int exit_code() const { return tripped() ? kDiffExitGateTripped : kDiffExitOk; }
};

Normalization ChooseNormalization(const StepCensus& before, const StepCensus& after,
                                  NormalizationChoice choice);

JobDiff CompareRuns(const RunSummary& before, const RunSummary& after, const DiffOptions& options);

}  // namespace idlescope
