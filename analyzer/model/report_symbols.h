// ReportSymbols: the strings and call stacks a report refers to. Evidence names them by id and
// exporters resolve the ids (the text report joins a stack's frames on one line, JSON lists them,
// an HTML page may link a file). Ids are job-wide: the same path or stack seen by several
// processes (whose trace files number them differently) is one id. Id 0 means "none".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace idlescope {

using StringId = uint32_t;
using StackId = uint32_t;

// A stack as evidence keeps its innermost frames outside the recorder, at most this many.
inline constexpr size_t kEvidenceStackFrames = 6;

struct ReportFrame {
  StringId function = 0;  // demangled name; 0 when the symbol is unknown
  StringId module = 0;    // shared object or executable path
  uint64_t rel_pc = 0;    // the call instruction, relative to the module's load base
  StringId file = 0;      // source file when known (debug info), else 0
  uint32_t line = 0;      // source line when known, else 0
};

class ReportSymbols {
 public:
  ReportSymbols();

  // The id of `s`; 0 for "".
  StringId Intern(std::string_view s);
  // The id of a stack of these frames (innermost first); 0 for no frames. Stacks with the same
  // label (StackLabel) are one stack: they say the same thing to the reader.
  StackId InternStack(const std::vector<ReportFrame>& frames);

  std::string_view String(StringId id) const;
  const std::vector<ReportFrame>& Stack(StackId id) const;
  // The stack on one line: "save <- train_step <- main"; a frame without a function is named by
  // its module's base name and offset, "libtorch_cpu.so+0x305b7c0". "" for id 0.
  const std::string& StackLabel(StackId id) const;

  size_t string_count() const { return strings_.size(); }  // id 0 included
  size_t stack_count() const { return stacks_.size(); }    // id 0 included

 private:
  struct StackEntry {
    std::vector<ReportFrame> frames;
    std::string label;
  };
  std::vector<std::string> strings_;
  absl::flat_hash_map<std::string, StringId> string_ids_;
  std::vector<StackEntry> stacks_;
  absl::flat_hash_map<std::string, StackId> stack_ids_;  // by label
};

}  // namespace idlescope
