// Runs a program the way a user's shell would, capturing its output and wait status.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace idlescope::testing {

struct ProcessResult {
  int wait_status = 0;  // as from waitpid
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs argv[0] (a path) with `argv`, extra environment `env` ("NAME=value", added to or replacing
// the current environment; "NAME=" with nothing after removes NAME), in directory `cwd` when not
// empty. Waits for it.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {}, const std::string& cwd = "");

// Starts the program without waiting; its stdout/stderr go to files `out_path`/`err_path`.
pid_t StartProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& out_path, const std::string& err_path,
                   const std::string& cwd = "");

std::string ReadFileOrEmpty(const std::string& path);

// "exited 3", "killed by signal 15": for assertion messages.
std::string DescribeWaitStatus(int wait_status);

}  // namespace idlescope::testing
