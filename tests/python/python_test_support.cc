#include "tests/python/python_test_support.h"

#include <dirent.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "absl/strings/str_split.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope::testing {

std::vector<std::string> InterpreterLabels() { return {"3.10", "3.11", "3.12", "3.13", "debian"}; }

std::string InterpreterTestName(const std::string& label) {
  std::string name = label;
  for (char& c : name) c = c == '.' ? '_' : c;
  return name;
}

std::string InterpreterPath(const std::string& label) {
  // "label=path;label=path" from tests/python/CMakeLists.txt.
  for (absl::string_view entry : absl::StrSplit(IDLESCOPE_TEST_PYTHONS, ';', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    if (kv.first == label) return kv.second;
  }
  return "";
}

std::map<std::string, uint32_t> Marks(const std::string& script) {
  std::map<std::string, uint32_t> marks;
  std::ifstream in(script);
  std::string line;
  for (uint32_t n = 1; std::getline(in, line); ++n) {
    size_t at = line.find("MARK:");
    if (at == std::string::npos) continue;
    size_t end = line.find_first_of(" \t\r\n", at);
    marks[line.substr(at + 5, end == std::string::npos ? std::string::npos : end - at - 5)] = n;
  }
  return marks;
}

std::vector<PyFrame> PyTraceFile::PythonFrames(uint64_t stack) const {
  std::vector<PyFrame> out;
  for (const Frame* f : interned.Stack(stack)) {
    if (f->kind() != FRAME_PYTHON) continue;
    PyFrame p;
    p.file = std::string(interned.String(f->file()));
    p.function = std::string(interned.String(f->function()));
    p.line = f->line();
    p.first_line = f->first_line();
    p.entry = f->python_entry();
    out.push_back(p);
  }
  return out;
}

size_t PyTraceFile::NativeFrames(uint64_t stack) const {
  size_t n = 0;
  for (const Frame* f : interned.Stack(stack)) n += f->kind() != FRAME_PYTHON;
  return n;
}

std::vector<const PyEvent*> PyTraceFile::On(EventType type, const std::string& path) const {
  std::vector<const PyEvent*> out;
  for (const PyEvent& e : events) {
    if (e.type == type && (path.empty() || e.path == path)) out.push_back(&e);
  }
  return out;
}

std::vector<PyTraceFile> ReadPyTraceDir(const std::string& dir) {
  std::vector<PyTraceFile> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* entry = readdir(d)) {
    std::string name = entry->d_name;
    if (name.size() <= 10 || name.substr(name.size() - 10) != kTraceFileSuffix) continue;
    auto reader = TraceFileReader::Open(dir + "/" + name);
    if (!reader.ok()) continue;
    PyTraceFile& f = files.emplace_back();
    f.path = dir + "/" + name;
    f.header = (*reader)->header();
    Packet packet;
    while ((*reader)->Next(&packet)) {
      if (packet.has_interned()) f.interned.Add(packet.interned());
      if (packet.has_notice()) f.notices.push_back(packet.notice());
      if (!packet.has_events()) continue;
      for (const Event& e : packet.events().events()) {
        f.events.push_back({e.type(), packet.events().tid(),
                            std::string(f.interned.String(e.path())), e.stack(), e.sampled_pid()});
      }
    }
  }
  closedir(d);
  return files;
}

std::string RunCapture(const std::string& command, int* status) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int s = pclose(p);
  *status = WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
  return out;
}

std::string Report(const std::string& cli, const std::string& dir, const std::string& flags,
                   int* status) {
  return RunCapture(cli + " report " + flags + " '" + dir + "' 2>/dev/null", status);
}

std::vector<std::string> ReportedLines(const std::string& cli, const std::string& python,
                                       const std::string& lines_script, const std::string& dir,
                                       const std::string& flags, int* status) {
  std::string out = RunCapture(cli + " report --format json " + flags + " '" + dir +
                                   "' 2>/dev/null | " + python + " '" + lines_script + "'",
                               status);
  return absl::StrSplit(out, '\n', absl::SkipEmpty());
}

}  // namespace idlescope::testing
