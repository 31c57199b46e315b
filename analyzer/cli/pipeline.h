// A job's trace files read in one pass into its report, for `idlescope report --single-process`
// (and a job that is one shard), `idlescope diff` and the outputs that watch the analysis (HTML,
// timelines): read the files once (read/job_reader.h) into the analysis (analysis/job_analysis.h)
// and any extra sinks beside it (a TeeSink), then merge its one part into the report
// (analysis/job_merge.h, as a job in shards is: analyzer/shard/local.h) with the files' symbols.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzer/analysis/job_analysis.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/record_sink.h"
#include "analyzer/read/job_reader.h"
#include "analyzer/read/job_symbols.h"

namespace idlescope {

struct PipelineOptions {
  AnalysisOptions analysis;
  ReadOptions read;
  SliceObserver* slices = nullptr;  // sees every credited slice (timeline exporters)
  // Progress on stderr while the files are read, when it is a terminal (cli/progress.h), headed
  // by this ("idlescope report"); "" or --quiet: none.
  std::string progress = {};
};

struct AnalyzedJob {
  JobReport report;
  ReadStats stats;
  JobSymbols symbols;  // what the report's evidence and the extra sinks' ids resolve with
  std::vector<std::string> device_ids;  // the ids of the devices slices are numbered by
};

// Errors: the inputs are not readable traces (one line, from JobReader::Open).
absl::StatusOr<AnalyzedJob> AnalyzeJob(const std::vector<std::string>& inputs,
                                       const PipelineOptions& options,
                                       std::vector<RecordSink*> extra_sinks = {});

}  // namespace idlescope
