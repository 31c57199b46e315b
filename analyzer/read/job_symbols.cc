#include "analyzer/read/job_symbols.h"

#include <algorithm>

namespace idlescope {

InternedData& JobSymbols::ForProcess(uint32_t process) {
  if (process >= tables_.size()) tables_.resize(process + 1);
  if (tables_[process] == nullptr) tables_[process] = std::make_unique<InternedData>();
  return *tables_[process];
}

const InternedData* JobSymbols::Find(uint32_t process) const {
  return process < tables_.size() ? tables_[process].get() : nullptr;
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
  return Frames(process, stack_id, /*merged=*/true);
}

std::vector<SymbolFrame> JobSymbols::NativeStack(uint32_t process, uint64_t stack_id) const {
  return Frames(process, stack_id, /*merged=*/false);
}

std::vector<SymbolFrame> JobSymbols::Frames(uint32_t process, uint64_t stack_id,
                                            bool merged) const {
  std::vector<SymbolFrame> frames;
  const InternedData* interned = Find(process);
  if (interned == nullptr) return frames;
  auto text = [&](uint64_t id) {
    absl::string_view s = interned->String(id);
    return std::string_view(s.data(), s.size());
  };
  std::vector<const Frame*> stack =
      merged ? interned->MergedStack(stack_id) : interned->Stack(stack_id);
  for (const Frame* frame : stack) {
    if (!merged && frame->kind() == FRAME_PYTHON) continue;
    SymbolFrame f{text(frame->function()), text(frame->module()), frame->rel_pc(),
                  text(frame->file()),     frame->line(),         frame->kind()};
    if (f.kind == FRAME_NATIVE && f.file.empty() && !f.module.empty()) {
      absl::string_view build_id = interned->BuildId(frame->module());
      if (!build_id.empty()) {
        if (std::optional<SourceLine> line = SharedSourceLines().Find(
                f.module, std::string_view(build_id.data(), build_id.size()), f.rel_pc)) {
          f.file = line->file;
          f.line = line->line;
        }
      }
    }
    frames.push_back(f);
  }
  return frames;
}

}  // namespace idlescope
