// The steps of a job analyzed in shards, one command each, for a driver that runs them on other
// machines (tools/dask_report.py); `idlescope report` runs them all in one process
// (analyzer/shard/local.h). proto/summary.proto describes what each writes.
//
// Each command's usage (-h) has its exit statuses.
//
//   idlescope index --list DIR|FILE...
//   idlescope index [--align] [--listed] -o INDEX DIR|FILE...
//   idlescope plan [analysis options] -o PLAN INDEX...
//   idlescope map -o SUMMARY PLAN SHARD
//   idlescope merge [--format text|json] [-o FILE] [--replan PLAN2] PLAN SUMMARY...
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/read/inputs.h"
#include "analyzer/report/report_exporters.h"
#include "analyzer/shard/integrity.h"
#include "analyzer/shard/local.h"
#include "analyzer/shard/map.h"
#include "analyzer/shard/merge.h"
#include "analyzer/shard/plan.h"
#include "analyzer/shard/summary_file.h"

namespace idlescope {
namespace {

constexpr int kNeedsAlignment = 3;  // plan: index again with --align
constexpr int kRemap = 4;           // merge: map the shards printed, then merge again

bool ReadFile(std::string_view command, const std::string& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    PrintError(command, absl::StrCat("cannot read ", path));
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  *bytes = std::move(s).str();
  return true;
}

// Reads message `what` of file `path` into `out` (its checksum checked: integrity.h), or says
// why not (one line).
bool ReadMessage(std::string_view command, const std::string& path, const char* what,
                 google::protobuf::Message* out) {
  std::string bytes;
  if (!ReadFile(command, path, &bytes)) return false;
  absl::Status status = ParseShardFile(bytes, what, out);
  if (!status.ok()) {
    PrintError(command, absl::StrCat(path, ": ", status.message()));
    return false;
  }
  return true;
}

}  // namespace

constexpr char kIndexUsage[] =
    "usage: idlescope index [--align] [--listed] -o INDEX DIR|FILE...\n"
    "  the index of each trace file (header, end, identity: size, time and a hash of its\n"
    "  content; with --align the ends of its first collectives, for jobs on several hosts):\n"
    "  what `idlescope plan` reads. --listed: the files were found in a directory (one\n"
    "  that is no trace is skipped, not an error)\n"
    "       idlescope index --list DIR|FILE...\n"
    "  the trace files the inputs name, one a line, in the order `idlescope report` reads\n"
    "  them: 'listed PATH' (found in a directory) or 'named PATH'\n"
    "  -h, --help  this text;  -V, --version  idlescope's version\n"
    "exit status: 0 written, 1 an input cannot be listed or INDEX cannot be written (one\n"
    "line says which), 2 usage error\n";

enum IndexOption : int { kAlignOption = kFirstCommandOption, kListedOption, kListOption };

constexpr OptionSpec kIndexOptions[] = {
    {kAlignOption, "align"}, {kListedOption, "listed"}, {kListOption, "list"}, kOutput};

constexpr CommandSpec kIndex = {"index", kIndexOptions, kIndexUsage};

int IndexCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kIndex, argc, argv);
  if (line.exit_status) return *line.exit_status;
  std::string output;
  bool align = false, listed = false, list = false;
  for (const ParsedOption& option : line.options) {
    if (option.id == kAlignOption) align = true;
    if (option.id == kListedOption) listed = true;
    if (option.id == kListOption) list = true;
    if (option.id == kOutputOption) output = option.value;
  }
  const std::vector<std::string>& inputs = line.operands;
  if (inputs.empty()) return UsageError("index", "no trace directory or file given");
  if (output.empty() && !list) return UsageError("index", "-o INDEX is required");
  absl::StatusOr<std::vector<TraceInput>> paths = ExpandInputs(inputs);
  if (!paths.ok()) {
    PrintError("index", paths.status().message());
    return 1;
  }
  if (list) {
    for (const TraceInput& input : *paths) {
      if (!WriteStdout(absl::StrCat(input.listed ? "listed " : "named ", input.path, "\n"))) {
        return 1;
      }
    }
    return 0;
  }
  shard::FileIndexSet set;
  set.set_format(kShardFormat);
  for (TraceInput& input : *paths) {
    input.listed = input.listed || listed;
    *set.add_files() = IndexFile(input, align, true);
  }
  return WriteOutput("index", output, Sealed(set.SerializeAsString())) ? 0 : 1;
}

