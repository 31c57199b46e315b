#include "analyzer/cli/options.h"

#include <cstdlib>

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

}  // namespace idlescope
