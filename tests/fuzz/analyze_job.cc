#include "tests/fuzz/analyze_job.h"

#include "analyzer/cli/pipeline.h"
#include "analyzer/report/report_exporters.h"
#include "analyzer/shard/local.h"

namespace idlescope::fuzz {

std::string AnalyzeJobFiles(const std::vector<std::string>& paths) {
  // The job in shards too (index, plan, map, merge: what idlescope report does with several
  // ranks), on one thread.
  absl::StatusOr<ShardedJob> sharded =
      AnalyzeJobInShards(paths, AnalysisOptions{}, ReadOptions{}, 1);
  std::string out =
      sharded.ok() ? FormatTextReport(sharded->report) : std::string(sharded.status().message());
  absl::StatusOr<AnalyzedJob> job = AnalyzeJob(paths, PipelineOptions{});
  if (!job.ok()) return out + std::string(job.status().message());
  return out + FormatTextReport(job->report) + FormatJsonReport(job->report);
}

}  // namespace idlescope::fuzz
