#include "tests/fuzz/analyze_job.h"

#include <memory>

#include "analyzer/job_analysis.h"
#include "analyzer/job_reader.h"
#include "analyzer/report_format.h"

namespace idlescope::fuzz {

std::string AnalyzeJobFiles(const std::vector<std::string>& paths) {
  auto reader = JobReader::Open(paths);
  if (!reader.ok()) return std::string(reader.status().message());
  JobAnalysis analysis;
  (*reader)->Run(&analysis, ReadOptions{});
  const JobReport report = analysis.Finish(**reader);
  return FormatTextReport(report) + FormatJsonReport(report);
}

}  // namespace idlescope::fuzz
