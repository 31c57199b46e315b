#include "analyzer/read/inputs.h"

#include <sys/stat.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope {

absl::StatusOr<std::vector<TraceInput>> ExpandInputs(const std::vector<std::string>& inputs) {
  std::vector<TraceInput> paths;
  for (const std::string& input : inputs) {
    struct stat st;
    if (stat(input.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      absl::StatusOr<std::vector<std::string>> listed = ListTraceFiles(input);
      if (!listed.ok()) return listed.status();
      if (listed->empty()) {
        return absl::NotFoundError(absl::StrCat(input, ": no *.idlescope trace files"));
      }
      for (std::string& path : *listed) paths.push_back({std::move(path), true});
    } else {
      paths.push_back({input, false});
    }
  }
  if (paths.empty()) return absl::InvalidArgumentError("no trace files given");
  return paths;
}

}  // namespace idlescope
