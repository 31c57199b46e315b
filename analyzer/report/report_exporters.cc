#include "analyzer/report/report_exporters.h"

#include <array>

#include "analyzer/report/html_report.h"
#include "analyzer/report/timeline_exporters.h"

namespace idlescope {
namespace {

std::string TextOf(const ReportedJob& job) { return FormatTextReport(job.report); }
std::string JsonOf(const ReportedJob& job) { return FormatJsonReport(job.report); }

// The table: `--format` names one of these (the first is the default).
std::span<const Exporter<ReportedJob>* const> ReportExporters() {
  static const FormatExporter<ReportedJob> text("text", TextOf);
  static const FormatExporter<ReportedJob> json("json", JsonOf);
  static const std::array<const Exporter<ReportedJob>*, 5> table = {
      &text, &json, &HtmlReportExporter(), &PerfettoExporter(), &ChromeExporter()};
  return table;
}

}  // namespace

const Exporter<ReportedJob>* FindReportExporter(std::string_view name) {
  return FindExporter<ReportedJob>(ReportExporters(), name);
}

std::string ReportExporterNames() { return ExporterNames<ReportedJob>(ReportExporters()); }

}  // namespace idlescope
