#include "analyzer/read/source_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace idlescope {
namespace {

// An ELF file opened for reading; closes itself.
class ElfFile {
 public:
  static std::unique_ptr<ElfFile> Open(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
      if (elf != nullptr) elf_end(elf);
      close(fd);
      return nullptr;
    }
    return std::unique_ptr<ElfFile>(new ElfFile(path, fd, elf));
  }
  ~ElfFile() {
    elf_end(elf_);
    close(fd_);
  }

  Elf* elf() const { return elf_; }
  const std::string& path() const { return path_; }

  // The NT_GNU_BUILD_ID note's bytes; "" when the file has none.
  std::string BuildId() const {
    const void* bytes = nullptr;
    ssize_t n = dwelf_elf_gnu_build_id(elf_, &bytes);
    return n > 0 ? std::string(static_cast<const char*>(bytes), static_cast<size_t>(n)) : "";
  }

  // Whether the file holds its DWARF: a .debug_info section with contents (a stripped file has
  // none; a file of --only-keep-debug has it, and its code sections NOBITS).
  bool HasDebugInfo() const {
    size_t strings = 0;
    if (elf_getshdrstrndx(elf_, &strings) != 0) return false;
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
      GElf_Shdr header;
      if (gelf_getshdr(scn, &header) == nullptr) continue;
      const char* name = elf_strptr(elf_, strings, header.sh_name);
      if (name == nullptr || header.sh_type == SHT_NOBITS) continue;
      if (strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0) return true;
    }
    return false;
  }

  // The .gnu_debuglink file name; "" when none.
  std::string DebugLink() const {
    GElf_Word crc = 0;
    const char* name = dwelf_elf_gnu_debuglink(elf_, &crc);
    return name != nullptr ? name : "";
  }

 private:
  ElfFile(std::string path, int fd, Elf* elf) : path_(std::move(path)), fd_(fd), elf_(elf) {}

  std::string path_;
  int fd_;
  Elf* elf_;
};

std::string Directory(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? "." : std::string(path.substr(0, slash));
}

// The line of `pc` in `cu`, named by the function that holds it: when pc is in code inlined into
// that function, the call site of the outermost inlined subroutine (DW_AT_call_file and
// DW_AT_call_line), else the line table's row.
std::optional<std::pair<const char*, uint32_t>> LineIn(Dwarf_Die* cu, Dwarf_Addr pc) {
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(cu, pc, &scopes);
  int outer_inline = -1;
  for (int i = 0; i < n; ++i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_subprogram) break;
    if (tag == DW_TAG_inlined_subroutine) outer_inline = i;
  }
  std::optional<std::pair<const char*, uint32_t>> out;
  if (outer_inline >= 0) {
    Dwarf_Attribute attr;
    Dwarf_Word file = 0, line = 0;
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    if (dwarf_formudata(dwarf_attr(&scopes[outer_inline], DW_AT_call_file, &attr), &file) == 0 &&
        dwarf_formudata(dwarf_attr(&scopes[outer_inline], DW_AT_call_line, &attr), &line) == 0 &&
        line != 0 && dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && file < nfiles) {
      const char* name = dwarf_filesrc(files, file, nullptr, nullptr);
      if (name != nullptr) out.emplace(name, static_cast<uint32_t>(line));
    }
  }
  free(scopes);
  if (out) return out;
  Dwarf_Line* row = dwarf_getsrc_die(cu, pc);
  if (row == nullptr) return std::nullopt;
  int line = 0;
  const char* name = dwarf_linesrc(row, nullptr, nullptr);
  if (name == nullptr || dwarf_lineno(row, &line) != 0 || line <= 0) return std::nullopt;
  return std::make_pair(name, static_cast<uint32_t>(line));
}

}  // namespace

struct SourceLines::Module {
  std::unique_ptr<ElfFile> file;  // the file the DWARF is read from; null: no debug info
  Dwarf* dwarf = nullptr;
  absl::flat_hash_map<uint64_t, std::optional<SourceLine>> lines;  // by rel_pc

  ~Module() {
    if (dwarf != nullptr) dwarf_end(dwarf);
  }

  // The compile unit holding `pc`: by .debug_aranges, else every unit's ranges (a producer that
  // writes no aranges).
  bool UnitOf(Dwarf_Addr pc, Dwarf_Die* cu) const {
    if (dwarf_addrdie(dwarf, pc, cu) != nullptr) return true;
    Dwarf_Off offset = 0, next = 0;
    size_t header = 0;
    while (dwarf_nextcu(dwarf, offset, &next, &header, nullptr, nullptr, nullptr) == 0) {
      if (dwarf_offdie(dwarf, offset + header, cu) != nullptr && dwarf_haspc(cu, pc) == 1) {
        return true;
      }
      offset = next;
    }
    return false;
  }
};

