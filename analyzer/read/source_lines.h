// SourceLines: the source file and line of a native frame, read offline from the DWARF line
// tables of the module the frame was recorded in (elfutils' libdw), never by the preloaded
// library: a trace names a frame by module path, build id and offset (proto/trace.proto, Frame and
// Module), and the report turns those into "mixed.cu:43".
//
// A line is only ever read from a file whose build id is the recorded one: a module rebuilt or
// replaced since the trace was taken gets no line, never a wrong one. Where the debug info is:
//   1. the module's own file, at its recorded path, when it has a .debug_info section;
//   2. a separate debug file by build id, in each debug directory D (IDLESCOPE_DEBUG_DIRS, a
//      colon-separated list, then /usr/lib/debug): D/.build-id/xx/yyyy.debug (GDB's layout,
//      what Debian's -dbgsym packages install), D/xxyyyy/debuginfo (a debuginfod client's cache:
//      $DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client or
//      ~/.cache/debuginfod_client, are searched so too);
//   3. the module's .gnu_debuglink name, next to it, in its .debug/ directory, and under each
//      debug directory with the module's own directory appended (GDB's order).
// Nothing is downloaded. IDLESCOPE_SOURCE_LINES=0 turns the lookup off.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_set.h"

namespace idlescope {

struct SourceLine {
  std::string_view file;  // as the debug info names it (usually absolute); lives as the SourceLines
  uint32_t line = 0;
};

struct SourceLinesOptions {
  bool enabled = true;
  std::vector<std::string> debug_dirs;       // GDB layout (.build-id/) and debuglink dirs
  std::vector<std::string> debuginfod_dirs;  // a debuginfod client's cache (<build id>/debuginfo)
};

// IDLESCOPE_SOURCE_LINES, IDLESCOPE_DEBUG_DIRS, /usr/lib/debug and the debuginfod cache.
SourceLinesOptions SourceLinesOptionsFromEnvironment();

// Thread-safe: the shards of a report, each with its own JobSymbols, share the process's one
// (SharedSourceLines), so that a module's debug info is read once per run, not once per shard
// (the C library's separate debug file, zlib-compressed, takes 0.2 s to read).
class SourceLines {
 public:
  explicit SourceLines(SourceLinesOptions options);
  ~SourceLines();
  SourceLines(const SourceLines&) = delete;
  SourceLines& operator=(const SourceLines&) = delete;

  // The line of the instruction at `rel_pc` (relative to the module's load base: an address of
  // the ELF file's own) in the module loaded from `module` whose build id is `build_id` (raw
  // bytes). Code inlined into a function is named by the line of the function that calls it: the
  // line belongs to the function the frame's symbol names, as addr2line -i's last line does.
  // nullopt when unknown. Each module is opened once, each address looked up once.
  std::optional<SourceLine> Find(std::string_view module, std::string_view build_id,
                                 uint64_t rel_pc);

  // The file the module's debug info was read from ("" when none): for tests and `dump`.
  std::string DebugFile(std::string_view module, std::string_view build_id);

 private:
  struct Module;
  Module* Open(std::string_view module, std::string_view build_id);

  SourceLinesOptions options_;
  std::mutex mutex_;
  absl::flat_hash_map<std::string, std::unique_ptr<Module>> modules_;  // by build id + path
  absl::node_hash_set<std::string> files_;  // the file names handed out: stable storage
};

// The process's SourceLines, made on first use with SourceLinesOptionsFromEnvironment().
SourceLines& SharedSourceLines();

}  // namespace idlescope
