// idlescope diff [--format text|json|html] [-o FILE] [--per-step|--per-run]
//                [--fail-if-slower PCT] [--fail-if-cause-grows CAUSE:PCT]... BEFORE AFTER
//
// Analyzes two runs of a job (trace directories or files) with the same pipeline as
// `idlescope report`, and prints them side by side (analyzer/diff/diff.h, docs/diff.md). Exit
// status: 0 fine, 3 a gate tripped, 2 usage error, 1 an input is not a readable trace.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/cli/commands.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/cli/pipeline.h"
#include "analyzer/diff/diff.h"
#include "analyzer/diff/diff_exporters.h"
#include "analyzer/diff/step_census.h"

namespace idlescope {
namespace {

constexpr char kUsage[] =
    "usage: idlescope diff [--format text|json|html] [-o FILE] [--per-step|--per-run]\n"
    "                      [--fail-if-slower PCT] [--fail-if-cause-grows CAUSE:PCT]...\n"
    "                      [--min-gap MS] BEFORE AFTER\n"
    "  BEFORE, AFTER           trace directories (or single trace files) of two runs\n"
    "  --format FORMAT         text (default), json (machine-readable, schema: docs/diff.md)\n"
    "                          or html (one self-contained page)\n"
    "  --json                  the same as --format json\n"
    "  -o, --output FILE       write the diff to FILE instead of stdout\n"
    "  --per-step, --per-run   force the normalization (default: per step when both runs'\n"
    "                          steps are recognized and their counts differ)\n"
    "  --fail-if-slower PCT    exit 3 when AFTER's wall time is more than PCT% above BEFORE's\n"
    "  --fail-if-cause-grows CAUSE:PCT\n"
    "                          exit 3 when CAUSE's idle time grows by more than PCT%\n"
    "                          (repeatable; CAUSE as in `idlescope report --format json`)\n"
    "  --min-gap MS            as in `idlescope report` (default 1 ms)\n"
    "exit status: 0 fine, 3 a gate tripped, 2 usage error, 1 unreadable input\n";

// Runs the report pipeline on one side, with the step census fed by the same read of its files;
// nullopt (after printing why) when it cannot be read.
std::optional<RunSummary> Analyze(const std::string& input, const AnalysisOptions& options) {
  StepCensusSink census;
  absl::StatusOr<AnalyzedJob> job = AnalyzeJob({input}, {options, ReadOptions{}}, {&census});
  if (!job.ok()) {
    std::fprintf(stderr, "idlescope diff: %s\n", std::string(job.status().message()).c_str());
    return std::nullopt;
  }
  return SummarizeRun(input, job->report, census.Census(job->symbols));
}

}  // namespace

int DiffCommand(int argc, char** argv) {
  const char* format = "text";
  std::string output;
  DiffOptions options;
  AnalysisOptions analysis_options;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "idlescope diff: %s needs a value\n", argv[i]);
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return kDiffExitOk;
    } else if (ParseFormatFlag(argc, argv, &i, &format)) {
      if (format == nullptr) {
        std::fprintf(stderr, "idlescope diff: --format needs a value (%s)\n",
                     DiffExporterNames().c_str());
        return kDiffExitUsage;
      }
    } else if (ParseOutputFlag(argc, argv, &i, &output)) {
      if (output.empty()) {
        std::fprintf(stderr, "idlescope diff: %s needs a file name\n", argv[i]);
        return kDiffExitUsage;
      }
    } else if (arg == "--per-step") {
      options.normalization = NormalizationChoice::kPerStep;
    } else if (arg == "--per-run") {
      options.normalization = NormalizationChoice::kPerRun;
    } else if (arg == "--fail-if-slower" || arg == "--min-gap") {
      const char* v = value();
      double number = 0;
      if (v == nullptr || !ParseNonNegative(v, &number)) {
        std::fprintf(stderr, "idlescope diff: %s needs a non-negative number\n", argv[i - 1]);
        return kDiffExitUsage;
      }
      if (arg == "--min-gap") {
        analysis_options.min_gap = static_cast<Ns>(number * 1e6);
      } else {
        options.fail_if_slower_pct = number;
      }
    } else if (arg == "--fail-if-cause-grows") {
      const char* v = value();
      if (v == nullptr) return kDiffExitUsage;
      absl::StatusOr<CauseGate> gate = ParseCauseGate(v);
      if (!gate.ok()) {
        std::fprintf(stderr, "idlescope diff: --fail-if-cause-grows %s\n",
                     std::string(gate.status().message()).c_str());
        return kDiffExitUsage;
      }
      options.cause_gates.push_back(*gate);
    } else if (arg.starts_with("-") && arg.size() > 1) {
      std::fprintf(stderr, "idlescope diff: unknown option '%s'\n%s", argv[i], kUsage);
      return kDiffExitUsage;
    } else {
      inputs.emplace_back(arg);
    }
  }
  if (inputs.size() != 2) {
    std::fprintf(stderr, "idlescope diff: expected BEFORE and AFTER, got %zu input%s\n%s",
                 inputs.size(), inputs.size() == 1 ? "" : "s", kUsage);
    return kDiffExitUsage;
  }
  const Exporter<JobDiff>* exporter = FindDiffExporter(format);
  if (exporter == nullptr) {
    std::fprintf(stderr, "idlescope diff: unknown format '%s' (formats: %s)\n", format,
                 DiffExporterNames().c_str());
    return kDiffExitUsage;
  }
  std::optional<RunSummary> before = Analyze(inputs[0], analysis_options);
  if (!before) return kDiffExitUnreadable;
  std::optional<RunSummary> after = Analyze(inputs[1], analysis_options);
  if (!after) return kDiffExitUnreadable;

  JobDiff diff = CompareRuns(*before, *after, options);
  StringOutput out;
  exporter->Start()->Write(diff, out);
  if (!WriteOutput("diff", output, out.text())) return kDiffExitUnreadable;
  for (const GateResult& g : diff.gates) {
    if (g.tripped)
      std::fprintf(stderr, "idlescope diff: gate tripped: %s: %s\n", GateLabel(g).c_str(),
                   GateDetail(g).c_str());
  }
  return diff.exit_code();
}

}  // namespace idlescope
