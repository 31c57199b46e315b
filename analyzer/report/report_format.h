// The "report" stage: a JobReport as text for people, or as JSON for tools (schema version
// kReportSchemaVersion, documented in docs/attribution.md). Both are deterministic: the same
// report gives the same bytes (golden tests compare them).
#pragma once

#include <string>

#include "analyzer/model/job_report.h"

namespace idlescope {

std::string FormatTextReport(const JobReport& report);

// The text report leaves out causes of negligible idle time: under 0.5 ms (they print as
// "0.000 s") or under 0.05% of the job's GPU time. JSON keeps every cause.
inline constexpr Ns kTextMinCauseNs = 500'000;
inline constexpr double kTextMinCauseShare = 0.0005;
bool ShownInText(const CauseReport& cause, Ns gpu_time);
std::string FormatJsonReport(const JobReport& report);

}  // namespace idlescope
