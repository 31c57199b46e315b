// Python frames in evidence: which frame of a stack taken on a Python thread the report reads it
// by (docs/attribution.md, "Python frames in evidence"). The job's own code is what its author
// can change; the interpreter's standard library, installed packages and torch are not.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "analyzer/model/symbol_source.h"

namespace idlescope {

// Whether a Python code object's file is the job's own code. Not: a pseudo-file ("<frozen
// runpy>", "<string>"), a path with a site-packages or dist-packages component (installed
// packages, a virtualenv's too), a pythonX.Y component (the standard library: /usr/lib/python3.11/,
// pyenv's .../lib/python3.12/) or a torch component (a torch source checkout). Works on traces
// redacted with IDLESCOPE_REDACT=paths, which keeps those directory names readable.
bool IsUserCode(std::string_view file);

struct FirstUserChoice {
  size_t index = 0;        // into the frames given
  bool user_code = false;  // false: no Python frame is the job's own, this is the innermost one
};

// The frame a stack is read by: the innermost Python frame whose file IsUserCode, else the
// innermost Python frame; nullopt when the stack has no Python frame.
std::optional<FirstUserChoice> ChooseFirstUser(const std::vector<SymbolFrame>& frames);

}  // namespace idlescope
