// Command-line pieces shared by the subcommands.
#pragma once

#include <string_view>

#include "analyzer/cli/pipeline.h"

namespace idlescope {

// A non-negative decimal number ("2", "0.5", "1e3"); false for anything else.
bool ParseNonNegative(const char* text, double* out);

// `--format NAME` (or `--format=NAME`) at argv[*i], and `--json` as a synonym of `--format json`.
// Returns true when argv[*i] was one of them (advancing *i past a separate value); *name is then
// the format named, or nullptr when `--format` had no value.
bool ParseFormatFlag(int argc, char** argv, int* i, const char** name);

// The value of the flag at argv[*i] as a non-negative number (advancing *i past it); false after
// "idlescope COMMAND: FLAG needs a non-negative number" on stderr.
bool NumberValue(std::string_view command, int argc, char** argv, int* i, double* out);

// The flags of every subcommand that analyses a job (report, export): -q/--quiet (no progress:
// pipeline->progress emptied), --min-gap MS, --reorder-window MS. kBad: the message is printed.
enum class AnalysisFlag { kNotOne, kTaken, kBad };
AnalysisFlag ParseAnalysisFlag(std::string_view command, int argc, char** argv, int* i,
                               PipelineOptions* pipeline);

}  // namespace idlescope
