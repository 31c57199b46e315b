// The trace files a user names: files as given, a directory as all its *.idlescope files (sorted
// by name). One definition for every command that reads a job.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace idlescope {

struct TraceInput {
  std::string path;
  bool listed = false;  // found in a directory (not named by the user)
};

// Errors (one line): a directory that cannot be listed or holds no trace file, no input at all.
// Files are not opened here (TraceFileReader::Open says what is wrong with one).
absl::StatusOr<std::vector<TraceInput>> ExpandInputs(const std::vector<std::string>& inputs);

}  // namespace idlescope
