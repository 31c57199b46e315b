// idlescope export --format perfetto|chrome -o FILE [-q] [-v] [--min-gap MS] [--reorder-window MS]
//                  [--from S] [--to S] [--ranks LIST] [--max-bytes N] [--level full|summary]
//                  DIR|FILE...
//
// `idlescope report --format perfetto|chrome -o FILE`, by the name the timeline exports had first
// (docs/timeline-export.md): the same exporter table and run (report_command.cc), with -o
// required since the output is a file to open in a viewer. Any format of `report` is accepted;
// the selection (--from, --to, --ranks, --level) and the split into files (--max-bytes) are the
// timeline formats' (report/job_timeline.h TimelineOptions).
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/input_copies.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/pipeline.h"
#include "analyzer/report/report_exporters.h"

namespace idlescope {
namespace {

constexpr char kUsage[] =
    "usage: idlescope export --format perfetto|chrome -o FILE [-q] [-v] [--min-gap MS]\n"
    "                        [--reorder-window MS] [--from S] [--to S] [--ranks LIST]\n"
    "                        [--max-bytes N] [--level full|summary] DIR|FILE...\n"
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
    "  --from S, --to S     only the slices that overlap this time, in seconds from the\n"
    "                       job's start (perfetto, chrome)\n"
    "  --ranks LIST         only these ranks' processes (their workers too) and devices:\n"
    "                       0,2,5-7 (perfetto, chrome)\n"
    "  --max-bytes N        files of at most N bytes (K, M, G: KiB, MiB, GiB; at least 64K),\n"
    "                       each one a trace of its own: FILE, then FILE.1, FILE.2, ... with\n"
    "                       the number before FILE's extension (perfetto, chrome)\n"
    "  --level summary      a whole-job view: idle time by cause, NCCL calls and a busy\n"
    "                       slice per second per device track, not every call and GPU\n"
    "                       record (default full; perfetto, chrome)\n"
    "  -h, --help           this text;  -V, --version  idlescope's version\n"
    "exit status: 0 written, 1 an input is not a readable trace or FILE cannot be written\n"
    "(one line says which), 2 usage error\n";

enum ExportOption : int {
  kFromOption = kFirstCommandOption,
  kToOption,
  kRanksOption,
  kMaxBytesOption,
  kLevelOption,
};

constexpr OptionSpec kExportOptions[] = {
    FormatOption(ReportExporterNames),
    kOutput,
    kQuiet,
    kVerbose,
    kMinGap,
    kReorderWindow,
    {kFromOption, "from", 0, "S"},
    {kToOption, "to", 0, "S"},
    {kRanksOption, "ranks", 0, "LIST"},
    {kMaxBytesOption, "max-bytes", 0, "N"},
    {kLevelOption, "level", 0, "full|summary"},
};

// The smallest --max-bytes: a file's header, its tracks and a slice fit many times over.
constexpr uint64_t kMinPartBytes = 64 << 10;

// "0,2,5-7" as ranks; false on anything else.
bool ParseRanks(absl::string_view text, std::vector<int32_t>* ranks) {
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::pair<absl::string_view, absl::string_view> range = absl::StrSplit(item, '-');
    int32_t first = 0, last = 0;
    if (!absl::SimpleAtoi(range.first, &first) || first < 0) return false;
    last = first;
    if (item.find('-') != absl::string_view::npos &&
        (!absl::SimpleAtoi(range.second, &last) || last < first || last - first > 1'000'000)) {
      return false;
    }
    for (int32_t r = first; r <= last; ++r) ranks->push_back(r);
  }
  return !ranks->empty();
}

// "1000000", "64K", "512M", "1G" as bytes; false on anything else.
bool ParseBytes(absl::string_view text, uint64_t* bytes) {
  uint64_t scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        scale = uint64_t{1} << 10;
        break;
      case 'M':
        scale = uint64_t{1} << 20;
        break;
      case 'G':
        scale = uint64_t{1} << 30;
        break;
    }
    if (scale != 1) text.remove_suffix(1);
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n > (uint64_t{1} << 50) / scale) return false;
  *bytes = n * scale;
  return true;
}

constexpr CommandSpec kExport = {"export", kExportOptions, kUsage};

}  // namespace

int ExportCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kExport, argc, argv);
  if (line.exit_status) return *line.exit_status;
  ReportRequest request;
  request.command = "export";
  request.pipeline.progress = "idlescope export";
  bool selects = false;  // a timeline option was given
  for (const ParsedOption& option : line.options) {
    AnalysisOption analysis = ApplyAnalysisOption("export", option, &request.pipeline);
    if (analysis == AnalysisOption::kBad) return 2;
    if (analysis == AnalysisOption::kTaken) continue;
    double seconds = 0;
    switch (option.id) {
      case kFromOption:
      case kToOption:
        if (!NumberValue("export", option, &seconds)) return 2;
        (option.id == kFromOption ? request.timeline.from_s : request.timeline.to_s) = seconds;
        selects = true;
        break;
      case kRanksOption:
        if (!ParseRanks(option.value, &request.timeline.ranks)) {
          return UsageError("export", absl::StrCat("--ranks needs a list of ranks (0,2,5-7), not '",
                                                   option.value, "'"));
        }
        selects = true;
        break;
      case kMaxBytesOption:
        if (!ParseBytes(option.value, &request.timeline.max_bytes) ||
            request.timeline.max_bytes < kMinPartBytes) {
          return UsageError("export", absl::StrCat("--max-bytes needs a size of at least 64K "
                                                   "(a number of bytes, or with K, M or G), not '",
                                                   option.value, "'"));
        }
        selects = true;
        break;
      case kLevelOption:
        if (std::string_view(option.value) != "full" &&
            std::string_view(option.value) != "summary") {
          return UsageError("export",
                            absl::StrCat("--level is full or summary, not '", option.value, "'"));
        }
        request.timeline.summary = std::string_view(option.value) == "summary";
        selects = true;
        break;
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
  if (selects && request.format != "perfetto" && request.format != "chrome") {
    return UsageError("export",
                      "--from, --to, --ranks and --max-bytes are for --format perfetto "
                      "and chrome");
  }
  if (request.timeline.to_s >= 0 && request.timeline.to_s <= request.timeline.from_s) {
    return UsageError("export", "--to must be after --from");
  }
  if (request.timeline.max_bytes > 0 && request.output == "-") {
    return UsageError("export", "--max-bytes writes files: -o FILE, not stdout");
  }
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
