#include "analyzer/diff/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace idlescope {

// --- Inputs -----------------------------------------------------------------------------------

namespace {
double StepTime(std::vector<double>& v);  // below, "Steps"
}  // namespace

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
  std::vector<Ns> sorted = s.steps.steps.durations;
  if (!sorted.empty()) {
    std::sort(sorted.begin(), sorted.end());
    StepStats& st = s.step_stats;
    st.count = sorted.size();
    st.source = s.steps.steps.source;
    st.anchor = s.steps.steps.anchor;
    st.kernels_per_step = s.steps.steps.kernels_per_step;
    st.p25 = sorted[sorted.size() / 4];
    std::vector<double> all(sorted.begin(), sorted.end());
    st.typical = static_cast<Ns>(StepTime(all));
    st.median = sorted[sorted.size() / 2];
    st.p90 = sorted[std::min(sorted.size() - 1, sorted.size() * 9 / 10)];
    st.max = sorted.back();
  }
  s.run_steps = {s.steps.steps.durations};
  s.run_spans = {s.span};
  s.run_causes = {s.cause_ns};
  return s;
}

RunSummary CombineRuns(std::string input, std::vector<RunSummary> runs) {
  if (runs.size() == 1) {
    runs[0].input = std::move(input);
    return std::move(runs[0]);
  }
  const double n = static_cast<double>(runs.size());
  auto mean = [&](auto field) {
    double sum = 0;
    for (const RunSummary& r : runs) sum += static_cast<double>(field(r));
    return sum / n;
  };
  RunSummary s;
  s.input = std::move(input);
  s.span = static_cast<Ns>(mean([](const RunSummary& r) { return r.span; }));
  s.devices = runs[0].devices;
  s.gpu_time = static_cast<Ns>(mean([](const RunSummary& r) { return r.gpu_time; }));
  s.compute_ns = static_cast<Ns>(mean([](const RunSummary& r) { return r.compute_ns; }));
  s.idle_ns = static_cast<Ns>(mean([](const RunSummary& r) { return r.idle_ns; }));
  s.compute_util = mean([](const RunSummary& r) { return r.compute_util; });
  s.kernel_active_util = mean([](const RunSummary& r) { return r.kernel_active_util; });
  for (int i = 0; i < kCauseCount; ++i) {
    s.cause_ns[i] = static_cast<Ns>(mean([i](const RunSummary& r) { return r.cause_ns[i]; }));
  }
  // The first run's census and way of finding steps; the steps of every run found alike.
  StepCensus census = runs[0].steps;
  census.steps.durations.clear();
  std::vector<std::vector<Ns>> per_run;
  for (const RunSummary& r : runs) {
    s.run_spans.push_back(r.span);
    s.run_causes.push_back(r.cause_ns);
    const Steps& st = r.steps.steps;
    if (st.source != census.steps.source || st.anchor != census.steps.anchor ||
        st.kernels_per_step != census.steps.kernels_per_step) {
      continue;
    }
    census.steps.durations.insert(census.steps.durations.end(), st.durations.begin(),
                                  st.durations.end());
    per_run.push_back(st.durations);
  }
  RunSummary pooled = SummarizeRun(s.input, JobReport{}, std::move(census));
  s.steps = std::move(pooled.steps);
  s.step_stats = pooled.step_stats;
  s.run_steps = std::move(per_run);
  return s;
}

// --- Steps ------------------------------------------------------------------------------------

