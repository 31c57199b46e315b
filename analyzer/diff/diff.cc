#include "analyzer/diff/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace idlescope {

// --- Inputs -----------------------------------------------------------------------------------

RunSummary SummarizeRun(std::string input, const JobReport& report, StepCensus steps) {
  RunSummary s;
  s.input = std::move(input);
  s.span = report.span;
  s.devices = static_cast<uint32_t>(report.devices.size());
  s.gpu_time = report.gpu_time;
  for (const DeviceReport& d : report.devices) s.compute_ns += d.compute_ns;
  for (const CauseReport& c : report.causes) s.cause_ns[Index(c.cause)] += c.ns;
  for (Ns ns : s.cause_ns) s.idle_ns += ns;
  s.compute_util = report.compute_util;
  s.kernel_active_util = report.kernel_active_util;
  s.steps = std::move(steps);
  return s;
}

// --- Gates ------------------------------------------------------------------------------------

absl::StatusOr<CauseGate> ParseCauseGate(std::string_view spec) {
  size_t colon = spec.rfind(':');
  if (colon == std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", std::string(spec), "': expected CAUSE:PCT, e.g. checkpointing:10"));
  }
  std::string_view name = spec.substr(0, colon);
  std::optional<Cause> cause = CauseByName(name);
  if (!cause) {
    std::string names;
    for (Cause c : kAllCauses) {
      absl::StrAppend(&names, names.empty() ? "" : ", ", std::string(InfoOf(c).name));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown cause '", std::string(name), "' (causes: ", names, ")"));
  }
  std::string number(spec.substr(colon + 1));
  char* end = nullptr;
  double pct = std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || !(pct >= 0) || !std::isfinite(pct)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", std::string(spec), "': PCT must be a non-negative number"));
  }
  return CauseGate{*cause, pct};
}

std::optional<double> DiffValue::relative() const {
  if (before == 0) return std::nullopt;
  return (after - before) / before;
}

bool JobDiff::tripped() const {
  return std::any_of(gates.begin(), gates.end(), [](const GateResult& g) { return g.tripped; });
}

// --- Normalization ----------------------------------------------------------------------------

