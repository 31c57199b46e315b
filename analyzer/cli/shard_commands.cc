// The steps of a job analyzed in shards, one command each, for a driver that runs them on other
// machines (tools/dask_report.py); `idlescope report` runs them all in one process
// (analyzer/shard/local.h). proto/summary.proto describes what each writes.
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
#include "analyzer/shard/local.h"
#include "analyzer/shard/map.h"
#include "analyzer/shard/merge.h"
#include "analyzer/shard/plan.h"

namespace idlescope {
namespace {

constexpr int kNeedsAlignment = 3;  // plan: index again with --align
constexpr int kRemap = 4;           // merge: map the shards printed, then merge again

bool ReadFile(std::string_view command, const std::string& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "idlescope %s: cannot read %s\n", std::string(command).c_str(),
                 path.c_str());
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  *bytes = std::move(s).str();
  return true;
}

// Reads message `what` of `path` into `out`, or says why not (one line).
bool ReadMessage(std::string_view command, const std::string& path, const char* what,
                 google::protobuf::Message* out) {
  std::string bytes;
  if (!ReadFile(command, path, &bytes)) return false;
  absl::Status status = ParseShardMessage(bytes, what, out);
  if (!status.ok()) {
    std::fprintf(stderr, "idlescope %s: %s: %s\n", std::string(command).c_str(), path.c_str(),
                 std::string(status.message()).c_str());
    return false;
  }
  return true;
}

bool Usage(std::string_view command, const char* usage, bool ok) {
  std::fprintf(ok ? stdout : stderr, "usage: idlescope %s %s", std::string(command).c_str(), usage);
  return ok;
}

}  // namespace

int IndexCommand(int argc, char** argv) {
  static constexpr char kUsage[] =
      "[--align] [--listed] -o INDEX DIR|FILE...\n"
      "  the index of each trace file (header, end, with --align the ends of its first\n"
      "  collectives, for jobs on several hosts): what `idlescope plan` reads. --listed: the\n"
      "  files were found in a directory (one that is no trace is skipped, not an error)\n"
      "       idlescope index --list DIR|FILE...\n"
      "  the trace files the inputs name, one a line, in the order `idlescope report` reads\n"
      "  them: 'listed PATH' (found in a directory) or 'named PATH'\n";
  std::string output;
  bool align = false, listed = false, list = false;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") return Usage("index", kUsage, true) ? 0 : 2;
    if (arg == "--align") {
      align = true;
    } else if (arg == "--listed") {
      listed = true;
    } else if (arg == "--list") {
      list = true;
    } else if (ParseOutputFlag(argc, argv, &i, &output)) {
      if (output.empty()) return Usage("index", kUsage, false), 2;
    } else if (arg.starts_with("-") && arg.size() > 1) {
      std::fprintf(stderr, "idlescope index: unknown option '%s'\n", argv[i]);
      return 2;
    } else {
      inputs.emplace_back(arg);
    }
  }
  if (inputs.empty() || (output.empty() && !list)) return Usage("index", kUsage, false), 2;
  absl::StatusOr<std::vector<TraceInput>> paths = ExpandInputs(inputs);
  if (!paths.ok()) {
    std::fprintf(stderr, "idlescope index: %s\n", std::string(paths.status().message()).c_str());
    return 1;
  }
  if (list) {
    for (const TraceInput& input : *paths) {
      std::printf("%s %s\n", input.listed ? "listed" : "named", input.path.c_str());
    }
    return 0;
  }
  shard::FileIndexSet set;
  set.set_format(kShardFormat);
  for (TraceInput& input : *paths) {
    input.listed = input.listed || listed;
    *set.add_files() = IndexFile(input, align);
  }
  return WriteOutput("index", output, set.SerializeAsString()) ? 0 : 1;
}

