// `idlescope report --format html`: the report as one self-contained page (docs/html-report.md):
// the job at a glance, a zoomable per-device timeline strip, the idle time by cause, the findings
// with their evidence and fixes, the longest gaps (linked to the strip) and one row per device
// and rank. It reads the report and the strips (report/device_strips.h) and nothing else; its
// export watches the read with a DeviceStripRecorder for the strips.
#pragma once

#include <string>

#include "analyzer/model/job_report.h"
#include "analyzer/report/device_strips.h"
#include "analyzer/report/report_exporters.h"

namespace idlescope {

std::string FormatHtmlReport(const JobReport& report, const JobStrips& strips);

// "html", an entry of the exporter table (report/report_exporters.cc).
const Exporter<ReportedJob>& HtmlReportExporter();

}  // namespace idlescope
