#include "analyzer/model/report_symbols.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace idlescope {

ReportSymbols::ReportSymbols() : strings_(1), stacks_(1) {}

StringId ReportSymbols::Intern(std::string_view s) {
  if (s.empty()) return 0;
  auto [it, inserted] = string_ids_.try_emplace(absl::string_view(s.data(), s.size()),
                                                static_cast<StringId>(strings_.size()));
  if (inserted) strings_.emplace_back(s);
  return it->second;
}

StackId ReportSymbols::InternStack(const std::vector<ReportFrame>& frames) {
  if (frames.empty()) return 0;
  std::string label;
  for (const ReportFrame& frame : frames) {
    if (!label.empty()) label += " <- ";
    if (frame.function != 0) {
      label += String(frame.function);
      continue;
    }
    std::string_view module = String(frame.module);
    size_t slash = module.rfind('/');
    std::string_view base = slash == std::string_view::npos ? module : module.substr(slash + 1);
    absl::StrAppendFormat(&label, "%s+0x%x", base.empty() ? "?" : base, frame.rel_pc);
  }
  auto [it, inserted] = stack_ids_.try_emplace(label, static_cast<StackId>(stacks_.size()));
  if (inserted) stacks_.push_back({frames, std::move(label)});
  return it->second;
}

std::string_view ReportSymbols::String(StringId id) const {
  return id < strings_.size() ? std::string_view(strings_[id]) : std::string_view();
}

const std::vector<ReportFrame>& ReportSymbols::Stack(StackId id) const {
  return stacks_[id < stacks_.size() ? id : 0].frames;
}

const std::string& ReportSymbols::StackLabel(StackId id) const {
  return stacks_[id < stacks_.size() ? id : 0].label;
}

}  // namespace idlescope
