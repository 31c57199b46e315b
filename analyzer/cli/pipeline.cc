#include "analyzer/cli/pipeline.h"

#include <memory>
#include <utility>

namespace idlescope {

absl::StatusOr<AnalyzedJob> AnalyzeJob(const std::vector<std::string>& inputs,
                                       const PipelineOptions& options,
                                       std::vector<RecordSink*> extra_sinks) {
  absl::StatusOr<std::unique_ptr<JobReader>> reader = JobReader::Open(inputs);
  if (!reader.ok()) return reader.status();
  JobAnalysis analysis(options.analysis);
  if (extra_sinks.empty()) {
    (*reader)->Run(analysis, options.read);
  } else {
    extra_sinks.insert(extra_sinks.begin(), &analysis);
    TeeSink tee(std::move(extra_sinks));
    (*reader)->Run(tee, options.read);
  }
  AnalyzedJob job;
  job.stats = (*reader)->stats();
  job.symbols = (*reader)->TakeSymbols();
  job.report = analysis.BuildReport(job.symbols);
  job.report.tool_version = "idlescope " IDLESCOPE_VERSION;
  return job;
}

}  // namespace idlescope
