// SymbolSource: resolves the per-process ids that evidence refers to (a trace file numbers its
// strings and stacks itself) when the report is built. The read stage hands one over as a value
// once the files are read (read/job_symbols.h); tests implement it with a map.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace idlescope {

// One frame of a stack as its trace file has it. The views live as long as the source.
struct SymbolFrame {
  std::string_view function = {};  // "" when the symbol is unknown
  std::string_view module = {};    // shared object or executable path
  uint64_t rel_pc = 0;
  std::string_view file = {};  // source file, "" when unknown
  uint32_t line = 0;
};

class SymbolSource {
 public:
  virtual ~SymbolSource() = default;
  // A string (file path, address, kernel name; a NUL-separated argv joined by spaces); "" when
  // unknown.
  virtual std::string String(uint32_t process, uint64_t id) const = 0;
  // A call stack's frames, innermost first, every one the file has (the recorder's own frames
  // too); empty when unknown.
  virtual std::vector<SymbolFrame> Stack(uint32_t process, uint64_t stack_id) const = 0;
};

}  // namespace idlescope