namespace {

// The steps one resample draws from: all of them, or kMaxBootstrapSteps evenly spaced, in order.
std::vector<double> Population(const std::vector<Ns>& steps) {
  std::vector<double> out;
  const size_t n = steps.size(), take = std::min(n, kMaxBootstrapSteps);
  out.reserve(take);
  for (size_t k = 0; k < take; ++k) out.push_back(static_cast<double>(steps[k * n / take]));
  return out;
}

// One moving-block bootstrap resample of `from` into `into` (its size): blocks of `block`
// consecutive steps from random starts, so that runs of slow steps (contention lasts a while)
// stay together and the interval reflects them.
void Resample(const std::vector<double>& from, size_t block, std::mt19937_64& rng,
              std::vector<double>& into) {
  std::uniform_int_distribution<size_t> start(0, from.size() - block);
  for (size_t i = 0; i < into.size();) {
    size_t s = start(rng);
    for (size_t k = 0; k < block && i < into.size(); ++k) into[i++] = from[s + k];
  }
}

size_t BlockLength(size_t steps) {
  return std::max<size_t>(1, static_cast<size_t>(std::cbrt(static_cast<double>(steps)) + 0.5));
}

// The step time the comparison rests on (reorders `v`): the typical step, the 25th percentile,
// plus the excess of the outlier steps, those over kOutlierSteps typical ones, per step. A loaded
// machine only adds time, to some steps, a few time slices each (a busy core): the faster quarter
// of the steps is what the job's own work takes, and it moves when that work changes (every step
// then takes longer, the fast ones too). A step many times longer than the typical one is the
// job's own (a checkpoint, an evaluation, a stall): its excess counts in full. Measured on
// simgpu's host_transfer beside two busy loops: the median of identical runs moved 3.9 -> 5.0 ms
// with the share of slowed steps (the slowest 5.4 typical ones), this statistic 3.890 -> 3.898 ms;
// 25% more bytes per step moved it 10.6% (docs/diff.md, "The slower gate").
double StepTime(std::vector<double>& v) {
  auto at = v.begin() + static_cast<ptrdiff_t>(v.size() / 4);
  std::nth_element(v.begin(), at, v.end());
  const double typical = *at;
  double excess = 0;
  for (double x : v) {
    if (x > kOutlierSteps * typical) excess += x - typical;
  }
  return typical + excess / static_cast<double>(v.size());
}

double Mean(std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// One resample of a side: runs drawn with replacement (all of them when there is one), each drawn
// run's steps drawn in blocks (Resample), put together into `into`.
void ResampleRuns(const std::vector<std::vector<double>>& runs, std::mt19937_64& rng,
                  std::vector<double>& scratch, std::vector<double>& into) {
  into.clear();
  std::uniform_int_distribution<size_t> pick(0, runs.size() - 1);
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::vector<double>& run = runs.size() == 1 ? runs[0] : runs[pick(rng)];
    scratch.resize(run.size());
    Resample(run, BlockLength(run.size()), rng, scratch);
    into.insert(into.end(), scratch.begin(), scratch.end());
  }
}

// The change of `statistic` (which may reorder its argument) of the pooled steps, with its
// bootstrap interval.
template <typename Statistic>
StepChange Bootstrap(const std::vector<std::vector<double>>& b,
                     const std::vector<std::vector<double>>& a, double confidence,
                     Statistic statistic) {
  StepChange c;
  c.confidence = confidence;
  auto pool = [](const std::vector<std::vector<double>>& runs) {
    std::vector<double> all;
    for (const auto& r : runs) all.insert(all.end(), r.begin(), r.end());
    return all;
  };
  std::vector<double> pooled_b = pool(b), pooled_a = pool(a);
  const double sb = statistic(pooled_b), sa = statistic(pooled_a);
  if (sb <= 0) return c;
  c.measured = true;
  c.change = sa / sb - 1;
  std::mt19937_64 rng(1);
  std::vector<double> scratch;
  std::vector<double> ratios;
  ratios.reserve(kBootstrapResamples);
  for (int r = 0; r < kBootstrapResamples; ++r) {
    ResampleRuns(b, rng, scratch, pooled_b);
    ResampleRuns(a, rng, scratch, pooled_a);
    const double rb = statistic(pooled_b);
    if (rb > 0) ratios.push_back(statistic(pooled_a) / rb - 1);
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - confidence) / 2;
  const size_t n = ratios.size();
  c.low = ratios[std::min(n - 1, static_cast<size_t>(tail * static_cast<double>(n)))];
  c.high = ratios[std::min(n - 1, static_cast<size_t>((1 - tail) * static_cast<double>(n)))];
  return c;
}

// A side's runs with enough steps, each its Population.
std::vector<std::vector<double>> Populations(const RunSteps& runs) {
  std::vector<std::vector<double>> out;
  for (const std::vector<Ns>& r : runs) {
    if (r.size() >= kMinDiffSteps) out.push_back(Population(r));
  }
  return out;
}

}  // namespace

StepChange CompareSteps(const RunSteps& before, const RunSteps& after, double confidence) {
  const std::vector<std::vector<double>> b = Populations(before), a = Populations(after);
  if (b.empty() || a.empty()) return StepChange{.confidence = confidence};
  return Bootstrap(b, a, confidence, StepTime);
}

StepChange CompareMeanSteps(const RunSteps& before, const RunSteps& after, double confidence) {
  const std::vector<std::vector<double>> b = Populations(before), a = Populations(after);
  if (b.empty() || a.empty()) return StepChange{.confidence = confidence};
  return Bootstrap(b, a, confidence, Mean);
}

namespace {

// The regularized incomplete beta function I_x(a, b), from its continued fraction (modified
// Lentz), evaluated where it converges fast (x below the mean a / (a + b), else by symmetry).
double IncompleteBeta(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - IncompleteBeta(1 - x, b, a);
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x)) /
                       a;
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::abs(d) < kTiny ? kTiny : d);
  double f = d;
  for (int m = 1; m <= 300; ++m) {
    for (int odd = 0; odd < 2; ++odd) {
      const double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
      d = 1 + num * d;
      d = 1 / (std::abs(d) < kTiny ? kTiny : d);
      c = 1 + num / c;
      if (std::abs(c) < kTiny) c = kTiny;
      f *= c * d;
      if (odd && std::abs(c * d - 1) < 1e-12) return front * f;
    }
  }
  return front * f;
}

// P(T <= t) of Student's t with `df` degrees of freedom, t >= 0.
double StudentTCdf(double t, double df) {
  return 1 - 0.5 * IncompleteBeta(df / (df + t * t), df / 2, 0.5);
}

}  // namespace

