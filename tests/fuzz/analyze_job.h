// The analyzer's entry point as the fuzzer drives it: the one place to change when that entry
// point changes (today: AnalyzeJob of analyzer/cli/pipeline.h, then the text and JSON exporters).
#pragma once

#include <string>
#include <vector>

namespace idlescope::fuzz {

// Analyses the job made of the trace files `paths` as `idlescope report` does and returns the
// text report followed by the JSON report, or the error message when the files are refused.
std::string AnalyzeJobFiles(const std::vector<std::string>& paths);

}  // namespace idlescope::fuzz
