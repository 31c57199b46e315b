#include "analyzer/analysis/python_frames.h"

#include <cctype>

namespace idlescope {
namespace {

// "python3.11", "python3.13t" (free-threaded), "python2.7": the directory CPython installs its
// standard library (and site-packages) in.
bool IsVersionedPythonDirectory(std::string_view name) {
  if (!name.starts_with("python")) return false;
  name.remove_prefix(6);
  if (name.ends_with('t')) name.remove_suffix(1);
  size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (i != dot && !std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  return true;
}

bool IsLibraryDirectory(std::string_view name) {
  return name == "site-packages" || name == "dist-packages" || name == "torch" ||
         IsVersionedPythonDirectory(name);
}

}  // namespace

bool IsUserCode(std::string_view file) {
  if (file.empty() || file.front() == '<') return false;
  // Every directory component (the file's own name is not one: a user's torch.py is theirs).
  size_t end = file.rfind('/');
  if (end == std::string_view::npos) return true;
  std::string_view directories = file.substr(0, end);
  while (!directories.empty()) {
    size_t slash = directories.find('/');
    std::string_view name = directories.substr(0, slash);
    if (IsLibraryDirectory(name)) return false;
    if (slash == std::string_view::npos) break;
    directories.remove_prefix(slash + 1);
  }
  return true;
}

std::optional<FirstUserChoice> ChooseFirstUser(const std::vector<SymbolFrame>& frames) {
  std::optional<FirstUserChoice> innermost;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].kind != FRAME_PYTHON) continue;
    if (IsUserCode(frames[i].file)) return FirstUserChoice{i, true};
    if (!innermost) innermost = FirstUserChoice{i, false};
  }
  return innermost;
}

}  // namespace idlescope
