// idlescope export --format perfetto|chrome -o FILE [-q] [-v] [--min-gap MS] [--reorder-window MS]
//                  DIR|FILE...
//
// `idlescope report --format perfetto|chrome -o FILE`, by the name the timeline exports had first
// (docs/timeline-export.md): the same exporter table and run (report_command.cc), with -o
// required since the output is a file to open in a viewer. Any format of `report` is accepted.
#include <string>
#include <utility>

#include "analyzer/cli/commands.h"
#include "analyzer/cli/input_copies.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/pipeline.h"
#include "analyzer/report/report_exporters.h"

namespace idlescope {
namespace {

constexpr char kUsage[] =
    "usage: idlescope export --format perfetto|chrome -o FILE [-q] [-v] [--min-gap MS]\n"
    "                        [--reorder-window MS] DIR|FILE...\n"
    "  The job's timeline for a trace viewer (idlescope report --format F -o FILE).\n"
    "  --format FORMAT      perfetto (Perfetto's protobuf trace: open it in ui.perfetto.dev)\n"
    "                       or chrome (Trace Event Format JSON: chrome://tracing, Perfetto);\n"
    "                       any format of idlescope report works (this is that command)\n"
    "  -o, --output FILE    where to write it (required)\n"
    "  -q, --quiet          no progress line (shown on a terminal for long analyses)\n"
    "  -v, --verbose        end with what was written (tracks, slices) and the throughput\n"
    "                       on stderr\n"
    "  --min-gap MS         shortest idle gap attributed on its own (default 1 ms)\n"
    "  --reorder-window MS  how far out of time order records may arrive (default 2000)\n"
    "  -h, --help           this text;  -V, --version  idlescope's version\n"
    "exit status: 0 written, 1 an input is not a readable trace or FILE cannot be written\n"
    "(one line says which), 2 usage error\n";

constexpr OptionSpec kExportOptions[] = {
    FormatOption(ReportExporterNames), kOutput, kQuiet, kVerbose, kMinGap, kReorderWindow,
};

constexpr CommandSpec kExport = {"export", kExportOptions, kUsage};

}  // namespace

int ExportCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kExport, argc, argv);
  if (line.exit_status) return *line.exit_status;
  ReportRequest request;
  request.command = "export";
  request.pipeline.progress = "idlescope export";
  for (const ParsedOption& option : line.options) {
    AnalysisOption analysis = ApplyAnalysisOption("export", option, &request.pipeline);
    if (analysis == AnalysisOption::kBad) return 2;
    if (analysis == AnalysisOption::kTaken) continue;
    switch (option.id) {
      case kFormatOption:
        request.format = option.value;
        break;
      case kOutputOption:
        request.output = option.value;
        break;
      case kVerboseOption:
        request.verbose = true;
        break;
    }
  }
  if (request.format.empty()) return UsageError("export", "--format is required");
  if (request.output.empty()) return UsageError("export", "-o FILE is required");
  if (line.operands.empty()) return UsageError("export", "no trace directory or file given");
  InputCopies copies;  // compressed traces, stdin, pipes (input_copies.h)
  absl::StatusOr<std::vector<std::string>> inputs = copies.Prepare(line.operands);
  if (!inputs.ok()) {
    PrintError("export", inputs.status().message());
    return 1;
  }
  request.inputs = std::move(*inputs);
  request.copies = &copies;
  return RunReport(request);
}

}  // namespace idlescope
