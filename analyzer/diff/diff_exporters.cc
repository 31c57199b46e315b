#include "analyzer/diff/diff_exporters.h"

#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzer/report/escape.h"
#include "analyzer/report/html_page.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/units.h"

namespace idlescope {

// --- Words --------------------------------------------------------------------------------

std::string NormalizationText(const Normalization& n) {
  std::string detail;
  switch (n.basis) {
    case StepBasis::kKernel:
      detail =
          absl::StrFormat("steps = launches of the most frequent kernel %s: %d before, %d after",
                          n.kernel, n.before_steps, n.after_steps);
      break;
    case StepBasis::kNcclCollectives:
      detail =
          absl::StrFormat("steps = NCCL collectives on the main communicator: %d before, %d after",
                          n.before_steps, n.after_steps);
      break;
    case StepBasis::kNone:
      if (n.kernel_check == KernelCheck::kMissingInAfter) {
        detail = absl::StrFormat(
            "AFTER never runs BEFORE's most frequent kernel %s: compared per run", n.kernel);
      } else if (n.kernel_check == KernelCheck::kGridChanged) {
        detail = absl::StrFormat(
            "steps differ in size (kernel %s: %d blocks before, %d after, a batch size change): "
            "compared per run",
            n.kernel, n.before_grid, n.after_grid);
      } else {
        detail = "no steps recognized (no compute kernels, no NCCL collectives)";
      }
      break;
  }
  const bool have_steps = n.before_steps > 0 && n.after_steps > 0;
  switch (n.choice) {
    case NormalizationChoice::kPerRun:
      detail = absl::StrCat("per run (--per-run); ", detail);
      break;
    case NormalizationChoice::kPerStep:
      if (!have_steps) detail = absl::StrCat("per run (--per-step: ", detail, ")");
      break;
    case NormalizationChoice::kAuto:
      if (have_steps && !n.per_step) {
        detail = absl::StrCat("per run: both runs have the same number of steps (", detail, ")");
      }
      break;
  }
  if (n.per_step) detail = absl::StrCat("per step: ", detail);
  return detail;
}

std::string GateLabel(const GateResult& g) {
  if (g.kind == GateKind::kFailIfSlower)
    return absl::StrFormat("fail-if-slower %g%%", g.threshold_pct);
  return absl::StrFormat("fail-if-cause-grows %s:%g%%", InfoOf(g.cause).name, g.threshold_pct);
}

std::string StepChangeText(const StepChange& c, std::string_view statistic) {
  if (!c.measured) return "not measured (fewer steps than needed in a run)";
  return absl::StrFormat(
      "%s%s%+.1f%% (%g%% confidence interval %+.1f%% .. %+.1f%%): %s", statistic,
      statistic.empty() ? "" : " ", 100 * c.change, 100 * c.confidence, 100 * c.low, 100 * c.high,
      c.significant() ? (c.change > 0 ? "significantly slower" : "significantly faster")
                      : "no significant change");
}

std::string GateDetail(const GateResult& g) {
  const char* unit = g.per_step ? " per step" : "";
  std::optional<double> rel = g.value.relative();
  if (g.kind == GateKind::kFailIfSlower && g.on_steps) {
    return absl::StrFormat("step time %s -> %s, %+.1f%%%s; mean step %+.1f%%",
                           AutoTime(g.value.before), AutoTime(g.value.after),
                           g.measured_pct.value_or(0), g.not_significant ? ", not significant" : "",
                           g.mean_pct.value_or(0));
  }
  if (g.kind == GateKind::kFailIfSlower && g.on_runs) {
    return absl::StrFormat("mean wall time of the runs %s -> %s, %+.1f%%%s",
                           AutoTime(g.value.before), AutoTime(g.value.after),
                           g.measured_pct.value_or(0),
                           g.not_significant ? ", not significant" : "");
  }
  if (g.kind == GateKind::kFailIfSlower) {
    return rel ? absl::StrFormat("wall time%s %+.1f%% (no steps: no confidence interval)", unit,
                                 100 * *rel)
               : "BEFORE has no wall time";
  }
  std::string detail = absl::StrFormat("%s%s %s -> %s (%s)", InfoOf(g.cause).name, unit,
                                       AutoTime(g.value.before), AutoTime(g.value.after),
                                       rel ? absl::StrFormat("%+.1f%%", 100 * *rel) : "new");
  if (g.below_noise) absl::StrAppend(&detail, ", below the noise floor of ", AutoTime(g.noise_ns));
  if (g.on_runs) absl::StrAppend(&detail, ", mean of the runs");
  if (g.not_significant) absl::StrAppend(&detail, ", not significant");
  return detail;
}

// --- Text -------------------------------------------------------------------------------------

namespace {

std::string Relative(const DiffValue& v) {
  std::optional<double> rel = v.relative();
  if (!rel) return v.after == 0 ? "" : "new";
  return absl::StrFormat("%+.1f%%", 100 * *rel);
}

void Row(std::string* out, std::string_view label, const DiffValue& v, const TimeUnit& u) {
  absl::StrAppendFormat(out, "  %-34s %12s %12s %12s %9s\n", label, Time(v.before, u),
                        Time(v.after, u), SignedTime(v.change(), u), Relative(v));
}

void UtilRow(std::string* out, std::string_view label, const DiffValue& v) {
  absl::StrAppendFormat(out, "  %-34s %11.1f%% %11.1f%% %+10.1f pp\n", label, 100 * v.before,
                        100 * v.after, 100 * v.change());
}

}  // namespace

std::string FormatTextDiff(const JobDiff& d) {
  std::string out;
  auto runs = [](const RunSummary& r) {
    return r.run_spans.size() > 1 ? absl::StrFormat(", mean of %d runs", r.run_spans.size())
                                  : std::string();
  };
  absl::StrAppendFormat(&out, "idlescope diff\n  before: %s (%s, %d device%s%s)\n", d.before.input,
                        AutoTime(static_cast<double>(d.before.span)), d.before.devices,
                        d.before.devices == 1 ? "" : "s", runs(d.before));
  absl::StrAppendFormat(&out, "  after:  %s (%s, %d device%s%s)\n", d.after.input,
                        AutoTime(static_cast<double>(d.after.span)), d.after.devices,
                        d.after.devices == 1 ? "" : "s", runs(d.after));
  if (d.wall_runs.measured) {
    absl::StrAppendFormat(&out, "mean wall time of the runs: %s\n",
                          StepChangeText(d.wall_runs, ""));
  }
  absl::StrAppendFormat(&out, "normalization: %s\n\n", NormalizationText(d.normalization));
  const bool per_step = d.normalization.per_step;
  absl::StrAppendFormat(&out, "  %-34s %12s %12s %12s %9s\n", per_step ? "(per step)" : "(per run)",
                        "before", "after", "change", "relative");
  const TimeUnit u = TimeUnitFor(d.wall.before);
  Row(&out, "wall time (job span)", d.wall, u);
  Row(&out, "GPU compute busy (all devices)", d.compute, u);
  UtilRow(&out, "utilization, paper (compute)", d.compute_util);
  UtilRow(&out, "utilization, nvidia-smi (any kernel)", d.kernel_active_util);
  Row(&out, "idle GPU time (all causes)", d.idle, u);
  for (const CauseDiff& c : d.causes) {
    Row(&out, absl::StrCat("  ", std::string(InfoOf(c.cause).name)), c.idle, u);
  }
  out += "\nsteps:";
  for (const auto& [side, r] : {std::pair{"before", &d.before}, std::pair{"after", &d.after}}) {
    const StepStats& st = r->step_stats;
    if (st.count == 0) {
      absl::StrAppendFormat(&out, "\n  %-6s none found", side);
      continue;
    }
    const std::string from = st.source == StepSource::kNvtx
                                 ? absl::StrCat("NVTX ranges ", EscapeControls(st.anchor))
                                 : absl::StrFormat("%d GPU activities each, from %s",
                                                   st.kernels_per_step, EscapeControls(st.anchor));
    absl::StrAppendFormat(
        &out, "\n  %-6s %d, step time %s (p25 %s), median %s, p90 %s, max %s (%s)", side, st.count,
        AutoTime(static_cast<double>(st.typical)), AutoTime(static_cast<double>(st.p25)),
        AutoTime(static_cast<double>(st.median)), AutoTime(static_cast<double>(st.p90)),
        AutoTime(static_cast<double>(st.max)), from);
  }
  if (d.steps_differ) {
    out +=
        "\nstep time: not compared: the runs' steps hold different work (found differently, or "
        "another batch size)\n";
  } else {
    absl::StrAppendFormat(&out, "\nstep time: %s\nmean step: %s\n", StepChangeText(d.step_time, ""),
                          StepChangeText(d.mean_step_time, ""));
  }
  if (d.speedup > 0) {
    absl::StrAppendFormat(&out, "\nspeedup: %.2fx (wall time%s, before / after)\n", d.speedup,
                          per_step ? " per step" : "");
  } else {
    out += "\nspeedup: unknown (AFTER has no wall time)\n";
  }
  if (!d.causes.empty()) {
    // The cause that changed most, in the direction of the result: what the fix did.
    const CauseDiff* largest = &d.causes.front();
    for (const CauseDiff& c : d.causes) {
      if (std::fabs(c.idle.change()) > std::fabs(largest->idle.change())) largest = &c;
    }
    std::optional<double> rel = largest->idle.relative();
    absl::StrAppendFormat(
        &out, "largest change: %s %s (%s)\n", InfoOf(largest->cause).name,
        SignedTime(largest->idle.change(), TimeUnitFor(std::fabs(largest->idle.change()))),
        rel ? absl::StrFormat("%s by %.1f%%", *rel < 0 ? "reduced" : "grown", 100 * std::fabs(*rel))
            : "new in AFTER");
  }
  if (!d.gates.empty()) {
    out += "\ngates:\n";
    for (const GateResult& g : d.gates) {
      absl::StrAppendFormat(&out, "  %-44s %s  (%s)\n", GateLabel(g), g.tripped ? "TRIPPED" : "ok",
                            GateDetail(g));
    }
    absl::StrAppendFormat(&out, "result: %s (exit %d)\n",
                          d.tripped() ? "regression: a gate tripped" : "ok", d.exit_code());
  }
  return out;
}

// --- JSON -------------------------------------------------------------------------------------

namespace {

void Relative(JsonWriter& j, const DiffValue& v) {
  std::optional<double> rel = v.relative();
  if (rel) {
    j.Ratio(*rel);
  } else {
    j.Null();
  }
}

void TimeValue(JsonWriter& j, std::string_view key, const DiffValue& v) {
  j.Key(key);
  j.BeginObject();
  j.Key("before_ns");
  j.Int(std::llround(v.before));
  j.Key("after_ns");
  j.Int(std::llround(v.after));
  j.Key("change_ns");
  j.Int(std::llround(v.change()));
  j.Key("relative");
  Relative(j, v);
  j.EndObject();
}

void RatioValue(JsonWriter& j, std::string_view key, const DiffValue& v) {
  j.Key(key);
  j.BeginObject();
  j.Key("before");
  j.Ratio(v.before);
  j.Key("after");
  j.Ratio(v.after);
  j.Key("change");
  j.Ratio(v.change());
  j.EndObject();
}

void Run(JsonWriter& j, std::string_view key, const RunSummary& r, uint64_t steps) {
  j.Key(key);
  j.BeginObject();
  j.Key("input");
  j.String(r.input);
  j.Key("runs");
  j.Uint(r.run_spans.size());
  j.Key("span_ns");
  j.Int(r.span);
  j.Key("devices");
  j.Uint(r.devices);
  j.Key("gpu_time_ns");
  j.Int(r.gpu_time);
  j.Key("compute_ns");
  j.Int(r.compute_ns);
  j.Key("idle_ns");
  j.Int(r.idle_ns);
  j.Key("compute_util");
  j.Ratio(r.compute_util);
  j.Key("kernel_active_util");
  j.Ratio(r.kernel_active_util);
  j.Key("steps");
  j.Uint(steps);
  j.Key("step_times");
  j.BeginObject();
  j.Key("count");
  j.Uint(r.step_stats.count);
  j.Key("anchor");
  if (r.step_stats.count > 0) {
    j.String(r.step_stats.anchor);
  } else {
    j.Null();
  }
  j.Key("kernels_per_step");
  j.Uint(r.step_stats.kernels_per_step);
  j.Key("source");
  j.String(StepSourceName(r.step_stats.source));
  j.Key("step_time_ns");
  j.Int(r.step_stats.typical);
  j.Key("p25_ns");
  j.Int(r.step_stats.p25);
  j.Key("median_ns");
  j.Int(r.step_stats.median);
  j.Key("p90_ns");
  j.Int(r.step_stats.p90);
  j.Key("max_ns");
  j.Int(r.step_stats.max);
  j.EndObject();
  j.Key("idle_by_cause_ns");
  j.BeginObject();
  for (int i = 0; i < kCauseCount; ++i) {
    if (r.cause_ns[i] == 0) continue;
    j.Key(InfoOf(static_cast<Cause>(i)).name);
    j.Int(r.cause_ns[i]);
  }
  j.EndObject();
  j.EndObject();
}

}  // namespace

namespace {

// A change with its interval: {measured, change_pct, ci_low_pct, ci_high_pct}.
void StepChangeJson(JsonWriter& j, std::string_view key, const StepChange& c) {
  j.Key(key);
  j.BeginObject();
  j.Key("measured");
  j.Bool(c.measured);
  j.Key("change_pct");
  j.Fixed(100 * c.change, 2);
  j.Key("ci_low_pct");
  j.Fixed(100 * c.low, 2);
  j.Key("ci_high_pct");
  j.Fixed(100 * c.high, 2);
  j.EndObject();
}

}  // namespace

std::string FormatJsonDiff(const JobDiff& d) {
  JsonWriter j;
  j.BeginObject();
  j.Key("schema_version");
  j.Int(kDiffSchemaVersion);
  j.Key("tool");
  j.String("idlescope " IDLESCOPE_VERSION);
  Run(j, "before", d.before, d.normalization.before_steps);
  Run(j, "after", d.after, d.normalization.after_steps);
  j.Key("normalization");
  j.BeginObject();
  j.Key("unit");
  j.String(d.normalization.per_step ? "step" : "run");
  j.Key("basis");
  j.String(StepBasisName(d.normalization.basis));
  j.Key("before_steps");
  j.Uint(d.normalization.before_steps);
  j.Key("after_steps");
  j.Uint(d.normalization.after_steps);
  j.Key("detail");
  j.String(NormalizationText(d.normalization));
  j.EndObject();
  TimeValue(j, "wall", d.wall);
  TimeValue(j, "compute_busy", d.compute);
  TimeValue(j, "idle", d.idle);
  j.Key("utilization");
  j.BeginObject();
  RatioValue(j, "compute", d.compute_util);
  RatioValue(j, "kernel_active", d.kernel_active_util);
  j.EndObject();
  j.Key("causes");
  j.BeginArray();
  for (const CauseDiff& c : d.causes) {
    j.BeginObject();
    j.Key("cause");
    j.String(InfoOf(c.cause).name);
    TimeValue(j, "idle", c.idle);
    j.EndObject();
  }
  j.EndArray();
  j.Key("speedup");
  j.Ratio(d.speedup);
  j.Key("step_time");
  j.BeginObject();
  j.Key("steps_differ");
  j.Bool(d.steps_differ);
  j.Key("measured");
  j.Bool(d.step_time.measured);
  j.Key("change_pct");
  j.Fixed(100 * d.step_time.change, 2);
  j.Key("ci_low_pct");
  j.Fixed(100 * d.step_time.low, 2);
  j.Key("ci_high_pct");
  j.Fixed(100 * d.step_time.high, 2);
  j.Key("confidence");
  j.Fixed(d.step_time.confidence, 3);
  j.Key("significant");
  j.Bool(d.step_time.significant());
  j.EndObject();
  StepChangeJson(j, "wall_runs", d.wall_runs);
  StepChangeJson(j, "mean_step_time", d.mean_step_time);
  j.Key("gates");
  j.BeginArray();
  for (const GateResult& g : d.gates) {
    j.BeginObject();
    j.Key("gate");
    j.String(GateKindName(g.kind));
    j.Key("cause");
    if (g.kind == GateKind::kFailIfCauseGrows) {
      j.String(InfoOf(g.cause).name);
    } else {
      j.Null();
    }
    j.Key("threshold_pct");
    j.Fixed(g.threshold_pct, 2);
    j.Key("measured_pct");
    if (g.measured_pct) {
      j.Fixed(*g.measured_pct, 2);
    } else {
      j.Null();
    }
    j.Key("tripped");
    j.Bool(g.tripped);
    j.Key("on_steps");
    j.Bool(g.on_steps);
    j.Key("on_runs");
    j.Bool(g.on_runs);
    j.Key("significant");
    j.Bool(!g.not_significant);
    j.Key("detail");
    j.String(GateDetail(g));
    j.EndObject();
  }
  j.EndArray();
  j.Key("result");
  j.String(d.tripped() ? "regression" : "ok");
  j.Key("exit_code");
  j.Int(d.exit_code());
  j.EndObject();
  return j.Finish();
}

// --- Markdown (a CI job's summary page)
// -----------------------------------------------------------

namespace {

// A table cell: no pipe, no line break, no markup of its own.
std::string Cell(std::string_view text) {
  std::string out;
  for (char c : EscapeControls(text)) {
    if (c == '|' || c == '\\' || c == '*' || c == '_' || c == '`' || c == '<' || c == '>') {
      out += '\\';
    }
    out += c;
  }
  return out;
}

void MarkdownRow(std::string* out, std::string_view label, const DiffValue& v, const TimeUnit& u) {
  absl::StrAppendFormat(out, "| %s | %s | %s | %s | %s |\n", Cell(label), Time(v.before, u),
                        Time(v.after, u), SignedTime(v.change(), u), Relative(v));
}

}  // namespace

std::string FormatMarkdownDiff(const JobDiff& d) {
  std::string out = "## idlescope diff\n\n";
  if (!d.gates.empty()) {
    absl::StrAppendFormat(&out, "**Result: %s** (exit %d)\n\n",
                          d.tripped() ? "regression, a gate tripped" : "ok", d.exit_code());
    out += "| gate | verdict | measured |\n|---|---|---|\n";
    for (const GateResult& g : d.gates) {
      absl::StrAppendFormat(&out, "| %s | %s | %s |\n", Cell(GateLabel(g)),
                            g.tripped ? "**tripped**" : "ok", Cell(GateDetail(g)));
    }
    out += "\n";
  }
  absl::StrAppendFormat(&out, "Before: %s; after: %s.\n\n", Cell(d.before.input),
                        Cell(d.after.input));
  absl::StrAppendFormat(&out, "Step time: %s; mean step: %s.\n\n",
                        Cell(StepChangeText(d.step_time, "")),
                        Cell(StepChangeText(d.mean_step_time, "")));
  const TimeUnit u = TimeUnitFor(d.wall.before);
  absl::StrAppendFormat(&out,
                        "| %s | before | after | change | relative |\n|---|---|---|---|---|\n",
                        d.normalization.per_step ? "per step" : "per run");
  MarkdownRow(&out, "wall time (job span)", d.wall, u);
  MarkdownRow(&out, "GPU compute busy (all devices)", d.compute, u);
  MarkdownRow(&out, "idle GPU time (all causes)", d.idle, u);
  for (const CauseDiff& c : d.causes) MarkdownRow(&out, InfoOf(c.cause).name, c.idle, u);
  out += "\n";
  absl::StrAppendFormat(&out, "Normalization: %s.\n", Cell(NormalizationText(d.normalization)));
  return out;
}

// --- JUnit XML (one test case per gate) ---------------------------------------------------------

namespace {

// XML text: markup escaped as in HTML, control characters (which XML 1.0 forbids) as \xNN.
std::string Xml(std::string_view text) { return HtmlEscape(EscapeControls(text)); }

}  // namespace

std::string FormatJunitDiff(const JobDiff& d) {
  int failures = 0;
  for (const GateResult& g : d.gates) failures += g.tripped;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  absl::StrAppendFormat(&out, "<testsuites name=\"idlescope diff\" tests=\"%d\" failures=\"%d\">\n",
                        d.gates.size(), failures);
  absl::StrAppendFormat(&out,
                        "  <testsuite name=\"idlescope diff\" tests=\"%d\" failures=\"%d\" "
                        "errors=\"0\" skipped=\"0\">\n",
                        d.gates.size(), failures);
  absl::StrAppendFormat(&out, "    <properties>\n      <property name=\"before\" value=\"%s\"/>\n",
                        Xml(d.before.input));
  absl::StrAppendFormat(&out, "      <property name=\"after\" value=\"%s\"/>\n",
                        Xml(d.after.input));
  absl::StrAppendFormat(&out,
                        "      <property name=\"step_time\" value=\"%s\"/>\n    </properties>\n",
                        Xml(StepChangeText(d.step_time)));
  for (const GateResult& g : d.gates) {
    absl::StrAppendFormat(&out, "    <testcase classname=\"idlescope.diff\" name=\"%s\"",
                          Xml(GateLabel(g)));
    if (!g.tripped) {
      absl::StrAppendFormat(&out, ">\n      <system-out>%s</system-out>\n    </testcase>\n",
                            Xml(GateDetail(g)));
      continue;
    }
    absl::StrAppendFormat(&out,
                          ">\n      <failure message=\"%s\" type=\"regression\">%s</failure>\n"
                          "    </testcase>\n",
                          Xml(GateDetail(g)), Xml(GateDetail(g)));
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

namespace {

const FormatExporter<JobDiff> kText("text", FormatTextDiff);
const FormatExporter<JobDiff> kJson("json", FormatJsonDiff);
const FormatExporter<JobDiff> kHtml("html", FormatHtmlDiff);
const FormatExporter<JobDiff> kMarkdown("markdown", FormatMarkdownDiff);
const FormatExporter<JobDiff> kJunit("junit", FormatJunitDiff);
const std::array<const Exporter<JobDiff>*, 5> kExporters = {&kText, &kJson, &kHtml, &kMarkdown,
                                                            &kJunit};

}  // namespace

const Exporter<JobDiff>* FindDiffExporter(std::string_view name) {
  return FindExporter<JobDiff>(kExporters, name);
}

std::string DiffExporterNames() { return ExporterNames<JobDiff>(kExporters); }

}  // namespace idlescope
