// The timeline exports of `idlescope report --format perfetto|chrome` (`idlescope export` is the
// same; docs/timeline-export.md): a JobTimeline (report/job_timeline.h) as
//   - perfetto: Perfetto's native protobuf trace (proto/perfetto_trace.proto, the subset of
//     Perfetto's schema written): track descriptors, track events with interned names and
//     categories, debug annotations, flows, and a clock snapshot tying the trace clock
//     (CLOCK_MONOTONIC of the job's first host) to CLOCK_REALTIME;
//   - chrome: the Trace Event Format's JSON ("X" complete events, "M" names, "s"/"f" flows),
//     times in microseconds.
// Both are deterministic: the same timeline gives the same bytes. Their exports watch the read
// with a JobTimelineRecorder (the records and the credited slices).
#pragma once

#include <string>

#include "analyzer/report/job_timeline.h"
#include "analyzer/report/report_exporters.h"

namespace idlescope {

std::string FormatPerfettoTrace(const JobTimeline& timeline);
std::string FormatChromeTrace(const JobTimeline& timeline);

// "perfetto" and "chrome", entries of the exporter table (report/report_exporters.cc).
const Exporter<ReportedJob>& PerfettoExporter();
const Exporter<ReportedJob>& ChromeExporter();

}  // namespace idlescope
