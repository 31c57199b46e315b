// A job analyzed in shards on this machine (docs/architecture.md, "Analysis in shards"): every
// file indexed, the plan made, the shards mapped by `jobs` threads, the summaries merged; shards
// the merge sends back are mapped again. What `idlescope report` does; the Dask driver
// (tools/dask_report.py) does the same steps on a cluster, with the same plan and the same merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzer/analysis/options.h"
#include "analyzer/model/job_report.h"
#include "analyzer/read/job_reader.h"
#include "summary.pb.h"

namespace idlescope {

struct ShardedJob {
  // The job is one shard (one process, or ranks that are one family): nothing to split, and the
  // caller reads it in one pass (cli/pipeline.h), which gives the same report without holding the
  // shard's cross-rank records. No report then.
  bool one_shard = false;
  JobReport report;
  ReadStats stats;  // summed over the shards (a guest's file counts in every shard reading it)
  uint32_t shards = 0;
  uint32_t threads = 0;        // mapping them
  uint32_t remapped = 0;       // shards mapped again at the merge's request
  uint64_t summary_bytes = 0;  // the summaries' size, serialized
};

// The indexes of `inputs` (ExpandInputs), with the collective ends of each file when the job spans
// hosts, without the files' identities; read by `jobs` threads.
absl::StatusOr<std::vector<shard::FileIndex>> IndexJob(const std::vector<std::string>& inputs,
                                                       size_t jobs);

// `jobs`: threads mapping shards (0: one per core).
// `progress`, when given, is called (from any of the threads, one call at a time) with the job's
// size in bytes, and the bytes read and records analyzed since its last call.
// `scratch`, when given, makes the directory the summaries go to (under $TMPDIR) and is told
// once it is removed: the CLI removes it too when a signal ends it (cli/temporary_paths.h).
using ShardProgress = std::function<void(uint64_t total_bytes, uint64_t bytes, uint64_t records)>;
struct ScratchDirectory {
  // mkdtemp(3) of `pattern`, in place, and whatever goes with it; false with errno set.
  std::function<bool(std::string& pattern)> make;
  std::function<void()> removed;
};
absl::StatusOr<ShardedJob> AnalyzeJobInShards(const std::vector<std::string>& inputs,
                                              const AnalysisOptions& options,
                                              const ReadOptions& read, size_t jobs,
                                              const ShardProgress& progress = {},
                                              const ScratchDirectory& scratch = {});

}  // namespace idlescope
