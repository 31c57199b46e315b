// Test support for Python stacks: the CPython interpreters found on the machine, a script's marked
// lines, and trace files read through the analyzer's reader (TraceFileReader, InternedData) with
// each event's Python frames resolved.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/trace/interned_data.h"
#include "trace.pb.h"

namespace idlescope::testing {

// The interpreter CMake found for `label`: "3.10" ... "3.13" (pyenv's) or "debian"
// (/usr/bin/python3); empty when there is none (the test skips, saying which).
std::string InterpreterPath(const std::string& label);
// Every label, found or not.
std::vector<std::string> InterpreterLabels();
// A test name for a label ("3.10" -> "3_10"), for INSTANTIATE_TEST_SUITE_P.
std::string InterpreterTestName(const std::string& label);

// Line numbers of the lines of `script` that carry "MARK:<name>", by name.
std::map<std::string, uint32_t> Marks(const std::string& script);

struct PyFrame {
  std::string file, function;
  uint32_t line = 0, first_line = 0;
  bool entry = false;
};

struct PyEvent {
  EventType type = EVENT_UNSPECIFIED;
  uint32_t tid = 0;
  std::string path;  // Event.path resolved
  uint64_t stack = 0;
  uint32_t sampled_pid = 0;  // THREAD_SAMPLE: a worker process's thread
};

// One trace file, its Interned packets kept.
struct PyTraceFile {
  std::string path;
  Header header;
  InternedData interned;
  std::vector<PyEvent> events;
  std::vector<Notice> notices;

  // The Python frames of `stack`, innermost first.
  std::vector<PyFrame> PythonFrames(uint64_t stack) const;
  // How many frames of `stack` are native.
  size_t NativeFrames(uint64_t stack) const;
  // Events of `type` on `path`.
  std::vector<const PyEvent*> On(EventType type, const std::string& path) const;
};

std::vector<PyTraceFile> ReadPyTraceDir(const std::string& dir);

// Runs `command` (through /bin/sh) with the current environment, no tracer: its stdout, and its
// exit status in `*status`.
std::string RunCapture(const std::string& command, int* status);

// `idlescope report` (the CLI at `cli`) on the trace directory `dir` with `flags`: its stdout
// (the report), and its exit status in `*status`.
std::string Report(const std::string& cli, const std::string& dir, const std::string& flags,
                   int* status);

// What the JSON report on `dir` names Python lines with, one entry each (programs/report_lines.py
// at `lines_script`, run by `python`): "<where> <what>\t<file>:<line> in <function>". `*status`:
// 0 when the report was read.
std::vector<std::string> ReportedLines(const std::string& cli, const std::string& python,
                                       const std::string& lines_script, const std::string& dir,
                                       const std::string& flags, int* status);

}  // namespace idlescope::testing
