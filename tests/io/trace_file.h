// Test support: run a program under the preload library and read the trace files it wrote back
// with libprotobuf (framing: repeated Trace.packet, tag 0x0a + varint length + Packet), format-v2
// batches expanded into one Event per call as the analyzer reads them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trace.pb.h"

namespace idlescope::testing {

struct TraceEvent {
  Event event;
  uint64_t ts = 0;  // absolute (delta decoding done)
  uint32_t tid = 0;
};

struct TraceFile {
  std::string path;
  Header header;
  bool has_footer = false;
  Footer footer;
  std::map<uint64_t, std::string> strings;
  std::vector<TraceEvent> events;
  uint64_t dropped = 0;

  std::string Str(uint64_t id) const;
  std::vector<const TraceEvent*> OfType(EventType type) const;
};

// Every complete packet of `path`.
TraceFile ReadTraceFile(const std::string& path);
// Every *.idlescope file in `dir`.
std::vector<TraceFile> ReadTraceDir(const std::string& dir);

// A fresh empty directory under `base` (default: TMPDIR or /tmp).
std::string MakeTempDir(const std::string& base = "");

// Runs argv[0] with the current environment plus LD_PRELOAD=<preload library> (or
// $IDLESCOPE_TEST_PRELOAD_LIB: another build, to show a test fails before its fix) and
// IDLESCOPE_OUT=out_dir (and `extra_env`); returns the exit status (or 128+signal).
int RunTraced(const std::vector<std::string>& argv, const std::string& out_dir,
              const std::vector<std::string>& extra_env = {});

// Runs argv through the CLI, `cli run -o out_dir --quiet -- argv...` (the way users trace), with
// the current environment plus `extra_env`; returns the exit status.
int RunWithCli(const std::string& cli, const std::vector<std::string>& argv,
               const std::string& out_dir, const std::vector<std::string>& extra_env = {});

// Same, without the preload library.
int RunBare(const std::vector<std::string>& argv);

// A traced program started and not yet waited for, its stdout and stderr each a pipe (read ends
// here). Unlike RunTraced, IDLESCOPE_QUIET is not set: the tracer's own messages reach stderr.
struct TracedChild {
  pid_t pid = -1;
  int out = -1;
  int err = -1;
};
TracedChild StartTraced(const std::vector<std::string>& argv, const std::string& out_dir,
                        const std::vector<std::string>& extra_env = {});
// Everything left on `fd` until EOF; closes it.
std::string ReadAll(int fd);
// Exit status of `pid` (or 128+signal).
int Wait(pid_t pid);

}  // namespace idlescope::testing
