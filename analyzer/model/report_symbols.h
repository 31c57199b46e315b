// ReportSymbols: the strings and call stacks a report refers to. Evidence names them by id and
// exporters resolve the ids (the text report joins a stack's frames on one line, JSON lists them,
// an HTML page may link a file). Ids are job-wide: the same path or stack seen by several
// processes (whose trace files number them differently) is one id. Id 0 means "none".
//
// A stack taken on a Python thread holds Python frames in place of the interpreter's evaluation
// loops, and knows its first user frame: the line of the job's own code it was called from
// (docs/attribution.md, "Python frames in evidence").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "trace.pb.h"

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
  // FRAME_PYTHON: a CPython frame; function is its qualified name, file its code's file, line the
  // line it was executing, module 0.
  FrameKind kind = FRAME_NATIVE;
};

// The frame a stack with Python frames is read by.
struct FirstUserFrame {
  ReportFrame frame;  // a Python frame
  // Its place in the whole stack (Python frames merged, the recorder's own frames left out),
  // innermost 0: it may lie beyond the frames the stack keeps.
  uint32_t depth = 0;
  // The job's own code; false when no Python frame of the stack is, and this is the innermost
  // Python frame.
  bool user_code = false;
};

class ReportSymbols {
 public:
  ReportSymbols();

  // The id of `s`; 0 for "".
  StringId Intern(std::string_view s);
  // The id of a stack of these frames (innermost first) and first user frame; 0 for no frames.
  // Stacks with the same label (StackLabel) and first user frame (FirstUserLabel) are one stack:
  // they say the same thing to the reader.
  StackId InternStack(const std::vector<ReportFrame>& frames,
                      const std::optional<FirstUserFrame>& first_user = std::nullopt);

  std::string_view String(StringId id) const;
  const std::vector<ReportFrame>& Stack(StackId id) const;
  // The stack on one line: "save <- train_step <- main"; a frame without a function is named by
  // its module's base name and offset, "libtorch_cpu.so+0x305b7c0"; a Python frame by its file's
  // base name, line and function, "serialization.py:652 in _save", and so a native frame whose
  // line is known: "mixed.cu:43 in load_batch(float*, unsigned long)". "" for id 0.
  const std::string& StackLabel(StackId id) const;
  // The same as the text report prints it: native functions by their short names
  // (ShortFunctionName, model/frame_names.h), and without the tail every program's stacks end
  // with (main, the C library's start and a thread's start, _start), so that the stack reads from
  // its own code: "mixed.cu:43 in load_batch <- mixed.cu:115 in train"; a stack without Python
  // frames whose innermost frame is a library's is led by the job's own innermost frame (a frame
  // with a known line, in a module outside the system's and CUDA's library directories and Python
  // packages): "io.cc:40 in save [write <- std::ostream::write <- io.cc:40 in save <- ...]". "" for
  // id 0.
  const std::string& ShortStackLabel(StackId id) const;
  // nullptr when the stack has no Python frame (or for id 0).
  const FirstUserFrame* FirstUser(StackId id) const;
  // The first user frame with its file as recorded: "/work/train.py:42 in train_step"; "" when
  // there is none.
  const std::string& FirstUserLabel(StackId id) const;
  // A Python frame: "FILE:LINE in FUNCTION", FILE as recorded or (base_name) only its base name;
  // "?" for a part not known, no ":LINE" for line 0.
  std::string PythonFrameLabel(const ReportFrame& frame, bool base_name) const;
  // A native frame: "FILE:LINE in FUNCTION" (FILE's base name) when its line is known, else its
  // function, else "MODULE+0xOFFSET" (the module's base name); `short_name`: the function by its
  // ShortFunctionName.
  std::string NativeFrameLabel(const ReportFrame& frame, bool short_name) const;

  size_t string_count() const { return strings_.size(); }  // id 0 included
  size_t stack_count() const { return stacks_.size(); }    // id 0 included

 private:
  struct StackEntry {
    std::vector<ReportFrame> frames;
    std::string label;
    std::string short_label;
    std::optional<FirstUserFrame> first_user;
    std::string first_user_label;
  };
  std::vector<std::string> strings_;
  absl::flat_hash_map<std::string, StringId> string_ids_;
  std::vector<StackEntry> stacks_;
  absl::flat_hash_map<std::string, StackId> stack_ids_;  // by label and first user label
};

}  // namespace idlescope
