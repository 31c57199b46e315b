// Command-line pieces shared by the subcommands.
#pragma once

#include <string_view>

namespace idlescope {

// A non-negative decimal number ("2", "0.5", "1e3"); false for anything else.
bool ParseNonNegative(const char* text, double* out);

// `--format NAME` (or `--format=NAME`) at argv[*i], and `--json` as a synonym of `--format json`.
// Returns true when argv[*i] was one of them (advancing *i past a separate value); *name is then
// the format named, or nullptr when `--format` had no value.
bool ParseFormatFlag(int argc, char** argv, int* i, const char** name);

}  // namespace idlescope