int PlanCommand(int argc, char** argv) {
  static constexpr char kUsage[] =
      "[--min-gap MS] [--top N] [--reorder-window MS] [--no-python-frames] -o PLAN INDEX...\n"
      "  the plan of the job whose files the INDEX files (`idlescope index`) describe, in\n"
      "  order: its processes, clocks and shards, and the analysis options every map and\n"
      "  the merge use (those of idlescope report). Exit 3: the job spans hosts, and its\n"
      "  files must be indexed with --align\n";
  PipelineOptions pipeline;
  std::string output;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    AnalysisFlag common = ParseAnalysisFlag("plan", argc, argv, &i, &pipeline);
    if (common == AnalysisFlag::kBad) return 2;
    if (common == AnalysisFlag::kTaken) continue;
    double number = 0;
    if (arg == "-h" || arg == "--help") return Usage("plan", kUsage, true) ? 0 : 2;
    if (ParseOutputFlag(argc, argv, &i, &output)) {
      if (output.empty()) return Usage("plan", kUsage, false), 2;
    } else if (arg == "--top") {
      if (!NumberValue("plan", argc, argv, &i, &number)) return 2;
      pipeline.analysis.top_gaps = static_cast<size_t>(number);
      pipeline.analysis.top_evidence = static_cast<size_t>(number);
    } else if (arg == "--no-python-frames") {
      pipeline.analysis.python_frames = false;
    } else if (arg.starts_with("-") && arg.size() > 1) {
      std::fprintf(stderr, "idlescope plan: unknown option '%s'\n", argv[i]);
      return 2;
    } else {
      inputs.emplace_back(arg);
    }
  }
  if (inputs.empty() || output.empty()) return Usage("plan", kUsage, false), 2;
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
    std::fprintf(stderr,
                 "idlescope plan: the job spans hosts: index its files with --align to put them "
                 "on one clock\n");
    return kNeedsAlignment;
  }
  absl::StatusOr<shard::Plan> plan =
      MakePlan(files, pipeline.analysis, pipeline.read.reorder_window);
  if (!plan.ok()) {
    std::fprintf(stderr, "idlescope plan: %s\n", std::string(plan.status().message()).c_str());
    return 1;
  }
  if (!WriteOutput("plan", output, plan->SerializeAsString())) return 1;
  std::printf("%d\n", plan->shards_size());  // the shards to map: 0 .. N-1
  return 0;
}

int MapCommand(int argc, char** argv) {
  static constexpr char kUsage[] =
      "-o SUMMARY PLAN SHARD\n"
      "  analyzes shard SHARD (0 .. shards-1) of PLAN (`idlescope plan`) into its summary\n";
  std::string output;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") return Usage("map", kUsage, true) ? 0 : 2;
    if (ParseOutputFlag(argc, argv, &i, &output)) {
      if (output.empty()) return Usage("map", kUsage, false), 2;
    } else if (arg.starts_with("-") && arg.size() > 1) {
      std::fprintf(stderr, "idlescope map: unknown option '%s'\n", argv[i]);
      return 2;
    } else {
      args.emplace_back(arg);
    }
  }
  double shard = 0;
  if (args.size() != 2 || output.empty() || !ParseNonNegative(args[1].c_str(), &shard)) {
    return Usage("map", kUsage, false), 2;
  }
  shard::Plan plan;
  if (!ReadMessage("map", args[0], "plan", &plan)) return 1;
  // Written under another name and renamed: a summary is whole or absent.
  const std::string partial = absl::StrCat(output, ".tmp-", getpid());
  absl::StatusOr<MapStats> mapped = MapShard(plan, static_cast<uint32_t>(shard), partial);
  if (!mapped.ok()) {
    std::remove(partial.c_str());
    std::fprintf(stderr, "idlescope map: %s\n", std::string(mapped.status().message()).c_str());
    return 1;
  }
  if (std::rename(partial.c_str(), output.c_str()) != 0) {
    std::fprintf(stderr, "idlescope map: cannot write %s: %s\n", output.c_str(),
                 std::strerror(errno));
    std::remove(partial.c_str());
    return 1;
  }
  return 0;
}

