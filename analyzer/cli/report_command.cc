// idlescope report [--format text|json|html] [-o FILE] [--min-gap MS] [--top N]
//                  [--reorder-window MS] [--no-python-frames] DIR|FILE...
//
// Reads a job's trace files, attributes every idle GPU second to a cause and prints the report
// through the exporter named by --format (report/report_exporters.h; --json is --format json).
// html also watches the credited slices for its timeline strip (report/html_report.h).
// Ends with one line on stderr: throughput and peak memory.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/cli/commands.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/cli/pipeline.h"
#include "analyzer/report/device_strips.h"
#include "analyzer/report/html_report.h"
#include "analyzer/report/report_exporters.h"

namespace idlescope {
namespace {

constexpr char kUsage[] =
    "usage: idlescope report [--format text|json|html] [-o FILE] [--min-gap MS] [--top N]\n"
    "                        [--reorder-window MS] [--no-python-frames] DIR|FILE...\n"
    "  --format FORMAT      text (default), json (machine-readable; schema:\n"
    "                       docs/report-json.md) or html (one self-contained page with a\n"
    "                       timeline: docs/html-report.md)\n"
    "  --json               the same as --format json\n"
    "  -o, --output FILE    write the report to FILE instead of stdout\n"
    "  -q, --quiet          no progress line (shown on a terminal for long analyses) and no\n"
    "                       closing throughput line\n"
    "  --min-gap MS         shortest idle gap attributed on its own (default 1 ms); shorter\n"
    "                       gaps count as launch-bound / batch-size idle\n"
    "  --top N              longest gaps and evidence items listed (default 10)\n"
    "  --reorder-window MS  how far out of time order records may arrive (default 2000)\n"
    "  --no-python-frames   evidence stacks without their Python frames (native frames\n"
    "                       only, as with IDLESCOPE_PYTHON_STACKS=0)\n";

}  // namespace

int ReportCommand(int argc, char** argv) {
  const char* format = "text";
  std::string output;
  PipelineOptions pipeline;
  pipeline.progress = "idlescope report";
  std::vector<std::string> inputs;
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
  const bool html = std::string_view(format) == "html";
  const Exporter<JobReport>* exporter = FindReportExporter(format);
  if (exporter == nullptr && !html) {
    std::fprintf(stderr, "idlescope report: unknown format '%s' (formats: %s, html)\n", format,
                 ReportExporterNames().c_str());
    return 2;
  }

  auto started = std::chrono::steady_clock::now();
  DeviceStripRecorder strips;
  std::vector<RecordSink*> sinks;
  if (html) {
    sinks.push_back(&strips);
    pipeline.slices = &strips;
  }
  absl::StatusOr<AnalyzedJob> job = AnalyzeJob(inputs, pipeline, sinks);
  if (!job.ok()) {
    std::fprintf(stderr, "idlescope report: %s\n", std::string(job.status().message()).c_str());
    return 1;
  }
  const JobReport& report = job->report;
  std::string bytes;
  if (html) {
    bytes = FormatHtmlReport(report, strips.Finish(report.span, job->device_ids));
  } else {
    StringOutput out;
    exporter->Write(report, out);
    bytes = out.text();
  }
  if (!WriteOutput("report", output, bytes)) return 1;
  if (pipeline.progress.empty()) return 0;  // --quiet

  // Throughput per CPU second (the analysis is single-threaded, so this is "on one core" even on
  // a loaded machine) and per wall second; peak RSS from the kernel's high-water mark.
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const ReadStats& stats = job->stats;
  uint64_t records = stats.host_events + stats.gpu_records;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
               static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  auto rate = [&](double seconds) {
    return seconds > 0 ? static_cast<double>(records) / seconds / 1e6 : 0.0;
  };
  std::fprintf(stderr,
               "idlescope report: %llu events (%llu host, %llu GPU) from %llu files: "
               "%.3f s CPU (%.2f M events/s), %.3f s wall (%.2f M events/s), "
               "peak RSS %.1f MiB\n",
               static_cast<unsigned long long>(records),
               static_cast<unsigned long long>(stats.host_events),
               static_cast<unsigned long long>(stats.gpu_records),
               static_cast<unsigned long long>(stats.files), cpu, rate(cpu), wall, rate(wall),
               static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}

}  // namespace idlescope
