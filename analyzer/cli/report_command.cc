// idlescope report [--format text|json|html|perfetto|chrome] [-o FILE] [-q] [-v] [--min-gap MS]
//                  [--top N] [--reorder-window MS] [--no-python-frames] [--jobs N]
//                  [--single-process] DIR|FILE...
//
// Reads a job's trace files, attributes every idle GPU second to a cause and writes the job
// through the exporter named by --format (report/report_exporters.h; --json is --format json).
// The job is analyzed in shards, one per rank, on every core (analyzer/shard/local.h), unless
// the export watches the read (Export::watch: the HTML report's strip, the timeline exports) or
// --single-process asks for one pass: then the analysis and what the export watches read the
// files together, once (cli/pipeline.h). `idlescope export` is the same command
// (export_command.cc). With --verbose, ends with a line on stderr: throughput and peak memory
// (after a line on what was written, for the exports that say: Export::Summary); without it,
// stderr gets only errors and warnings (a CI log holds nothing but the job's problems).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/input_copies.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/cli/pipeline.h"
#include "analyzer/cli/progress.h"
#include "analyzer/cli/temporary_paths.h"
#include "analyzer/report/report_exporters.h"
#include "analyzer/shard/local.h"

namespace idlescope {
namespace {

constexpr char kUsage[] =
    "usage: idlescope report [--format FORMAT] [-o FILE] [-q] [-v] [--min-gap MS] [--top N]\n"
    "                        [--reorder-window MS] [--no-python-frames] [--step-marker NAME]\n"
    "                        [-j N] [--single-process] DIR|FILE...\n"
    "  Why the GPUs of a traced job sat idle: the trace directories or files of `idlescope\n"
    "  run` analyzed into a report. Traces compressed with zstd (FILE.idlescope.zst, or such\n"
    "  files in DIR), - (standard input) and pipes are decompressed under TMPDIR first.\n"
    "  --format FORMAT      text (default), json (machine-readable; schema:\n"
    "                       docs/report-json.md), html (one self-contained page with a\n"
    "                       timeline: docs/html-report.md), perfetto (the job's timeline as\n"
    "                       Perfetto's protobuf trace: open it in ui.perfetto.dev) or chrome\n"
    "                       (Trace Event Format JSON: docs/timeline-export.md)\n"
    "  --json               the same as --format json\n"
    "  -o, --output FILE    write the report to FILE instead of stdout (a regular file is\n"
    "                       replaced whole; a device, FIFO or symlink is written as `>` would)\n"
    "  -q, --quiet          no progress line (shown on a terminal for long analyses)\n"
    "  -v, --verbose        end with what was written and the throughput on stderr\n"
    "  --min-gap MS         shortest idle gap attributed on its own (default 1 ms); shorter\n"
    "                       gaps count as launch-bound / batch-size idle\n"
    "  --top N              longest gaps and evidence items listed (default 10)\n"
    "  --reorder-window MS  how far out of time order records may arrive (default 2000)\n"
    "  --no-python-frames   evidence stacks without their Python frames (native frames\n"
    "                       only, as with IDLESCOPE_PYTHON_STACKS=0)\n"
    "  --step-marker NAME   the job's steps are its NVTX ranges NAME (a trailing step number\n"
    "                       dropped: ProfilerStep#12 is ProfilerStep); default: the name with\n"
    "                       the most outermost ranges, else the cycle of the GPU work\n"
    "  -j, --jobs N         threads analyzing the job's shards (one per rank; default: one\n"
    "                       per core)\n"
    "  --single-process     the whole job in one pass, no shards (what html, perfetto and\n"
    "                       chrome do; the report is the same)\n"
    "  -h, --help           this text;  -V, --version  idlescope's version\n"
    "exit status: 0 report written, 1 an input is not a readable trace or the report cannot be\n"
    "written (one line says which), 2 usage error\n";

enum ReportOption : int { kJobsOption = kFirstCommandOption, kSingleProcessOption };

constexpr OptionSpec kReportOptions[] = {
    FormatOption(ReportExporterNames),
    kJson,
    kOutput,
    kQuiet,
    kVerbose,
    kMinGap,
    kTop,
    kReorderWindow,
    kNoPythonFrames,
    kStepMarker,
    {kJobsOption, "jobs", 'j', "N"},
    {kSingleProcessOption, "single-process"},
};

constexpr CommandSpec kReport = {"report", kReportOptions, kUsage};

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

// Writes `job` through `run` to `output` ("": stdout), and what it wrote on stderr. A timeline
// export reads the files again (ReportedJob::read_again) as it writes.
bool WriteJob(const ReportRequest& request, ReportedJob job, Export<ReportedJob>& run) {
  absl::StatusOr<std::unique_ptr<OutputParts>> out = OutputParts::Open(request.output);
  if (!out.ok()) {
    PrintError(request.command, out.status().message());
    return false;
  }
  absl::Status reread;
  job.read_again = [&](RecordSink& sink) {
    absl::StatusOr<std::unique_ptr<JobReader>> reader = JobReader::Open(request.inputs);
    if (!reader.ok()) {
      reread = reader.status();
      return;
    }
    // Progress of this read too, on a terminal: it is the longer one.
    std::optional<ProgressSink> progress;
    std::optional<TeeSink> tee;
    RecordSink* into = &sink;
    if (!request.pipeline.progress.empty() && ProgressSink::Wanted(false)) {
      JobReader* r = reader->get();
      progress.emplace(
          request.pipeline.progress + " (writing)", [r] { return r->BytesRead(); },
          r->TotalBytes());
      tee.emplace(std::vector<RecordSink*>{&sink, &*progress});
      into = &*tee;
    }
    (*reader)->Run(*into, request.pipeline.read);
    if (progress) progress->Finish();
  };
  job.timeline = &request.timeline;
  std::optional<JobReport> renamed;
  if (request.copies != nullptr && request.copies->any()) {
    // Traces read from copies are named as the user named them.
    renamed = job.report;
    request.copies->Rename(*renamed);
    run.Write({*renamed, job.symbols, job.device_ids, job.read_again, job.timeline}, **out);
  } else {
    run.Write(job, **out);
  }
  if (!reread.ok()) {
    PrintError(request.command, reread.message());
    return false;  // the output's files are removed
  }
  if (absl::Status committed = (*out)->Commit(); !committed.ok()) {
    if (!committed.message().empty()) PrintError(request.command, committed.message());
    return false;
  }
  const std::vector<std::string>& paths = (*out)->paths();
  if (request.timeline.max_bytes > 0) {
    // One line: the files, the first and last of a long list.
    std::string files = paths.size() <= 4
                            ? absl::StrJoin(paths, ", ")
                            : absl::StrCat(paths.front(), ", ", paths[1], ", ... ", paths.back());
    PrintError(request.command,
               absl::StrFormat("wrote %d file%s of at most %d bytes: %s", paths.size(),
                               paths.size() == 1 ? "" : "s", request.timeline.max_bytes, files));
  }
  const std::string summary = run.Summary();
  if (!summary.empty() && request.verbose) {
    PrintError(request.command,
               absl::StrCat(request.output.empty() ? "stdout" : request.output, ": ", summary));
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
  // The shards' directory is removed when a signal ends the command, too.
  int scratch_slot = -1;
  ScratchDirectory scratch;
  scratch.make = [&scratch_slot](std::string& pattern) {
    return MakeTemporaryDirectory(pattern, &scratch_slot);
  };
  scratch.removed = [&scratch_slot] { ForgetTemporaryPath(scratch_slot); };
  absl::StatusOr<ShardedJob> job = AnalyzeJobInShards(
      request.inputs, pipeline.analysis, pipeline.read, request.jobs, on_progress, scratch);
  if (progress) progress->Finish();
  if (!job.ok()) {
    PrintError(command, job.status().message());
    return 1;
  }
  if (job->one_shard) {
    absl::StatusOr<AnalyzedJob> one = AnalyzeJob(request.inputs, pipeline);
    if (!one.ok()) {
      PrintError(command, one.status().message());
      return 1;
    }
    if (!WriteJob(request, {one->report, &one->symbols, one->device_ids}, run)) return 1;
    if (!request.verbose) return 0;
    PrintThroughput(command, started, one->stats.host_events, one->stats.gpu_records,
                    one->stats.files, ", 1 shard");
    return 0;
  }
  job->report.tool_version = "idlescope " IDLESCOPE_VERSION;
  if (!WriteJob(request, {job->report}, run)) return 1;
  if (!request.verbose) return 0;
  const JobReport& report = job->report;
  PrintThroughput(command, started, report.events, report.gpu_activities, report.files.size(),
                  absl::StrFormat(", %u shards on %u threads, summaries %.1f KiB", job->shards,
                                  job->threads, static_cast<double>(job->summary_bytes) / 1024.0));
  return 0;
}

}  // namespace

int ReportCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kReport, argc, argv);
  if (line.exit_status) return *line.exit_status;
  ReportRequest request;
  request.command = "report";
  request.format = "text";
  request.pipeline.progress = "idlescope report";
  for (const ParsedOption& option : line.options) {
    AnalysisOption analysis = ApplyAnalysisOption("report", option, &request.pipeline);
    if (analysis == AnalysisOption::kBad) return 2;
    if (analysis == AnalysisOption::kTaken) continue;
    double number = 0;
    switch (option.id) {
      case kFormatOption:
        request.format = option.value;
        break;
      case kJsonOption:
        request.format = "json";
        break;
      case kOutputOption:
        request.output = option.value;
        break;
      case kVerboseOption:
        request.verbose = true;
        break;
      case kJobsOption:
        if (!NumberValue("report", option, &number)) return 2;
        request.jobs = static_cast<size_t>(number);
        break;
      case kSingleProcessOption:
        request.single_process = true;
        break;
    }
  }
  if (line.operands.empty()) return UsageError("report", "no trace directory or file given");
  InputCopies copies;  // compressed traces, stdin, pipes (input_copies.h)
  absl::StatusOr<std::vector<std::string>> inputs = copies.Prepare(line.operands);
  if (!inputs.ok()) {
    PrintError("report", inputs.status().message());
    return 1;
  }
  request.inputs = std::move(*inputs);
  request.copies = &copies;
  return RunReport(request);
}

int RunReport(const ReportRequest& request) {
  const std::string command(request.command);
  const Exporter<ReportedJob>* exporter = FindReportExporter(request.format);
  if (exporter == nullptr) {
    return UsageError(command, absl::StrCat("unknown format '", std::string(request.format),
                                            "' (formats: ", ReportExporterNames(), ")"));
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
    PrintError(command, job.status().message());
    return 1;
  }
  if (!WriteJob(request, {job->report, &job->symbols, job->device_ids}, *run)) return 1;
  if (!request.verbose) return 0;
  const ReadStats& stats = job->stats;
  PrintThroughput(command, started, stats.host_events, stats.gpu_records, stats.files, "");
  return 0;
}

}  // namespace idlescope
