#include "analyzer/read/job_symbols.h"

#include <algorithm>

namespace idlescope {

InternedData& JobSymbols::ForProcess(uint32_t process) {
  if (process >= tables_.size()) tables_.resize(process + 1);
  return tables_[process];
}

const InternedData* JobSymbols::Find(uint32_t process) const {
  return process < tables_.size() ? &tables_[process] : nullptr;
}

std::string JobSymbols::String(uint32_t process, uint64_t id) const {
  const InternedData* interned = Find(process);
  if (interned == nullptr) return "";
  absl::string_view s = interned->String(id);
  std::string out(s.data(), s.size());
  // argv lists are NUL-separated.
  std::replace(out.begin(), out.end(), '\0', ' ');
  return out;
}

std::vector<SymbolFrame> JobSymbols::Stack(uint32_t process, uint64_t stack_id) const {
  std::vector<SymbolFrame> frames;
  const InternedData* interned = Find(process);
  if (interned == nullptr) return frames;
  auto view = [&](uint64_t id) {
    absl::string_view s = interned->String(id);
    return std::string_view(s.data(), s.size());
  };
  for (const Frame* frame : interned->Stack(stack_id)) {
    frames.push_back({view(frame->function()), view(frame->module()), frame->rel_pc(),
                      view(frame->file()), frame->line()});
  }
  return frames;
}

}  // namespace idlescope
