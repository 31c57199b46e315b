// The one way from a job's trace files to its report, shared by `idlescope report`, `idlescope
// diff` and the exporters to come: read the files once (read/job_reader.h) into the analysis
// (analysis/job_analysis.h) and any extra sinks beside it (a TeeSink), then build the report with
// the files' symbols.
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
};

struct AnalyzedJob {
  JobReport report;
  ReadStats stats;
  JobSymbols symbols;  // what the report's evidence and the extra sinks' ids resolve with
};

// Errors: the inputs are not readable traces (one line, from JobReader::Open).
absl::StatusOr<AnalyzedJob> AnalyzeJob(const std::vector<std::string>& inputs,
                                       const PipelineOptions& options,
                                       std::vector<RecordSink*> extra_sinks = {});

}  // namespace idlescope
