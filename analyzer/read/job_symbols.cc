#include "analyzer/read/job_symbols.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

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

std::string JobSymbols::Stack(uint32_t process, uint64_t stack_id) const {
  const InternedData* interned = Find(process);
  if (interned == nullptr) return "";
  std::vector<std::string> names;
  for (const Frame* frame : interned->Stack(stack_id)) {
    absl::string_view module = interned->String(frame->module());
    // The recorder's own frames say nothing about the program.
    if (module.find("libidlescope") != absl::string_view::npos) continue;
    absl::string_view function = interned->String(frame->function());
    if (!function.empty()) {
      names.emplace_back(function.data(), function.size());
    } else {
      size_t slash = module.rfind('/');
      absl::string_view base = slash == absl::string_view::npos ? module : module.substr(slash + 1);
      names.push_back(absl::StrFormat("%s+0x%x", base.empty() ? "?" : base, frame->rel_pc()));
    }
    if (names.size() == 6) break;
  }
  return absl::StrJoin(names, " <- ");
}

}  // namespace idlescope