double StudentTQuantile(double p, double df) {
  if (p <= 0.5) return 0;
  double lo = 0, hi = 1;
  while (StudentTCdf(hi, df) < p && hi < 1e9) hi *= 2;
  for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (StudentTCdf(mid, df) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

StepChange CompareRunMeans(const std::vector<Ns>& before, const std::vector<Ns>& after,
                           double confidence) {
  StepChange c{.confidence = confidence};
  if (before.size() < 2 || after.size() < 2) return c;
  struct Side {
    double mean = 0, var_of_mean = 0, n = 0;
  };
  auto side = [](const std::vector<Ns>& runs) {
    Side s;
    s.n = static_cast<double>(runs.size());
    for (Ns t : runs) s.mean += static_cast<double>(t) / s.n;
    double ss = 0;
    for (Ns t : runs) ss += (static_cast<double>(t) - s.mean) * (static_cast<double>(t) - s.mean);
    s.var_of_mean = ss / (s.n - 1) / s.n;
    return s;
  };
  const Side b = side(before), a = side(after);
  if (b.mean <= 0) return c;
  c.measured = true;
  c.change = a.mean / b.mean - 1;
  // Welch's interval for the difference of the means, relative to BEFORE's mean. A bootstrap
  // over 3 runs a side sees only 10 distinct resamples of each and calls any two sides that do
  // not overlap different (5% of identical pairs, before the threshold); Student's t with the
  // Welch-Satterthwaite degrees of freedom (about 4 for 3 identical-looking runs a side, a
  // quantile of 2.8 instead of 2.0) holds its confidence with few runs.
  const double var = b.var_of_mean + a.var_of_mean;
  double half = 0;
  if (var > 0) {
    const double df =
        var * var /
        (b.var_of_mean * b.var_of_mean / (b.n - 1) + a.var_of_mean * a.var_of_mean / (a.n - 1));
    half = StudentTQuantile(1 - (1 - confidence) / 2, df) * std::sqrt(var);
  }
  c.low = (a.mean - b.mean - half) / b.mean;
  c.high = (a.mean - b.mean + half) / b.mean;
  return c;
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

  // Step times compare only steps of the same work: found alike (the same marker, or the same
  // anchor and activities per step), and not a batch size change (the repeating kernel's grid).
  const StepStats& bs = before.step_stats;
  const StepStats& as = after.step_stats;
  d.steps_differ = bs.count > 0 && as.count > 0 &&
                   (bs.source != as.source || bs.anchor != as.anchor ||
                    bs.kernels_per_step != as.kernels_per_step ||
                    d.normalization.kernel_check == KernelCheck::kGridChanged);
  if (!d.steps_differ) {
    d.step_time = CompareSteps(before.run_steps, after.run_steps, options.confidence);
    d.mean_step_time = CompareMeanSteps(before.run_steps, after.run_steps, options.confidence);
  } else {
    d.step_time.confidence = d.mean_step_time.confidence = options.confidence;
  }
  d.wall_runs = CompareRunMeans(before.run_spans, after.run_spans, options.confidence);
  if (options.fail_if_slower_pct) {
    GateResult g;
    g.kind = GateKind::kFailIfSlower;
    g.threshold_pct = *options.fail_if_slower_pct;
    if (d.step_time.measured) {
      // The step time (StepTime) slower by more than the threshold, significantly.
      g.on_steps = true;
      g.per_step = true;
      g.value = {static_cast<double>(before.step_stats.typical),
                 static_cast<double>(after.step_stats.typical)};
      g.measured_pct = 100 * d.step_time.change;
      g.mean_pct = 100 * d.mean_step_time.change;
      const bool above = d.step_time.change > g.threshold_pct / 100;
      g.tripped = above && d.step_time.low > 0;
      g.not_significant = above && !g.tripped;
    } else if (d.wall_runs.measured && !d.normalization.per_step) {
      // Several runs a side, no steps to compare: their mean wall time, significantly.
      g.on_runs = true;
      g.value = d.wall;
      g.measured_pct = 100 * d.wall_runs.change;
      const bool above = d.wall_runs.change > g.threshold_pct / 100;
      g.tripped = above && d.wall_runs.low > 0;
      g.not_significant = above && !g.tripped;
    } else {
      g.value = d.wall;
      g.per_step = d.normalization.per_step;
      std::optional<double> rel = d.wall.relative();
      if (rel) g.measured_pct = 100 * *rel;
      g.tripped = rel && 100 * *rel > g.threshold_pct;
    }
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
    // Several runs a side (compared per run): the growth must also hold across the runs, its
    // Welch interval (CompareRunMeans) excluding no change.
    if (rel && !d.normalization.per_step && before.run_causes.size() >= 2 &&
        after.run_causes.size() >= 2) {
      std::vector<Ns> b, a;
      for (const auto& run : before.run_causes) b.push_back(run[Index(gate.cause)]);
      for (const auto& run : after.run_causes) a.push_back(run[Index(gate.cause)]);
      const StepChange c = CompareRunMeans(b, a, options.confidence);
      g.on_runs = true;
      g.not_significant = g.tripped && c.low <= 0;
      g.tripped = g.tripped && c.low > 0;
    }
    d.gates.push_back(g);
  }
  return d;
}

}  // namespace idlescope