SourceLinesOptions SourceLinesOptionsFromEnvironment() {
  SourceLinesOptions options;
  if (const char* off = getenv("IDLESCOPE_SOURCE_LINES"); off != nullptr && strcmp(off, "0") == 0) {
    options.enabled = false;
    return options;
  }
  if (const char* dirs = getenv("IDLESCOPE_DEBUG_DIRS"); dirs != nullptr) {
    for (absl::string_view d : absl::StrSplit(dirs, ':', absl::SkipEmpty())) {
      options.debug_dirs.emplace_back(d.data(), d.size());
      options.debuginfod_dirs.emplace_back(d.data(), d.size());
    }
  }
  options.debug_dirs.push_back("/usr/lib/debug");
  // debuginfod-client's own rule for its cache (debuginfod(8), "CACHE").
  if (const char* cache = getenv("DEBUGINFOD_CACHE_PATH"); cache != nullptr && *cache != '\0') {
    options.debuginfod_dirs.emplace_back(cache);
  } else if (const char* xdg = getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    options.debuginfod_dirs.push_back(absl::StrCat(xdg, "/debuginfod_client"));
  } else if (const char* home = getenv("HOME"); home != nullptr && *home != '\0') {
    options.debuginfod_dirs.push_back(absl::StrCat(home, "/.cache/debuginfod_client"));
  }
  return options;
}

SourceLines::SourceLines(SourceLinesOptions options) : options_(std::move(options)) {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

SourceLines::~SourceLines() = default;

SourceLines::Module* SourceLines::Open(std::string_view path_view, std::string_view build_id_view) {
  // absl's string_view is its own type here, not std::string_view.
  const std::string path(path_view), build_id(build_id_view);
  std::string key = absl::StrCat(build_id, "\n", path);
  auto [it, inserted] = modules_.try_emplace(key);
  if (!inserted) return it->second.get();
  auto module = std::make_unique<Module>();
  // A candidate debug file: used when its build id is the recorded one and it has DWARF.
  auto accept = [&](std::unique_ptr<ElfFile> file) {
    if (file == nullptr || file->BuildId() != build_id || !file->HasDebugInfo()) return false;
    module->file = std::move(file);
    return true;
  };
  const std::string hex = absl::BytesToHexString(build_id);
  std::unique_ptr<ElfFile> binary = ElfFile::Open(path);
  // A file at the path that is not the one that ran: its debuglink says nothing about the module.
  if (binary != nullptr && binary->BuildId() != build_id) binary.reset();
  std::string link = binary != nullptr ? binary->DebugLink() : "";
  bool found = binary != nullptr && binary->HasDebugInfo() && accept(std::move(binary));
  if (!found && hex.size() > 2) {
    for (const std::string& d : options_.debug_dirs) {
      found = accept(ElfFile::Open(
          absl::StrCat(d, "/.build-id/", hex.substr(0, 2), "/", hex.substr(2), ".debug")));
      if (found) break;
    }
  }
  if (!found && !hex.empty()) {
    for (const std::string& d : options_.debuginfod_dirs) {
      found = accept(ElfFile::Open(absl::StrCat(d, "/", hex, "/debuginfo")));
      if (found) break;
    }
  }
  if (!found && !link.empty()) {
    const std::string dir = Directory(path);
    std::vector<std::string> candidates = {absl::StrCat(dir, "/", link),
                                           absl::StrCat(dir, "/.debug/", link)};
    for (const std::string& d : options_.debug_dirs) {
      candidates.push_back(absl::StrCat(d, dir, "/", link));
    }
    for (const std::string& c : candidates) {
      // The module itself may carry its own name as a debuglink (objcopy in place).
      if (c == path) continue;
      if ((found = accept(ElfFile::Open(c)))) break;
    }
  }
  if (found) {
    module->dwarf = dwarf_begin_elf(module->file->elf(), DWARF_C_READ, nullptr);
    if (module->dwarf == nullptr) module->file.reset();
  }
  it->second = std::move(module);
  return it->second.get();
}

std::optional<SourceLine> SourceLines::Find(std::string_view module, std::string_view build_id,
                                            uint64_t rel_pc) {
  if (!options_.enabled || build_id.empty() || module.empty()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  Module* m = Open(module, build_id);
  if (m->dwarf == nullptr) return std::nullopt;
  auto [it, inserted] = m->lines.try_emplace(rel_pc);
  if (!inserted) return it->second;
  Dwarf_Die cu;
  if (!m->UnitOf(rel_pc, &cu)) return std::nullopt;
  std::optional<std::pair<const char*, uint32_t>> line = LineIn(&cu, rel_pc);
  if (!line) return std::nullopt;
  const std::string& file = *files_.emplace(line->first).first;
  it->second = SourceLine{file, line->second};
  return it->second;
}

std::string SourceLines::DebugFile(std::string_view module, std::string_view build_id) {
  if (!options_.enabled || build_id.empty() || module.empty()) return "";
  std::lock_guard<std::mutex> lock(mutex_);
  Module* m = Open(module, build_id);
  return m->dwarf != nullptr ? m->file->path() : "";
}

SourceLines& SharedSourceLines() {
  static SourceLines* lines = new SourceLines(SourceLinesOptionsFromEnvironment());
  return *lines;
}

}  // namespace idlescope
