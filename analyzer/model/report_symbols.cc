#include "analyzer/model/report_symbols.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/model/frame_names.h"

namespace idlescope {
namespace {

std::string_view BaseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Whether a native frame is of the tail every stack ends with: the program's main and how the C
// library reached it (__libc_start_call_main, often unnamed: libc.so.6+0x27249), a thread's start
// (start_thread, clone3), the executable's _start, the dynamic loader.
bool IsCommonTail(const ReportFrame& frame, std::string_view function, std::string_view module) {
  if (frame.kind != FRAME_NATIVE) return false;
  for (std::string_view name : {"main", "_start", "__libc_start_main", "__libc_start_call_main",
                                "start_thread", "clone", "clone3", "__clone", "__clone3"}) {
    if (function == name) return true;
  }
  std::string_view base = BaseName(module);
  return base.substr(0, 7) == "libc.so" || base.substr(0, 8) == "ld-linux";
}

// Whether a native frame is the job's own code: its line is known (its module has debug info)
// and its module is not installed software: not under the system's library directories or
// CUDA's, not in a Python package directory (site-packages, dist-packages).
bool IsNativeUserCode(const ReportFrame& frame, std::string_view module) {
  if (frame.kind != FRAME_NATIVE || frame.file == 0 || frame.line == 0 || module.empty()) {
    return false;
  }
  for (std::string_view prefix : {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/",
                                  "/usr/local/cuda", "/usr/local/lib/", "/usr/local/nvidia/"}) {
    if (module.substr(0, prefix.size()) == prefix) return false;
  }
  return module.find("/site-packages/") == std::string_view::npos &&
         module.find("/dist-packages/") == std::string_view::npos;
}

}  // namespace

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
  std::vector<std::string> short_frames;
  for (const ReportFrame& frame : frames) {
    if (!label.empty()) label += " <- ";
    if (frame.kind == FRAME_PYTHON) {
      label += PythonFrameLabel(frame, /*base_name=*/true);
      short_frames.push_back(PythonFrameLabel(frame, /*base_name=*/true));
      continue;
    }
    label += NativeFrameLabel(frame, /*short_name=*/false);
    short_frames.push_back(NativeFrameLabel(frame, /*short_name=*/true));
  }
  // The tail dropped, its innermost frame kept if the stack is nothing else.
  size_t kept = frames.size();
  while (kept > 1 && IsCommonTail(frames[kept - 1], String(frames[kept - 1].function),
                                  String(frames[kept - 1].module))) {
    --kept;
  }
  short_frames.resize(kept);
  std::string short_label = absl::StrJoin(short_frames, " <- ");
  // A stack whose innermost frames are libraries' (write <- std::ostream::write <- ...) is read
  // by the job's own frame that called them, first, as a Python stack is by its first user frame.
  if (!first_user) {
    for (size_t i = 1; i < kept; ++i) {
      if (IsNativeUserCode(frames[0], String(frames[0].module))) break;
      if (IsNativeUserCode(frames[i], String(frames[i].module))) {
        short_label = absl::StrCat(short_frames[i], " [", short_label, "]");
        break;
      }
    }
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
    stacks_.push_back({frames, std::move(label), std::move(short_label), first_user,
                       std::move(first_user_label)});
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

std::string ReportSymbols::NativeFrameLabel(const ReportFrame& frame, bool short_name) const {
  std::string name;
  if (frame.function != 0 && short_name) {
    name = ShortFunctionName(String(frame.function));
  } else if (frame.function != 0) {
    name = String(frame.function);
  } else {
    std::string_view base = BaseName(String(frame.module));
    name = absl::StrFormat("%s+0x%x", base.empty() ? "?" : base, frame.rel_pc);
  }
  if (frame.file == 0 || frame.line == 0) return name;
  std::string out(BaseName(String(frame.file)));
  absl::StrAppend(&out, ":", frame.line, " in ", name);
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

const std::string& ReportSymbols::ShortStackLabel(StackId id) const {
  return stacks_[id < stacks_.size() ? id : 0].short_label;
}

const FirstUserFrame* ReportSymbols::FirstUser(StackId id) const {
  const StackEntry& entry = stacks_[id < stacks_.size() ? id : 0];
  return entry.first_user ? &*entry.first_user : nullptr;
}

const std::string& ReportSymbols::FirstUserLabel(StackId id) const {
  return stacks_[id < stacks_.size() ? id : 0].first_user_label;
}

}  // namespace idlescope
