// idlescope export --format perfetto|chrome -o FILE [--min-gap MS] [--reorder-window MS]
//                  DIR|FILE...
//
// `idlescope report --format perfetto|chrome -o FILE`, by the name the timeline exports had first
// (docs/timeline-export.md): the same exporter table and run (report_command.cc), with -o
// required since the output is a file to open in a viewer. Any format of `report` is accepted.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/cli/commands.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/cli/pipeline.h"
#include "analyzer/report/report_exporters.h"

namespace idlescope {
namespace {

constexpr char kUsage[] =
    "usage: idlescope export --format perfetto|chrome -o FILE [--min-gap MS]\n"
    "                        [--reorder-window MS] DIR|FILE...\n"
    "  --format FORMAT      perfetto (Perfetto's protobuf trace: open it in ui.perfetto.dev)\n"
    "                       or chrome (Trace Event Format JSON: chrome://tracing, Perfetto);\n"
    "                       any format of idlescope report works (this is that command)\n"
    "  -o, --output FILE    where to write it (required)\n"
    "  -q, --quiet          no progress line (shown on a terminal for long analyses) and no\n"
    "                       closing lines\n"
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
        std::fprintf(stderr, "idlescope export: --format needs a value (%s)\n",
                     ReportExporterNames().c_str());
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
  return RunReport({.command = "export",
                    .inputs = std::move(inputs),
                    .pipeline = std::move(pipeline),
                    .format = format,
                    .output = std::move(output)});
}

}  // namespace idlescope
