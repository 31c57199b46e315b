#include "analyzer/cli/pipeline.h"

#include <memory>
#include <optional>
#include <utility>

#include "analyzer/cli/progress.h"

namespace idlescope {

absl::StatusOr<AnalyzedJob> AnalyzeJob(const std::vector<std::string>& inputs,
                                       const PipelineOptions& options,
                                       std::vector<RecordSink*> extra_sinks) {
  absl::StatusOr<std::unique_ptr<JobReader>> reader = JobReader::Open(inputs);
  if (!reader.ok()) return reader.status();
  JobAnalysis analysis(options.analysis);
  analysis.SetSliceObserver(options.slices);
  std::optional<ProgressSink> progress;
  if (!options.progress.empty() && ProgressSink::Wanted(false)) {
    JobReader* r = reader->get();
    progress.emplace(
        options.progress, [r] { return r->BytesRead(); }, r->TotalBytes());
    extra_sinks.push_back(&*progress);
  }
  if (extra_sinks.empty()) {
    (*reader)->Run(analysis, options.read);
  } else {
    extra_sinks.insert(extra_sinks.begin(), &analysis);
    TeeSink tee(std::move(extra_sinks));
    (*reader)->Run(tee, options.read);
  }
  if (progress) progress->Finish();
  AnalyzedJob job;
  job.stats = (*reader)->stats();
  job.symbols = (*reader)->TakeSymbols();
  job.report = analysis.BuildReport(job.symbols);
  job.device_ids = analysis.DeviceIds();
  job.report.tool_version = "idlescope " IDLESCOPE_VERSION;
  return job;
}

}  // namespace idlescope
