// idlescope diff [--format text|json|html|markdown|junit] [-o FILE] [--per-step|--per-run]
//                [--min-gap MS] [--fail-if-slower PCT] [--confidence PCT] [--step-marker NAME]
//                [--fail-if-cause-grows CAUSE:PCT]... BEFORE AFTER
//
// Analyzes two runs of a job (trace directories or files; or two directories of several runs
// each) with the same pipeline as `idlescope report`, and prints them side by side
// (analyzer/diff/diff.h, docs/diff.md). Exit status: 0 fine, 3 a gate tripped, 2 usage error, 1 an
// input is not a readable trace or the diff cannot be written.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
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
    "  BEFORE, AFTER           trace directories (or single trace files) of two runs; or\n"
    "                          directories of several runs each (their subdirectories)\n"
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
    kStepMarker,
    kMinGap,
};

constexpr CommandSpec kDiff = {"diff", kDiffOptions, kUsage};

// Whether directory `path` holds trace files of its own.
bool HoldsTraces(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return false;
  bool found = false;
  while (const dirent* e = readdir(dir)) {
    const std::string_view name = e->d_name;
    found = found || name.ends_with(".idlescope") || name.ends_with(".idlescope.zst");
  }
  closedir(dir);
  return found;
}

// Runs the report pipeline on one side, with the step census fed by the same read of its files;
// nullopt (after printing why) when it cannot be read.
// `name`: the side as the user named it (`input` may be a copy: input_copies.h).
std::optional<RunSummary> Analyze(const std::string& input, const std::string& name,
                                  const AnalysisOptions& options) {
  StepCensusSink census;
  absl::StatusOr<AnalyzedJob> job = AnalyzeJob({input}, {options, ReadOptions{}}, {&census});
  if (!job.ok()) {
    PrintError("diff", job.status().message());
    return std::nullopt;
  }
  StepCensus steps = census.Census(job->symbols);
  steps.steps = StepsOf(job->report.steps);
  return SummarizeRun(name, job->report, std::move(steps));
}

// The runs a side names: a trace file or a directory of traces is one run; a directory without
// traces of its own whose subdirectories hold them (`idlescope run -o before/1 ...`, `before/2`)
// is one run per such subdirectory, by name.
std::vector<std::string> RunsOf(const std::string& side) {
  DIR* dir = opendir(side.c_str());
  if (dir == nullptr) return {side};
  std::vector<std::string> subdirs;
  bool traces = false;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = absl::StrCat(side, "/", name);
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    if (S_ISREG(st.st_mode) && (name.ends_with(".idlescope") || name.ends_with(".idlescope.zst"))) {
      traces = true;
    } else if (S_ISDIR(st.st_mode)) {
      subdirs.push_back(path);
    }
  }
  closedir(dir);
  if (traces || subdirs.empty()) return {side};
  std::sort(subdirs.begin(), subdirs.end());
  std::vector<std::string> runs;
  for (const std::string& sub : subdirs) {
    if (RunsOf(sub).size() == 1 && HoldsTraces(sub)) runs.push_back(sub);
  }
  return runs.empty() ? std::vector<std::string>{side} : runs;
}

}  // namespace

int DiffCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kDiff, argc, argv);
  if (line.exit_status) return *line.exit_status;
  const char* format = "text";
  std::string output;
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
        analysis_options.step_marker = StepMarkerName(option.value);
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
  // Each side: one run, or a directory of runs (its subdirectories that hold traces).
  std::vector<std::string> runs[2];
  for (int side = 0; side < 2; ++side) runs[side] = RunsOf(inputs[side]);
  std::vector<std::string> all = runs[0];
  all.insert(all.end(), runs[1].begin(), runs[1].end());
  InputCopies copies;  // compressed traces, stdin, pipes (input_copies.h)
  absl::StatusOr<std::vector<std::string>> prepared = copies.Prepare(all);
  if (!prepared.ok()) {
    PrintError("diff", prepared.status().message());
    return kDiffExitUnreadable;
  }
  if (prepared->size() !=
      all.size()) {  // a directory of plain and compressed traces is read as two
    PrintError("diff", "a run's directory holds plain and compressed traces: give it one kind");
    return kDiffExitUnreadable;
  }
  std::optional<RunSummary> sides[2];
  size_t next = 0;
  for (int side = 0; side < 2; ++side) {
    std::vector<RunSummary> summaries;
    for (size_t r = 0; r < runs[side].size(); ++r, ++next) {
      const std::string& path = (*prepared)[next];
      std::optional<RunSummary> run = Analyze(path, copies.Original(path), analysis_options);
      if (!run) return kDiffExitUnreadable;
      summaries.push_back(std::move(*run));
    }
    sides[side] = CombineRuns(inputs[side], std::move(summaries));
  }
  std::optional<RunSummary>& before = sides[0];
  std::optional<RunSummary>& after = sides[1];

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