namespace {

const KernelCount* FindKernel(const StepCensus& census, std::string_view name) {
  for (const KernelCount& k : census.kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

// Blocks per launch within 1.5x of each other: the same step shape. A batch size change scales
// the grid of every per-sample kernel, so its steps are not comparable one to one.
bool SameGrid(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return true;
  return static_cast<double>(std::max(a, b)) <= 1.5 * static_cast<double>(std::min(a, b));
}

}  // namespace

Normalization ChooseNormalization(const StepCensus& before, const StepCensus& after,
                                  NormalizationChoice choice) {
  Normalization n;
  n.choice = choice;
  // The repeating compute kernel comes first: a communication fix (bucketing, overlap) changes
  // the number of collectives per step while every step still runs the same compute kernels,
  // so counting collectives would credit the fix with the bucketing (11x instead of 1.4x on
  // examples/cuda/allreduce). Collectives are the fallback when the kernels cannot tell.
  if (!before.kernels.empty()) {
    const KernelCount& top = before.kernels.front();
    const KernelCount* match = FindKernel(after, top.name);
    n.kernel = top.name;
    n.before_grid = top.median_grid;
    if (match == nullptr) {
      n.kernel_check = KernelCheck::kMissingInAfter;
    } else if (!SameGrid(top.median_grid, match->median_grid)) {
      n.kernel_check = KernelCheck::kGridChanged;
      n.after_grid = match->median_grid;
    } else {
      n.kernel_check = KernelCheck::kCounted;
      n.after_grid = match->median_grid;
      n.basis = StepBasis::kKernel;
      n.before_steps = top.count;
      n.after_steps = match->count;
    }
  }
  if (n.basis == StepBasis::kNone && before.nccl_collectives > 0 && after.nccl_collectives > 0 &&
      n.kernel_check != KernelCheck::kGridChanged) {
    n.basis = StepBasis::kNcclCollectives;
    n.before_steps = before.nccl_collectives;
    n.after_steps = after.nccl_collectives;
  }
  const bool have_steps = n.before_steps > 0 && n.after_steps > 0;
  switch (choice) {
    case NormalizationChoice::kPerRun:
      n.per_step = false;
      break;
    case NormalizationChoice::kPerStep:
      n.per_step = have_steps;
      break;
    case NormalizationChoice::kAuto:
      n.per_step = have_steps && n.before_steps != n.after_steps;
      break;
  }
  return n;
}

std::string_view StepBasisName(StepBasis basis) {
  switch (basis) {
    case StepBasis::kNone:
      return "none";
    case StepBasis::kKernel:
      return "kernel";
    case StepBasis::kNcclCollectives:
      return "nccl_collectives";
  }
  return "none";
}

std::string_view GateKindName(GateKind kind) {
  return kind == GateKind::kFailIfSlower ? "fail_if_slower" : "fail_if_cause_grows";
}

// --- Comparison -------------------------------------------------------------------------------

JobDiff CompareRuns(const RunSummary& before, const RunSummary& after, const DiffOptions& options) {
  JobDiff d;
  d.before = before;
  d.after = after;
  d.normalization = ChooseNormalization(before.steps, after.steps, options.normalization);
  const double b_unit =
      d.normalization.per_step ? static_cast<double>(d.normalization.before_steps) : 1;
  const double a_unit =
      d.normalization.per_step ? static_cast<double>(d.normalization.after_steps) : 1;
  auto ns = [&](Ns b, Ns a) {
    return DiffValue{static_cast<double>(b) / b_unit, static_cast<double>(a) / a_unit};
  };
  d.wall = ns(before.span, after.span);
  d.compute = ns(before.compute_ns, after.compute_ns);
  d.idle = ns(before.idle_ns, after.idle_ns);
  d.compute_util = {before.compute_util, after.compute_util};
  d.kernel_active_util = {before.kernel_active_util, after.kernel_active_util};
  for (int i = 0; i < kCauseCount; ++i) {
    if (before.cause_ns[i] == 0 && after.cause_ns[i] == 0) continue;
    d.causes.push_back({static_cast<Cause>(i), ns(before.cause_ns[i], after.cause_ns[i])});
  }
  std::stable_sort(d.causes.begin(), d.causes.end(), [](const CauseDiff& x, const CauseDiff& y) {
    return std::max(x.idle.before, x.idle.after) > std::max(y.idle.before, y.idle.after);
  });
  d.speedup = d.wall.after > 0 ? d.wall.before / d.wall.after : 0;

  if (options.fail_if_slower_pct) {
    GateResult g;
    g.kind = GateKind::kFailIfSlower;
    g.threshold_pct = *options.fail_if_slower_pct;
    g.value = d.wall;
    g.per_step = d.normalization.per_step;
    std::optional<double> rel = d.wall.relative();
    if (rel) g.measured_pct = 100 * *rel;
    g.tripped = rel && 100 * *rel > g.threshold_pct;
    d.gates.push_back(g);
  }
  const double noise = options.cause_noise_fraction * d.wall.before;
  for (const CauseGate& gate : options.cause_gates) {
    GateResult g;
    g.kind = GateKind::kFailIfCauseGrows;
    g.cause = gate.cause;
    g.threshold_pct = gate.pct;
    g.value = ns(before.cause_ns[Index(gate.cause)], after.cause_ns[Index(gate.cause)]);
    g.per_step = d.normalization.per_step;
    std::optional<double> rel = g.value.relative();
    if (rel) g.measured_pct = 100 * *rel;
    bool grew = rel ? 100 * *rel > gate.pct : g.value.after > 0;
    g.tripped = grew && g.value.change() > noise;
    g.below_noise = grew && !g.tripped;
    g.noise_ns = noise;
    d.gates.push_back(g);
  }
  return d;
}

}  // namespace idlescope
