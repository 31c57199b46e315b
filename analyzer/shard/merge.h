// A job analyzed in shards (docs/architecture.md, "Analysis in shards"), step 4: the summaries of
// every shard of a plan merged into the job's report, the same report `idlescope report` builds
// from the same plan.
//
// Each summary carries its shard's part of the analysis (analysis/part_results.h); the parts are
// merged as a job read in one pass is (analysis/job_merge.h: the analysis's rules live there, none
// here), with the shards' cross-rank records replayed in time order into one CrossRank
// (analysis/cross_rank.h): collectives matched across ranks and the waits blamed on the last
// arriver's activity.
//
// Two things a plan cannot know send shards back to be mapped again (MergeResult::remap):
//   - two shards drove one device (ranks crowding onto a GPU, a process without a rank that used
//     a GPU and started ranks): those shards become one;
//   - a device's tail was shorter than --min-gap where its shard finished it, and is longer at the
//     job's end: its attribution differs (docs/attribution.md, "Short gaps"), so the shard is
//     analyzed again up to the job's end.
// Neither happens in a job whose ranks each drive their own device and end with a footer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzer/model/job_report.h"
#include "analyzer/shard/summary_file.h"
#include "summary.pb.h"

namespace idlescope {

struct MergeResult {
  std::optional<JobReport> report;
  // No report yet: the plan to go on with, the shards of it to map (again), and why.
  shard::Plan replan;
  std::vector<uint32_t> remap;
  enum class Why : uint8_t {
    kNone,
    kSharedDevice,   // shards that drove the same device are analyzed as one
    kTailGrowsLong,  // devices whose short tail grows long by the job's end are analyzed again
  } why = Why::kNone;
};

// `summaries`: one per shard of `plan` (matched by the processes they own; summaries of shards the
// plan no longer has are ignored). Errors (one line): a shard without a summary, a summary of
// another format or of another plan (its job digest: integrity.h).
absl::StatusOr<MergeResult> MergeSummaries(const shard::Plan& plan,
                                           const std::vector<const SummaryFile*>& summaries);

}  // namespace idlescope
