// SymbolSource: resolves the per-process ids that evidence refers to (a trace file numbers its
// strings and stacks itself) when the report is built. The read stage hands one over as a value
// once the files are read (read/job_symbols.h); tests implement it with a map.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace.pb.h"

namespace idlescope {

// One frame of a stack as its trace file has it. The views live as long as the source.
struct SymbolFrame {
  std::string_view function = {};  // "" when the symbol is unknown; Python: the qualified name
  std::string_view module = {};    // shared object or executable path; Python: ""
  uint64_t rel_pc = 0;
  std::string_view file = {};  // source file, "" when unknown; Python: the code object's file
  uint32_t line = 0;
  FrameKind kind = FRAME_NATIVE;
};

class SymbolSource {
 public:
  virtual ~SymbolSource() = default;
  // A string (file path, address, kernel name; a NUL-separated argv joined by spaces); "" when
  // unknown.
  virtual std::string String(uint32_t process, uint64_t id) const = 0;
  // A call stack's frames, innermost first, every one the file has (the recorder's own frames
  // too); empty when unknown. A stack taken on a Python thread has its Python frames in place of
  // the interpreter's evaluation loops (proto/trace.proto, StackNode).
  virtual std::vector<SymbolFrame> Stack(uint32_t process, uint64_t stack_id) const = 0;
  // The same stack's native frames only, as it reads without Python stacks. This default drops
  // the Python frames of Stack() (a source that merges them keeps the frames they replaced).
  virtual std::vector<SymbolFrame> NativeStack(uint32_t process, uint64_t stack_id) const {
    std::vector<SymbolFrame> frames = Stack(process, stack_id);
    std::erase_if(frames, [](const SymbolFrame& f) { return f.kind == FRAME_PYTHON; });
    return frames;
  }
};

}  // namespace idlescope
