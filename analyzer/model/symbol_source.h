// SymbolSource: resolves the per-process ids that evidence refers to (a trace file numbers its
// strings and stacks itself) when the report is built. The read stage hands it over as a value
// once the files are read (read/job_symbols.h); tests implement it with a map.
#pragma once

#include <cstdint>
#include <string>

namespace idlescope {

class SymbolSource {
 public:
  virtual ~SymbolSource() = default;
  // A string (file path, address, kernel name); "" when unknown.
  virtual std::string String(uint32_t process, uint64_t id) const = 0;
  // A call stack, innermost frame first, e.g. "save <- train_step <- main"; "" when unknown.
  virtual std::string Stack(uint32_t process, uint64_t stack_id) const = 0;
};

}  // namespace idlescope
