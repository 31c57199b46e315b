// `-o FILE` of the commands that write an output (report, diff, export): the bytes go to FILE,
// or to stdout without it. A file is written whole or not at all: into FILE.tmp-PID first, then
// renamed over FILE, so an interrupted run never leaves half a page where a good one was.
#pragma once

#include <string>
#include <string_view>

namespace idlescope {

// `-o FILE`, `--output FILE` or `--output=FILE` at argv[*i]. Returns true when argv[*i] was one
// (advancing *i past a separate value); *path is then the file, or "" when the value is missing.
bool ParseOutputFlag(int argc, char** argv, int* i, std::string* path);

// Writes `bytes` to `path` ("" or "-": stdout). On failure prints one line,
// "idlescope COMMAND: cannot write FILE: REASON", and returns false.
bool WriteOutput(std::string_view command, const std::string& path, std::string_view bytes);

}  // namespace idlescope
