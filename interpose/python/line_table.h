// Line numbers from a CPython code object's line table (co_linetable), computed the way the
// interpreter's PyCode_Addr2Line does, from a copy of the table: the writer thread resolves Python
// frames long after the code object may have been freed, so it never reads the interpreter's
// memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace idlescope::python {

enum class LineTableFormat : uint8_t {
  // CPython 3.10: (bytecode bytes, line delta) byte pairs; a line delta of -128 means "no line"
  // (Objects/lnotab_notes.txt of 3.10).
  kPairs310,
  // CPython 3.11+: the location table (Objects/locations.md): entries of 1-8 code units, each
  // starting with a byte 1cccclll (code, length - 1); the line delta is in the code or a signed
  // varint after it; code 15 means "no location".
  kLocations311,
};

// The line of the instruction at code unit `unit` (2-byte units from the start of the bytecode),
// or -1 when the table gives it no line (or does not cover it). A negative `unit` is a frame that
// has not started yet: its line is `first_line`, as CPython says for it.
int LineForOffset(LineTableFormat format, const uint8_t* table, size_t size, int first_line,
                  int64_t unit);

}  // namespace idlescope::python