int MergeCommand(int argc, char** argv) {
  static constexpr char kUsage[] =
      "[--format text|json] [-o FILE] [--replan PLAN2] PLAN SUMMARY...\n"
      "  the job's report from the summaries of every shard of PLAN (`idlescope map`): the\n"
      "  report `idlescope report` prints. Exit 4: shards must be mapped (again) first; the\n"
      "  plan to go on with is written to PLAN2 and the shards to map are printed, one a line\n";
  const char* format = "text";
  std::string output, replan;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") return Usage("merge", kUsage, true) ? 0 : 2;
    if (ParseFormatFlag(argc, argv, &i, &format)) {
      if (format == nullptr) return Usage("merge", kUsage, false), 2;
    } else if (ParseOutputFlag(argc, argv, &i, &output)) {
      if (output.empty()) return Usage("merge", kUsage, false), 2;
    } else if (arg == "--replan") {
      if (++i >= argc) return Usage("merge", kUsage, false), 2;
      replan = argv[i];
    } else if (arg.starts_with("-") && arg.size() > 1) {
      std::fprintf(stderr, "idlescope merge: unknown option '%s'\n", argv[i]);
      return 2;
    } else {
      args.emplace_back(arg);
    }
  }
  if (args.size() < 2) return Usage("merge", kUsage, false), 2;
  const Exporter<ReportedJob>* exporter = FindReportExporter(format);
  if (exporter == nullptr) {
    std::fprintf(stderr, "idlescope merge: unknown format '%s' (formats: %s)\n", format,
                 ReportExporterNames().c_str());
    return 2;
  }
  // Summaries hold the report's figures, not the records or slices an export may watch.
  std::unique_ptr<Export<ReportedJob>> run = exporter->Start();
  if (run->watch().any()) {
    std::fprintf(stderr,
                 "idlescope merge: --format %s reads the trace files: use idlescope report\n",
                 format);
    return 2;
  }
  shard::Plan plan;
  if (!ReadMessage("merge", args[0], "plan", &plan)) return 1;
  std::vector<std::unique_ptr<SummaryFile>> summaries;
  std::vector<const SummaryFile*> view;
  for (size_t i = 1; i < args.size(); ++i) {
    absl::StatusOr<std::unique_ptr<SummaryFile>> file = SummaryFile::Open(args[i]);
    if (!file.ok()) {
      std::fprintf(stderr, "idlescope merge: %s\n", std::string(file.status().message()).c_str());
      return 1;
    }
    view.push_back(file->get());
    summaries.push_back(std::move(*file));
  }
  absl::StatusOr<MergeResult> merged = MergeSummaries(plan, view);
  if (!merged.ok()) {
    std::fprintf(stderr, "idlescope merge: %s\n", std::string(merged.status().message()).c_str());
    return 1;
  }
  if (!merged->report) {
    const char* why = merged->why == MergeResult::Why::kSharedDevice
                          ? "shards that drove the same device are analyzed as one"
                          : "devices whose short tail grows long by the job's end are analyzed "
                            "again up to it";
    if (replan.empty()) {
      std::fprintf(stderr, "idlescope merge: %s: give --replan FILE to go on\n", why);
      return 1;
    }
    if (!WriteOutput("merge", replan, merged->replan.SerializeAsString())) return 1;
    std::fprintf(stderr, "idlescope merge: %s\n", why);
    for (uint32_t s : merged->remap) std::printf("%u\n", s);
    return kRemap;
  }
  JobReport& report = *merged->report;
  report.tool_version = "idlescope " IDLESCOPE_VERSION;
  StringOutput out;
  run->Write({report}, out);
  return WriteOutput("merge", output, out.text()) ? 0 : 1;
}

}  // namespace idlescope
