// The timeline exports of `idlescope report --format perfetto|chrome` (`idlescope export` is the
// same; docs/timeline-export.md): the job's timeline (report/job_timeline.h), streamed as
//   - perfetto: Perfetto's native protobuf trace (proto/perfetto_trace.proto, the subset of
//     Perfetto's schema written): track descriptors, track events with interned names and
//     categories, debug annotations, flows, and a clock snapshot tying the trace clock
//     (CLOCK_MONOTONIC of the job's first host) to CLOCK_REALTIME;
//   - chrome: the Trace Event Format's JSON ("X" complete events, "M" names, "s"/"f" flows),
//     times in microseconds.
// Both are deterministic: the same job and options give the same bytes. Their exports watch the
// first read with a JobTimelineRecorder (the processes, thread names and credited slices), then
// read the job's files a second time (ReportedJob::read_again) into a TimelineStream that writes
// as it reads.
#pragma once

#include <memory>

#include "analyzer/report/job_timeline.h"
#include "analyzer/report/report_exporters.h"

namespace idlescope {

std::unique_ptr<TimelineWriter> PerfettoTimelineWriter();
std::unique_ptr<TimelineWriter> ChromeTimelineWriter();

// "perfetto" and "chrome", entries of the exporter table (report/report_exporters.cc).
const Exporter<ReportedJob>& PerfettoExporter();
const Exporter<ReportedJob>& ChromeExporter();

}  // namespace idlescope
