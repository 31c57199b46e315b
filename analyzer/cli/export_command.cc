// idlescope export --format perfetto|chrome -o FILE [--min-gap MS] [--reorder-window MS]
//                  DIR|FILE...
//
// Reads a job's trace files once, through the analysis (for the idle slices and their causes)
// and a JobTimelineRecorder beside it (report/job_timeline.h), and writes the job's timeline in
// the format asked for (report/timeline_exporters.h, docs/timeline-export.md).
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/cli/commands.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/cli/pipeline.h"
#include "analyzer/report/job_timeline.h"
#include "analyzer/report/timeline_exporters.h"

namespace idlescope {
namespace {

constexpr char kUsage[] =
    "usage: idlescope export --format perfetto|chrome -o FILE [--min-gap MS]\n"
    "                        [--reorder-window MS] DIR|FILE...\n"
    "  --format FORMAT      perfetto (Perfetto's protobuf trace: open it in ui.perfetto.dev)\n"
    "                       or chrome (Trace Event Format JSON: chrome://tracing, Perfetto)\n"
    "  -o, --output FILE    where to write it (required)\n"
    "  -q, --quiet          no progress line (shown on a terminal for long analyses)\n"
    "  --min-gap MS         shortest idle gap attributed on its own (default 1 ms)\n"
    "  --reorder-window MS  how far out of time order records may arrive (default 2000)\n";

}  // namespace

int ExportCommand(int argc, char** argv) {
  const char* format = nullptr;
  std::string output;
  PipelineOptions pipeline;
  pipeline.progress = "idlescope export";
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    AnalysisFlag common = ParseAnalysisFlag("export", argc, argv, &i, &pipeline);
    if (common == AnalysisFlag::kBad) return 2;
    if (common == AnalysisFlag::kTaken) continue;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (ParseFormatFlag(argc, argv, &i, &format)) {
      if (format == nullptr) {
        std::fprintf(stderr, "idlescope export: --format needs a value (perfetto, chrome)\n");
        return 2;
      }
    } else if (ParseOutputFlag(argc, argv, &i, &output)) {
      if (output.empty()) {
        std::fprintf(stderr, "idlescope export: %s needs a file name\n", argv[i]);
        return 2;
      }
    } else if (arg.starts_with("-") && arg.size() > 1) {
      std::fprintf(stderr, "idlescope export: unknown option '%s'\n%s", argv[i], kUsage);
      return 2;
    } else {
      inputs.emplace_back(arg);
    }
  }
  if (inputs.empty() || format == nullptr || output.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string_view name = format;
  if (name != "perfetto" && name != "chrome") {
    std::fprintf(stderr, "idlescope export: unknown format '%s' (formats: perfetto, chrome)\n",
                 format);
    return 2;
  }

  JobTimelineRecorder recorder;
  pipeline.slices = &recorder;
  absl::StatusOr<AnalyzedJob> job = AnalyzeJob(inputs, pipeline, {&recorder});
  if (!job.ok()) {
    std::fprintf(stderr, "idlescope export: %s\n", std::string(job.status().message()).c_str());
    return 1;
  }
  JobTimeline timeline = recorder.Build(job->symbols, job->device_ids);
  std::string bytes =
      name == "perfetto" ? FormatPerfettoTrace(timeline) : FormatChromeTrace(timeline);
  if (!WriteOutput("export", output, bytes)) return 1;
  if (!pipeline.progress.empty()) {
    std::fprintf(stderr,
                 "idlescope export: %zu tracks, %zu slices written to %s (%llu GPU records "
                 "without a flow: they start before their call)\n",
                 timeline.tracks.size(), timeline.slices.size(), output.c_str(),
                 static_cast<unsigned long long>(timeline.flows_before_their_call));
  }
  return 0;
}

}  // namespace idlescope
