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

StackId ReportSymbols::InternStack(const std::vector<ReportFrame>& frames,
                                   const std::optional<FirstUserFrame>& first_user) {
  if (frames.empty()) return 0;
  std::string label;
  for (const ReportFrame& frame : frames) {
    if (!label.empty()) label += " <- ";
    if (frame.kind == FRAME_PYTHON) {
      label += PythonFrameLabel(frame, /*base_name=*/true);
      continue;
    }
    if (frame.function != 0) {
      label += String(frame.function);
      continue;
    }
    std::string_view module = String(frame.module);
    size_t slash = module.rfind('/');
    std::string_view base = slash == std::string_view::npos ? module : module.substr(slash + 1);
    absl::StrAppendFormat(&label, "%s+0x%x", base.empty() ? "?" : base, frame.rel_pc);
  }
  std::string first_user_label =
      first_user ? PythonFrameLabel(first_user->frame, /*base_name=*/false) : std::string();
  // The first user frame is part of what a stack says (the frames kept may all be native), and
  // whether it is the job's own code.
  std::string key = first_user ? absl::StrCat(label, "\n", first_user_label,
                                              first_user->user_code ? "" : "\n(library)")
                               : label;
  auto [it, inserted] = stack_ids_.try_emplace(key, static_cast<StackId>(stacks_.size()));
  if (inserted) {
    stacks_.push_back({frames, std::move(label), first_user, std::move(first_user_label)});
  }
  return it->second;
}

std::string ReportSymbols::PythonFrameLabel(const ReportFrame& frame, bool base_name) const {
  std::string_view file = String(frame.file);
  if (size_t slash = file.rfind('/'); base_name && slash != std::string_view::npos) {
    file = file.substr(slash + 1);
  }
  std::string_view function = String(frame.function);
  std::string out(file.empty() ? "?" : file);
  if (frame.line != 0) absl::StrAppend(&out, ":", frame.line);
  out += " in ";
  out += function.empty() ? std::string_view("?") : function;
  return out;
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

const FirstUserFrame* ReportSymbols::FirstUser(StackId id) const {
  const StackEntry& entry = stacks_[id < stacks_.size() ? id : 0];
  return entry.first_user ? &*entry.first_user : nullptr;
}

const std::string& ReportSymbols::FirstUserLabel(StackId id) const {
  return stacks_[id < stacks_.size() ? id : 0].first_user_label;
}

}  // namespace idlescope
