// The command-line conventions every subcommand follows, getopt_long's as GNU tools have them:
// `--name=value` and `--name value`, `-xVALUE` and `-x VALUE`, grouped short flags (`-qo FILE`),
// a unique prefix of a long name (`--form`), `--` ends the options, and options and operands in
// any order (except for `run`, whose options end where the command to run starts). Every command
// also takes -h/--help (its usage on stdout) and -V/--version. An unknown option, an option
// without its value and a value that is not what the option takes are one line on stderr, naming
// it, and exit status 2.
//
// A command declares its options in one table (CommandSpec) and handles what ParseCommandLine
// returns, in the order given; the options several commands share are declared here.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "analyzer/cli/pipeline.h"

namespace idlescope {

struct OptionSpec {
  int id;                       // what ParsedOption::id says: an OptionId, or the command's own
  const char* name;             // the long name: "min-gap" for --min-gap
  char short_name = 0;          // 'o' for -o; 0: none
  const char* value = nullptr;  // the value's name ("MS", "FILE"); nullptr: a flag
  // The values it takes, listed when it is given none ("text, json, html"); nullptr: none.
  std::string (*values)() = nullptr;
};

struct CommandSpec {
  std::string_view name;  // "report"
  std::span<const OptionSpec> options;
  const char* usage;                    // what --help prints, exit statuses included
  bool options_end_at_operand = false;  // `run`: its command's own options are not ours
};

struct ParsedOption {
  int id;
  const char* name;             // the long name, for messages
  const char* value = nullptr;  // nullptr for a flag
};

struct ParsedCommandLine {
  // Set: the command ends with this status (0 after --help or --version; 2 after a usage error,
  // said in one line).
  std::optional<int> exit_status;
  std::vector<ParsedOption> options;  // in the order given
  std::vector<std::string> operands;
};

// Parses argv (argv[0]: the command's name; getopt_long may reorder argv).
ParsedCommandLine ParseCommandLine(const CommandSpec& spec, int argc, char** argv);

// "idlescope COMMAND: MESSAGE" on stderr, one line: the message's control characters escaped
// (report/escape.h: a path or name in it is the user's or the job's bytes).
void PrintError(std::string_view command, absl::string_view message);
// A usage error: PrintError with where to read the usage; returns 2, the usage exit status.
int UsageError(std::string_view command, absl::string_view message);

// The ids of the options several commands share; a command's own start at kFirstCommandOption.
enum OptionId : int {
  kFormatOption = 1,
  kJsonOption,
  kOutputOption,
  kQuietOption,
  kVerboseOption,
  kMinGapOption,
  kTopOption,
  kReorderWindowOption,
  kNoPythonFramesOption,
  kStepMarkerOption,
  kFirstCommandOption = 100,
};

// --format FORMAT, listing `names` when it has no value; --json, the same as --format json.
constexpr OptionSpec FormatOption(std::string (*names)()) {
  return {kFormatOption, "format", 0, "FORMAT", names};
}
inline constexpr OptionSpec kJson = {kJsonOption, "json"};
// -o, --output FILE.
inline constexpr OptionSpec kOutput = {kOutputOption, "output", 'o', "FILE"};
// -q, --quiet: no progress line.
inline constexpr OptionSpec kQuiet = {kQuietOption, "quiet", 'q'};
// -v, --verbose: the closing lines on stderr (throughput, what an export wrote).
inline constexpr OptionSpec kVerbose = {kVerboseOption, "verbose", 'v'};
// The analysis options of report, export and plan.
inline constexpr OptionSpec kMinGap = {kMinGapOption, "min-gap", 0, "MS"};
inline constexpr OptionSpec kTop = {kTopOption, "top", 0, "N"};
inline constexpr OptionSpec kReorderWindow = {kReorderWindowOption, "reorder-window", 0, "MS"};
inline constexpr OptionSpec kNoPythonFrames = {kNoPythonFramesOption, "no-python-frames"};
inline constexpr OptionSpec kStepMarker = {kStepMarkerOption, "step-marker", 0, "NAME"};

// The option's value as a non-negative decimal number ("2", "0.5", "1e3"); false after
// "idlescope COMMAND: --NAME needs a non-negative number, not 'VALUE'".
bool NumberValue(std::string_view command, const ParsedOption& option, double* out);
// The same for `text` alone (an operand).
bool ParseNonNegative(const char* text, double* out);

// Applies one of the shared analysis options (-q, --min-gap, --top, --reorder-window,
// --no-python-frames) to `pipeline`. kNotOne: another option; kBad: its value is not a number
// (said).
enum class AnalysisOption { kNotOne, kTaken, kBad };
AnalysisOption ApplyAnalysisOption(std::string_view command, const ParsedOption& option,
                                   PipelineOptions* pipeline);

}  // namespace idlescope
