// idlescope --version (-V, or `idlescope version`; -V of any command too): the version, the git
// commit it was built from, and the formats it reads and writes (what a user checks when a trace
// from one machine is reported on another).
#include <cstdio>

#include "analyzer/cli/commands.h"
#include "analyzer/cli/options.h"
#include "analyzer/diff/diff.h"
#include "analyzer/model/job_report.h"
#include "analyzer/shard/plan.h"
#include "analyzer/trace/trace_format.h"
#include "idlescope_build_info.h"

namespace idlescope {

namespace {

constexpr char kUsage[] =
    "usage: idlescope version  (or idlescope -V, --version; -V of any command)\n"
    "  the version, the git commit it was built from, and the formats it reads and writes\n"
    "exit status: 0, 1 stdout cannot be written\n";

constexpr CommandSpec kVersion = {"version", {}, kUsage};

}  // namespace

int VersionCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kVersion, argc, argv);
  if (line.exit_status) return *line.exit_status;
  if (!line.operands.empty()) return UsageError("version", "takes no operand");
  return PrintVersion();
}

int PrintVersion() {
  std::printf("idlescope %s (git %s)\n", IDLESCOPE_VERSION, IDLESCOPE_GIT_COMMIT);
  std::printf("trace format: reads v%u-v%u, the recorder (lib/libidlescope.so) writes v%u\n",
              kTraceFormatV1, kTraceFormatVersion, kTraceFormatVersion);
  std::printf(
      "report JSON schema: %d, diff JSON schema: %d, shard files (index, plan, summary): "
      "format %u\n",
      kReportSchemaVersion, kDiffSchemaVersion, kShardFormat);
  return 0;
}

}  // namespace idlescope
