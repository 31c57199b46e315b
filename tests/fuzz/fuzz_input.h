// What the fuzz targets do with one input, shared by the libFuzzer entry points
// (*_fuzzer.cc, built with clang -fsanitize=fuzzer) and by fuzz_regression_test, which replays
// the kept corpus and every crash ever found through the same functions in the normal build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace idlescope::fuzz {

// One trace file's bytes through the reader: TraceFileReader (every packet, v2 batches expanded
// by FormatExpander), InternedData (every id an event or activity refers to resolved, stacks
// walked and formatted), the tail description, and `idlescope dump` of the same file.
void ReadTrace(std::string_view bytes);

// A job of one or more trace files through the analyzer's entry point: read, analyse, format
// the text and JSON reports. The input holds the files' bytes separated by kNextFile.
void AnalyzeJob(std::string_view input);

// Separates the files of one AnalyzeJob input (a seed of two files is file1 + kNextFile + file2).
inline constexpr std::string_view kNextFile = "\n--idlescope-fuzz-next-file--\n";
// At most this many files per input (more separators are bytes of the last file).
inline constexpr size_t kMaxFiles = 3;

// Splits an AnalyzeJob input into its files.
std::vector<std::string_view> SplitFiles(std::string_view input);

// Paths of in-memory files (memfd, /proc/self/fd/N) holding `contents`, reused across calls so
// an iteration costs no disk I/O.
std::vector<std::string> MemoryFiles(const std::vector<std::string_view>& contents);

}  // namespace idlescope::fuzz
