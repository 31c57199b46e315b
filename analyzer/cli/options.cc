#include "analyzer/cli/options.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace idlescope {

bool ParseNonNegative(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0' && *out >= 0;
}

bool ParseFormatFlag(int argc, char** argv, int* i, const char** name) {
  std::string_view arg = argv[*i];
  if (arg == "--json") {
    *name = "json";
    return true;
  }
  if (arg.starts_with("--format=")) {
    *name = argv[*i] + sizeof("--format=") - 1;
    return true;
  }
  if (arg != "--format") return false;
  *name = *i + 1 < argc ? argv[++*i] : nullptr;
  return true;
}

bool NumberValue(std::string_view command, int argc, char** argv, int* i, double* out) {
  if (*i + 1 >= argc || !ParseNonNegative(argv[*i + 1], out)) {
    std::fprintf(stderr, "idlescope %s: %s needs a non-negative number\n",
                 std::string(command).c_str(), argv[*i]);
    return false;
  }
  ++*i;
  return true;
}

AnalysisFlag ParseAnalysisFlag(std::string_view command, int argc, char** argv, int* i,
                               PipelineOptions* pipeline) {
  std::string_view arg = argv[*i];
  double ms = 0;
  if (arg == "-q" || arg == "--quiet") {
    pipeline->progress.clear();
  } else if (arg == "--min-gap") {
    if (!NumberValue(command, argc, argv, i, &ms)) return AnalysisFlag::kBad;
    pipeline->analysis.min_gap = static_cast<Ns>(ms * 1e6);
  } else if (arg == "--reorder-window") {
    if (!NumberValue(command, argc, argv, i, &ms)) return AnalysisFlag::kBad;
    pipeline->read.reorder_window = static_cast<Ns>(ms * 1e6);
  } else {
    return AnalysisFlag::kNotOne;
  }
  return AnalysisFlag::kTaken;
}

}  // namespace idlescope
