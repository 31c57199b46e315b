// idlescope --version: the version, the git commit it was built from, and the formats it reads
// and writes (what a user checks when a trace from one machine is reported on another).
#include <cstdio>

#include "analyzer/cli/commands.h"
#include "analyzer/diff/diff.h"
#include "analyzer/model/job_report.h"
#include "analyzer/trace/trace_format.h"
#include "idlescope_build_info.h"

namespace idlescope {

int VersionCommand(int /*argc*/, char** /*argv*/) {
  std::printf("idlescope %s (git %s)\n", IDLESCOPE_VERSION, IDLESCOPE_GIT_COMMIT);
  std::printf("trace format: reads v%u-v%u, the recorder (lib/libidlescope.so) writes v%u\n",
              kTraceFormatV1, kTraceFormatVersion, kTraceFormatVersion);
  std::printf("report JSON schema: %d, diff JSON schema: %d\n", kReportSchemaVersion,
              kDiffSchemaVersion);
  return 0;
}

}  // namespace idlescope
