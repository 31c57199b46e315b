#include "tests/fuzz/analyze_job.h"

#include "analyzer/cli/pipeline.h"
#include "analyzer/report/report_exporters.h"

namespace idlescope::fuzz {

std::string AnalyzeJobFiles(const std::vector<std::string>& paths) {
  absl::StatusOr<AnalyzedJob> job = AnalyzeJob(paths, PipelineOptions{});
  if (!job.ok()) return std::string(job.status().message());
  return FormatTextReport(job->report) + FormatJsonReport(job->report);
}

}  // namespace idlescope::fuzz
