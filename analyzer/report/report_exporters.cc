#include "analyzer/report/report_exporters.h"

#include <array>

namespace idlescope {
namespace {

const FormatExporter<JobReport> kText("text", FormatTextReport);
const FormatExporter<JobReport> kJson("json", FormatJsonReport);
const std::array<const Exporter<JobReport>*, 2> kExporters = {&kText, &kJson};

}  // namespace

const Exporter<JobReport>* FindReportExporter(std::string_view name) {
  return FindExporter<JobReport>(kExporters, name);
}

std::string ReportExporterNames() { return ExporterNames<JobReport>(kExporters); }

}  // namespace idlescope
