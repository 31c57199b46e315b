// The exporters of `idlescope report` (report/exporter.h), one table: text for people, JSON for
// tools (schema version 2, docs/report-json.md), html (one self-contained page with a timeline
// strip, docs/html-report.md), perfetto and chrome (the job's timeline, docs/timeline-export.md).
// All are deterministic: the same job gives the same bytes (golden tests compare text and JSON).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/job_report.h"
#include "analyzer/model/record_sink.h"
#include "analyzer/model/symbol_source.h"
#include "analyzer/report/exporter.h"

namespace idlescope {

struct TimelineOptions;  // report/job_timeline.h

// What an exporter of `idlescope report` writes from: the job's report and, for an export that
// watched the read (Export::watch), what the ids it gathered resolve with.
struct ReportedJob {
  const JobReport& report;
  // The trace files' strings and stacks, by (process, id). Set when the export watched.
  const SymbolSource* symbols = nullptr;
  // The ids of the devices a CreditedSlice's `device` numbers (the analysis's numbering). Set
  // when the export watched.
  std::span<const std::string> device_ids = {};
  // Reads the job's trace files again into a sink, as the first read delivered them: the
  // timeline exports stream the records in a second read instead of keeping them (a failure
  // is the caller's to report). Set when the export watched.
  std::function<void(RecordSink&)> read_again = nullptr;
  // What a timeline export writes of the job (report/job_timeline.h); nullptr: all of it, in
  // one file.
  const TimelineOptions* timeline = nullptr;
};

// nullptr when no exporter has this name.
const Exporter<ReportedJob>* FindReportExporter(std::string_view name);
// The names, for usage lines and errors: "text, json, html, perfetto, chrome".
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
