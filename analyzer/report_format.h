// The "report" stage: a JobReport as text for people, or as JSON for tools (schema version
// kReportSchemaVersion, documented in docs/attribution.md). Both are deterministic: the same
// report gives the same bytes (golden tests compare them).
#pragma once

#include <string>

#include "analyzer/job_report.h"

namespace idlescope {

std::string FormatTextReport(const JobReport& report);
std::string FormatJsonReport(const JobReport& report);

}  // namespace idlescope