constexpr char kPlanUsage[] =
    "usage: idlescope plan [--min-gap MS] [--top N] [--reorder-window MS]\n"
    "                      [--no-python-frames] [--step-marker NAME] -o PLAN INDEX...\n"
    "  the plan of the job whose files the INDEX files (`idlescope index`) describe, in\n"
    "  order: its processes, clocks and shards, and the analysis options every map and\n"
    "  the merge use (those of idlescope report); prints the number of shards\n"
    "  -h, --help  this text;  -V, --version  idlescope's version\n"
    "exit status: 0 written, 1 an INDEX cannot be read or PLAN written (one line says\n"
    "which), 2 usage error, 3 the job spans hosts: index its files again with --align\n";

constexpr OptionSpec kPlanOptions[] = {kOutput,        kQuiet,          kMinGap,    kTop,
                                       kReorderWindow, kNoPythonFrames, kStepMarker};

constexpr CommandSpec kPlan = {"plan", kPlanOptions, kPlanUsage};

int PlanCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kPlan, argc, argv);
  if (line.exit_status) return *line.exit_status;
  PipelineOptions pipeline;
  std::string output;
  for (const ParsedOption& option : line.options) {
    if (ApplyAnalysisOption("plan", option, &pipeline) == AnalysisOption::kBad) return 2;
    if (option.id == kOutputOption) output = option.value;
  }
  const std::vector<std::string>& inputs = line.operands;
  if (inputs.empty()) return UsageError("plan", "no INDEX given");
  if (output.empty()) return UsageError("plan", "-o PLAN is required");
  std::vector<shard::FileIndex> files;
  bool aligned = true;
  for (const std::string& path : inputs) {
    shard::FileIndexSet set;
    if (!ReadMessage("plan", path, "index", &set)) return 1;
    for (shard::FileIndex& f : *set.mutable_files()) {
      aligned = aligned && (!f.readable() || f.aligned());
      files.push_back(std::move(f));
    }
  }
  if (SpansHosts(files) && !aligned) {
    PrintError("plan",
               "the job spans hosts: index its files with --align to put them on one clock");
    return kNeedsAlignment;
  }
  absl::StatusOr<shard::Plan> plan =
      MakePlan(files, pipeline.analysis, pipeline.read.reorder_window);
  if (!plan.ok()) {
    PrintError("plan", plan.status().message());
    return 1;
  }
  if (!WriteOutput("plan", output, Sealed(plan->SerializeAsString()))) return 1;
  WriteStdout(absl::StrCat(plan->shards_size(), "\n"));  // the shards to map: 0 .. N-1
  return 0;
}

constexpr char kMapUsage[] =
    "usage: idlescope map -o SUMMARY PLAN SHARD\n"
    "  analyzes shard SHARD (0 .. shards-1) of PLAN (`idlescope plan`) into its summary\n"
    "  -h, --help  this text;  -V, --version  idlescope's version\n"
    "exit status: 0 written, 1 PLAN cannot be read (or is corrupt), a trace file cannot be\n"
    "read as planned (or is no longer the file indexed), or SUMMARY cannot be written (one\n"
    "line says which), 2 usage error\n";

constexpr OptionSpec kMapOptions[] = {{kOutputOption, "output", 'o', "SUMMARY"}};

constexpr CommandSpec kMap = {"map", kMapOptions, kMapUsage};

int MapCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kMap, argc, argv);
  if (line.exit_status) return *line.exit_status;
  std::string output;
  for (const ParsedOption& option : line.options) {
    if (option.id == kOutputOption) output = option.value;
  }
  const std::vector<std::string>& args = line.operands;
  double shard = 0;
  if (args.size() != 2) return UsageError("map", "expected PLAN and SHARD");
  if (!ParseNonNegative(args[1].c_str(), &shard)) {
    return UsageError("map", absl::StrCat("SHARD is a number, not '", args[1], "'"));
  }
  if (output.empty()) return UsageError("map", "-o SUMMARY is required");
  shard::Plan plan;
  if (!ReadMessage("map", args[0], "plan", &plan)) return 1;
  // Written as every -o output is (output_file.h): a summary is whole or absent.
  absl::StatusOr<std::unique_ptr<OutputFile>> out = OutputFile::Open(output);
  if (!out.ok()) {
    PrintError("map", out.status().message());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<SummaryWriter>> writer = SummaryWriter::Create((*out)->fd());
  absl::Status status = writer.ok() ? absl::OkStatus() : writer.status();
  if (status.ok()) {
    absl::StatusOr<MapStats> mapped = MapShard(plan, static_cast<uint32_t>(shard), **writer);
    status = mapped.ok() ? (*out)->Commit() : mapped.status();
  }
  if (!status.ok()) {
    PrintError("map", status.message());
    return 1;
  }
  return 0;
}

