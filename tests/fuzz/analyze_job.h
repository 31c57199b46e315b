// The analyzer's entry point as the fuzzer drives it: the one place to change when that entry
// point changes (today: the job in shards, AnalyzeJobInShards of analyzer/shard/local.h, and in
// one pass, AnalyzeJob of analyzer/cli/pipeline.h, then the text and JSON exporters).
#pragma once

#include <string>
#include <vector>

namespace idlescope::fuzz {

// Analyses the job made of the trace files `paths` as `idlescope report` does, in shards and in
// one pass, and returns the reports (text, and JSON of the one pass), or the error messages when
// the files are refused.
std::string AnalyzeJobFiles(const std::vector<std::string>& paths);

}  // namespace idlescope::fuzz
