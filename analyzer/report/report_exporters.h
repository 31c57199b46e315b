// The exporters of `idlescope report` (report/exporter.h): text for people, JSON for tools
// (schema version 2, docs/report-json.md). Both are deterministic: the same report gives the
// same bytes (golden tests compare them).
#pragma once

#include <string>
#include <string_view>

#include "analyzer/model/job_report.h"
#include "analyzer/report/exporter.h"

namespace idlescope {

// nullptr when no exporter has this name.
const Exporter<JobReport>* FindReportExporter(std::string_view name);
// The names, for usage lines and errors: "text, json".
std::string ReportExporterNames();

std::string FormatTextReport(const JobReport& report);
std::string FormatJsonReport(const JobReport& report);

// The text report leaves out causes of negligible idle time: under 0.5 ms (they print as
// "0.000 s") or under 0.05% of the job's GPU time. JSON keeps every cause.
inline constexpr Ns kTextMinCauseNs = 500'000;
inline constexpr double kTextMinCauseShare = 0.0005;
bool ShownInText(const CauseReport& cause, Ns gpu_time);

// What the two utilizations mean (the text report says it; docs/report-json.md for JSON).
inline constexpr std::string_view kUtilizationExplanation =
    "compute = the paper's U (non-NCCL kernels over the whole job span); kernel active = what "
    "nvidia-smi reports (any kernel, NCCL included, which may only be waiting for other ranks; "
    "neither says how much of the GPU a kernel uses)";

}  // namespace idlescope