constexpr char kMergeUsage[] =
    "usage: idlescope merge [--format text|json] [-o FILE] [--replan PLAN2] PLAN SUMMARY...\n"
    "  the job's report from the summaries of every shard of PLAN (`idlescope map`): the\n"
    "  report `idlescope report` prints\n"
    "  -h, --help  this text;  -V, --version  idlescope's version\n"
    "exit status: 0 written, 1 PLAN or a SUMMARY cannot be read (or is corrupt) or does not\n"
    "belong to it, or the report cannot be written (one line says which), 2 usage error,\n"
    "4 shards must be mapped (again) first: the plan to go on with is written to PLAN2 and\n"
    "the shards to map are printed, one a line\n";

enum MergeOption : int { kReplanOption = kFirstCommandOption };

constexpr OptionSpec kMergeOptions[] = {
    FormatOption(ReportExporterNames), kJson, kOutput, {kReplanOption, "replan", 0, "PLAN2"}};

constexpr CommandSpec kMerge = {"merge", kMergeOptions, kMergeUsage};

int MergeCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kMerge, argc, argv);
  if (line.exit_status) return *line.exit_status;
  const char* format = "text";
  std::string output, replan;
  for (const ParsedOption& option : line.options) {
    if (option.id == kFormatOption) format = option.value;
    if (option.id == kJsonOption) format = "json";
    if (option.id == kOutputOption) output = option.value;
    if (option.id == kReplanOption) replan = option.value;
  }
  const std::vector<std::string>& args = line.operands;
  if (args.size() < 2) return UsageError("merge", "expected PLAN and its SUMMARY files");
  const Exporter<ReportedJob>* exporter = FindReportExporter(format);
  if (exporter == nullptr) {
    return UsageError("merge", absl::StrCat("unknown format '", format,
                                            "' (formats: ", ReportExporterNames(), ")"));
  }
  // Summaries hold the report's figures, not the records or slices an export may watch.
  std::unique_ptr<Export<ReportedJob>> run = exporter->Start();
  if (run->watch().any()) {
    return UsageError(
        "merge", absl::StrCat("--format ", format, " reads the trace files: use idlescope report"));
  }
  shard::Plan plan;
  if (!ReadMessage("merge", args[0], "plan", &plan)) return 1;
  std::vector<std::unique_ptr<SummaryFile>> summaries;
  std::vector<const SummaryFile*> view;
  for (size_t i = 1; i < args.size(); ++i) {
    absl::StatusOr<std::unique_ptr<SummaryFile>> file = SummaryFile::Open(args[i]);
    if (!file.ok()) {
      PrintError("merge", file.status().message());
      return 1;
    }
    view.push_back(file->get());
    summaries.push_back(std::move(*file));
  }
  absl::StatusOr<MergeResult> merged = MergeSummaries(plan, view);
  if (!merged.ok()) {
    PrintError("merge", merged.status().message());
    return 1;
  }
  if (!merged->report) {
    const char* why = merged->why == MergeResult::Why::kSharedDevice
                          ? "shards that drove the same device are analyzed as one"
                          : "devices whose short tail grows long by the job's end are analyzed "
                            "again up to it";
    if (replan.empty()) {
      PrintError("merge", absl::StrCat(why, ": give --replan FILE to go on"));
      return 1;
    }
    if (!WriteOutput("merge", replan, Sealed(merged->replan.SerializeAsString()))) return 1;
    PrintError("merge", why);
    for (uint32_t s : merged->remap) WriteStdout(absl::StrCat(s, "\n"));
    return kRemap;
  }
  JobReport& report = *merged->report;
  report.tool_version = "idlescope " IDLESCOPE_VERSION;
  StringOutput out;
  run->Write({report}, out);
  return WriteOutput("merge", output, out.text()) ? 0 : 1;
}

}  // namespace idlescope
