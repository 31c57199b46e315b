// idlescope diff [--format text|json|html|markdown|junit] [-o FILE] [--per-step|--per-run]
//                [--min-gap MS] [--fail-if-slower PCT] [--confidence PCT]
//                [--fail-if-cause-grows CAUSE:PCT]... BEFORE AFTER
//
// Analyzes two runs of a job (trace directories or files) with the same pipeline as
// `idlescope report`, and prints them side by side (analyzer/diff/diff.h, docs/diff.md). Exit
// status: 0 fine, 3 a gate tripped, 2 usage error, 1 an input is not a readable trace or the
// diff cannot be written.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/input_copies.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/cli/pipeline.h"
#include "analyzer/diff/diff.h"
#include "analyzer/diff/diff_exporters.h"
#include "analyzer/diff/step_census.h"

namespace idlescope {
namespace {

constexpr char kUsage[] =
    "usage: idlescope diff [--format text|json|html|markdown|junit] [-o FILE]\n"
    "                      [--per-step|--per-run] [--fail-if-slower PCT [--confidence PCT]]\n"
    "                      [--fail-if-cause-grows CAUSE:PCT]... [--step-marker NAME]\n"
    "                      [--min-gap MS] BEFORE AFTER\n"
    "  BEFORE, AFTER           trace directories (or single trace files) of two runs\n"
    "  --format FORMAT         text (default), json (machine-readable, schema: docs/diff.md),\n"
    "                          html (one self-contained page), markdown (a CI job's summary\n"
    "                          page) or junit (JUnit XML: one test case per gate)\n"
    "  --json                  the same as --format json\n"
    "  -o, --output FILE       write the diff to FILE instead of stdout\n"
    "  --per-step, --per-run   force the normalization (default: per step when both runs'\n"
    "                          steps are recognized and their counts differ)\n"
    "  --fail-if-slower PCT    exit 3 when AFTER is more than PCT% slower than BEFORE: its\n"
    "                          median step time, and significantly (see --confidence), when\n"
    "                          both runs' steps are found; else its wall time\n"
    "  --confidence PCT        of the step time's confidence interval (default 95)\n"
    "  --step-marker NAME      steps are the job's NVTX ranges NAME (a trailing step number\n"
    "                          dropped: ProfilerStep#12 is ProfilerStep); default: the name\n"
    "                          with the most outermost ranges, else steps found in the GPU work\n"
    "  --fail-if-cause-grows CAUSE:PCT\n"
    "                          exit 3 when CAUSE's idle time grows by more than PCT%\n"
    "                          (repeatable; CAUSE as in `idlescope report --format json`)\n"
    "  --min-gap MS            as in `idlescope report` (default 1 ms)\n"
    "  -h, --help              this text;  -V, --version  idlescope's version\n"
    "exit status: 0 fine, 3 a gate tripped, 2 usage error, 1 an input is not a readable trace\n"
    "or the diff cannot be written (one line says which)\n";

enum DiffOption : int {
  kPerStepOption = kFirstCommandOption,
  kPerRunOption,
  kFailIfSlowerOption,
  kFailIfCauseGrowsOption,
  kConfidenceOption,
  kStepMarkerOption,
};

constexpr OptionSpec kDiffOptions[] = {
    FormatOption(DiffExporterNames),
    kJson,
    kOutput,
    {kPerStepOption, "per-step"},
    {kPerRunOption, "per-run"},
    {kFailIfSlowerOption, "fail-if-slower", 0, "PCT"},
    {kFailIfCauseGrowsOption, "fail-if-cause-grows", 0, "CAUSE:PCT"},
    {kConfidenceOption, "confidence", 0, "PCT"},
    {kStepMarkerOption, "step-marker", 0, "NAME"},
    kMinGap,
};

constexpr CommandSpec kDiff = {"diff", kDiffOptions, kUsage};

// Runs the report pipeline on one side, with the step census fed by the same read of its files;
// nullopt (after printing why) when it cannot be read.
// `name`: the side as the user named it (`input` may be a copy: input_copies.h).
std::optional<RunSummary> Analyze(const std::string& input, const std::string& name,
                                  const AnalysisOptions& options, const std::string& marker) {
  StepCensusSink census;
  census.SetStepMarker(marker);
  absl::StatusOr<AnalyzedJob> job = AnalyzeJob({input}, {options, ReadOptions{}}, {&census});
  if (!job.ok()) {
    PrintError("diff", job.status().message());
    return std::nullopt;
  }
  return SummarizeRun(name, job->report, census.Census(job->symbols));
}

}  // namespace

int DiffCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kDiff, argc, argv);
  if (line.exit_status) return *line.exit_status;
  const char* format = "text";
  std::string output;
  std::string marker;
  DiffOptions options;
  AnalysisOptions analysis_options;
  for (const ParsedOption& option : line.options) {
    double number = 0;
    switch (option.id) {
      case kFormatOption:
        format = option.value;
        break;
      case kJsonOption:
        format = "json";
        break;
      case kOutputOption:
        output = option.value;
        break;
      case kPerStepOption:
        options.normalization = NormalizationChoice::kPerStep;
        break;
      case kPerRunOption:
        options.normalization = NormalizationChoice::kPerRun;
        break;
      case kFailIfSlowerOption:
        if (!NumberValue("diff", option, &number)) return kDiffExitUsage;
        options.fail_if_slower_pct = number;
        break;
      case kStepMarkerOption:
        marker = option.value;
        break;
      case kConfidenceOption:
        if (!NumberValue("diff", option, &number)) return kDiffExitUsage;
        if (!(number >= 50 && number < 100)) {
          return UsageError("diff", "--confidence: expected a percentage from 50 to 99.9");
        }
        options.confidence = number / 100;
        break;
      case kMinGapOption:
        if (!NumberValue("diff", option, &number)) return kDiffExitUsage;
        analysis_options.min_gap = static_cast<Ns>(number * 1e6);
        break;
      case kFailIfCauseGrowsOption: {
        absl::StatusOr<CauseGate> gate = ParseCauseGate(option.value);
        if (!gate.ok()) {
          return UsageError("diff",
                            absl::StrCat("--fail-if-cause-grows ", gate.status().message()));
        }
        options.cause_gates.push_back(*gate);
        break;
      }
    }
  }
  const std::vector<std::string>& inputs = line.operands;
  if (inputs.size() != 2) {
    return UsageError("diff", absl::StrFormat("expected BEFORE and AFTER, got %d input%s",
                                              inputs.size(), inputs.size() == 1 ? "" : "s"));
  }
  const Exporter<JobDiff>* exporter = FindDiffExporter(format);
  if (exporter == nullptr) {
    return UsageError(
        "diff", absl::StrCat("unknown format '", format, "' (formats: ", DiffExporterNames(), ")"));
  }
  InputCopies copies;  // compressed traces, stdin, pipes (input_copies.h)
  absl::StatusOr<std::vector<std::string>> sides = copies.Prepare(line.operands);
  if (!sides.ok()) {
    PrintError("diff", sides.status().message());
    return kDiffExitUnreadable;
  }
  if (sides->size() != 2) {  // a directory of plain and compressed traces is read as two
    PrintError("diff", "a side's directory holds plain and compressed traces: give it one kind");
    return kDiffExitUnreadable;
  }
  std::optional<RunSummary> before =
      Analyze((*sides)[0], copies.Original((*sides)[0]), analysis_options, marker);
  if (!before) return kDiffExitUnreadable;
  std::optional<RunSummary> after =
      Analyze((*sides)[1], copies.Original((*sides)[1]), analysis_options, marker);
  if (!after) return kDiffExitUnreadable;

  JobDiff diff = CompareRuns(*before, *after, options);
  StringOutput out;
  exporter->Start()->Write(diff, out);
  if (!WriteOutput("diff", output, out.text())) return kDiffExitUnreadable;
  for (const GateResult& g : diff.gates) {
    if (g.tripped)
      PrintError("diff", absl::StrCat("gate tripped: ", GateLabel(g), ": ", GateDetail(g)));
  }
  return diff.exit_code();
}

}  // namespace idlescope
