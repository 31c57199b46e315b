// idlescope report [--format text|json|html|perfetto|chrome] [-o FILE] [--min-gap MS] [--top N]
//                  [--reorder-window MS] [--no-python-frames] [--jobs N] [--single-process]
//                  DIR|FILE...
//
// Reads a job's trace files, attributes every idle GPU second to a cause and writes the job
// through the exporter named by --format (report/report_exporters.h; --json is --format json).
// The job is analyzed in shards, one per rank, on every core (analyzer/shard/local.h), unless
// the export watches the read (Export::watch: the HTML report's strip, the timeline exports) or
// --single-process asks for one pass: then the analysis and what the export watches read the
// files together, once (cli/pipeline.h). `idlescope export` is the same command
// (export_command.cc). Ends with a line on stderr: throughput and peak memory (after a line on
// what was written, for the exports that say: Export::Summary).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/cli/pipeline.h"
#include "analyzer/cli/progress.h"
#include "analyzer/report/report_exporters.h"
#include "analyzer/shard/local.h"

namespace idlescope {
namespace {

constexpr char kUsage[] =
    "usage: idlescope report [--format FORMAT] [-o FILE] [--min-gap MS] [--top N]\n"
    "                        [--reorder-window MS] [--no-python-frames] DIR|FILE...\n"
    "  --format FORMAT      text (default), json (machine-readable; schema:\n"
    "                       docs/report-json.md), html (one self-contained page with a\n"
    "                       timeline: docs/html-report.md), perfetto (the job's timeline as\n"
    "                       Perfetto's protobuf trace: open it in ui.perfetto.dev) or chrome\n"
    "                       (Trace Event Format JSON: docs/timeline-export.md)\n"
    "  --json               the same as --format json\n"
    "  -o, --output FILE    write the report to FILE instead of stdout\n"
    "  -q, --quiet          no progress line (shown on a terminal for long analyses) and no\n"
    "                       closing throughput line\n"
    "  --min-gap MS         shortest idle gap attributed on its own (default 1 ms); shorter\n"
    "                       gaps count as launch-bound / batch-size idle\n"
    "  --top N              longest gaps and evidence items listed (default 10)\n"
    "  --reorder-window MS  how far out of time order records may arrive (default 2000)\n"
    "  --no-python-frames   evidence stacks without their Python frames (native frames\n"
    "                       only, as with IDLESCOPE_PYTHON_STACKS=0)\n"
    "  --jobs N             threads analyzing the job's shards (one per rank; default: one\n"
    "                       per core)\n"
    "  --single-process     the whole job in one pass, no shards (what html, perfetto and\n"
    "                       chrome do; the report is the same)\n";

// The closing line: throughput per CPU second (every thread's; one pass is single-threaded, so it
// is then "on one core" even on a loaded machine) and per wall second; peak RSS from the kernel's
// high-water mark. `how`: how the job was analyzed ("" for one pass).
void PrintThroughput(std::string_view command, std::chrono::steady_clock::time_point started,
                     uint64_t host_events, uint64_t gpu_records, uint64_t files,
                     const std::string& how) {
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  uint64_t records = host_events + gpu_records;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
               static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  auto rate = [&](double seconds) {
    return seconds > 0 ? static_cast<double>(records) / seconds / 1e6 : 0.0;
  };
  std::fprintf(stderr,
               "idlescope %s: %llu events (%llu host, %llu GPU) from %llu files: "
               "%.3f s CPU (%.2f M events/s), %.3f s wall (%.2f M events/s), "
               "peak RSS %.1f MiB%s\n",
               std::string(command).c_str(), static_cast<unsigned long long>(records),
               static_cast<unsigned long long>(host_events),
               static_cast<unsigned long long>(gpu_records), static_cast<unsigned long long>(files),
               cpu, rate(cpu), wall, rate(wall), static_cast<double>(usage.ru_maxrss) / 1024.0,
               how.c_str());
}

// Writes `job` through `run` to `output`, and what it wrote on stderr ("" output: stdout).
bool WriteJob(const ReportRequest& request, const ReportedJob& job, Export<ReportedJob>& run) {
  StringOutput out;
  run.Write(job, out);
  if (!WriteOutput(request.command, request.output, out.text())) return false;
  const std::string summary = run.Summary();
  if (!summary.empty() && !request.pipeline.progress.empty()) {
    std::fprintf(stderr, "idlescope %s: %s: %s\n", std::string(request.command).c_str(),
                 request.output.empty() ? "stdout" : request.output.c_str(), summary.c_str());
  }
  return true;
}

int ReportInShards(const ReportRequest& request, Export<ReportedJob>& run) {
  const PipelineOptions& pipeline = request.pipeline;
  const std::string command(request.command);
  auto started = std::chrono::steady_clock::now();
  // Progress of the shards together, on a terminal.
  std::optional<ProgressSink> progress;
  uint64_t bytes_read = 0;
  ShardProgress on_progress;
  if (!pipeline.progress.empty() && ProgressSink::Wanted(false)) {
    progress.emplace(
        pipeline.progress, [&bytes_read] { return bytes_read; }, 0);
    on_progress = [&](uint64_t total, uint64_t bytes, uint64_t records) {
      progress->SetTotal(total);
      bytes_read += bytes;
      progress->AddEvents(records);
    };
  }
  absl::StatusOr<ShardedJob> job = AnalyzeJobInShards(request.inputs, pipeline.analysis,
                                                      pipeline.read, request.jobs, on_progress);
  if (progress) progress->Finish();
  if (!job.ok()) {
    std::fprintf(stderr, "idlescope %s: %s\n", command.c_str(),
                 std::string(job.status().message()).c_str());
    return 1;
  }
  if (job->one_shard) {
    absl::StatusOr<AnalyzedJob> one = AnalyzeJob(request.inputs, pipeline);
    if (!one.ok()) {
      std::fprintf(stderr, "idlescope %s: %s\n", command.c_str(),
                   std::string(one.status().message()).c_str());
      return 1;
    }
    if (!WriteJob(request, {one->report, &one->symbols, one->device_ids}, run)) return 1;
    if (pipeline.progress.empty()) return 0;  // --quiet
    PrintThroughput(command, started, one->stats.host_events, one->stats.gpu_records,
                    one->stats.files, ", 1 shard");
    return 0;
  }
  job->report.tool_version = "idlescope " IDLESCOPE_VERSION;
  if (!WriteJob(request, {job->report}, run)) return 1;
  if (pipeline.progress.empty()) return 0;  // --quiet
  const JobReport& report = job->report;
  PrintThroughput(command, started, report.events, report.gpu_activities, report.files.size(),
                  absl::StrFormat(", %u shards on %u threads, summaries %.1f KiB", job->shards,
                                  job->threads, static_cast<double>(job->summary_bytes) / 1024.0));
  return 0;
}

}  // namespace

int ReportCommand(int argc, char** argv) {
  const char* format = "text";
  std::string output;
  PipelineOptions pipeline;
  pipeline.progress = "idlescope report";
  std::vector<std::string> inputs;
  size_t jobs = 0;
  bool single_process = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    AnalysisFlag common = ParseAnalysisFlag("report", argc, argv, &i, &pipeline);
    if (common == AnalysisFlag::kBad) return 2;
    if (common == AnalysisFlag::kTaken) continue;
    double number = 0;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (ParseFormatFlag(argc, argv, &i, &format)) {
      if (format == nullptr) {
        std::fprintf(stderr, "idlescope report: --format needs a value (%s)\n",
                     ReportExporterNames().c_str());
        return 2;
      }
    } else if (ParseOutputFlag(argc, argv, &i, &output)) {
      if (output.empty()) {
        std::fprintf(stderr, "idlescope report: %s needs a file name\n", argv[i]);
        return 2;
      }
    } else if (arg == "--top") {
      if (!NumberValue("report", argc, argv, &i, &number)) return 2;
      pipeline.analysis.top_gaps = static_cast<size_t>(number);
      pipeline.analysis.top_evidence = static_cast<size_t>(number);
    } else if (arg == "--no-python-frames") {
      pipeline.analysis.python_frames = false;
    } else if (arg == "--jobs") {
      if (!NumberValue("report", argc, argv, &i, &number)) return 2;
      jobs = static_cast<size_t>(number);
    } else if (arg == "--single-process") {
      single_process = true;
    } else if (arg.starts_with("-") && arg.size() > 1) {
      std::fprintf(stderr, "idlescope report: unknown option '%s'\n%s", argv[i], kUsage);
      return 2;
    } else {
      inputs.emplace_back(arg);
    }
  }
  if (inputs.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  return RunReport({.command = "report",
                    .inputs = std::move(inputs),
                    .pipeline = std::move(pipeline),
                    .jobs = jobs,
                    .single_process = single_process,
                    .format = format,
                    .output = std::move(output)});
}

int RunReport(const ReportRequest& request) {
  const std::string command(request.command);
  const Exporter<ReportedJob>* exporter = FindReportExporter(request.format);
  if (exporter == nullptr) {
    std::fprintf(stderr, "idlescope %s: unknown format '%s' (formats: %s)\n", command.c_str(),
                 std::string(request.format).c_str(), ReportExporterNames().c_str());
    return 2;
  }
  std::unique_ptr<Export<ReportedJob>> run = exporter->Start();
  const Watch watch = run->watch();
  if (!watch.any() && !request.single_process) return ReportInShards(request, *run);

  // One pass: the analysis and what the export watches read the files together.
  auto started = std::chrono::steady_clock::now();
  PipelineOptions pipeline = request.pipeline;
  pipeline.slices = watch.slices;
  std::vector<RecordSink*> sinks;
  if (watch.records != nullptr) sinks.push_back(watch.records);
  absl::StatusOr<AnalyzedJob> job = AnalyzeJob(request.inputs, pipeline, sinks);
  if (!job.ok()) {
    std::fprintf(stderr, "idlescope %s: %s\n", command.c_str(),
                 std::string(job.status().message()).c_str());
    return 1;
  }
  if (!WriteJob(request, {job->report, &job->symbols, job->device_ids}, *run)) return 1;
  if (pipeline.progress.empty()) return 0;  // --quiet
  const ReadStats& stats = job->stats;
  PrintThroughput(command, started, stats.host_events, stats.gpu_records, stats.files, "");
  return 0;
}

}  // namespace idlescope
