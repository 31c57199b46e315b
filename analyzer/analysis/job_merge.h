// JobMerge: the parts of a job's analysis (analysis/part_results.h) made into its report, the only
// way to a JobReport. A job read in one pass is merged as its one part (JobAnalysis::BuildReport);
// a job analyzed in shards as one part per shard (shard/merge.h, whose summaries carry the parts).
// The report does not depend on how the job was split (tests/analyzer/shards.py checks it).
//
//   - each process takes its end from the part that owned it; the job ends at the latest;
//   - each device comes from the one part that analyzed it, its last gap run on to the job's end
//     (DeviceResult's TailChangeAt, ExtendToJobEnd);
//   - every stage's state adds up (MergeFrom): host activity, startup, copy rates, directories;
//   - the longest gaps of all parts, the parts' counters, warnings in the reader's order (its
//     notices, the skipped files, then each file's own warnings and figures, by file);
//   - the cross-rank stages' results (live in one pass, replayed from the parts' records in
//     shards: analysis/cross_rank.h) and the symbols evidence resolves with come from the caller.
// Two things a split can get wrong are found before the report is built (Check): two parts
// analyzed the same device, or a device's short tail grows long by the job's end. The caller then
// analyzes those parts again (as one, or up to the job's end).
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/analysis/cross_rank.h"
#include "analyzer/analysis/options.h"
#include "analyzer/analysis/part_results.h"
#include "analyzer/analysis/processes.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/symbol_source.h"

namespace idlescope {

// What the merge is given besides the parts: the whole job's processes in the job's numbering (a
// plan's or a reader's), the files skipped when the inputs were expanded, the hosts' clocks.
struct JobInputs {
  std::vector<ProcessInfo> processes;
  std::vector<ReportWarning> skipped;
  std::vector<HostClock> clocks;
};

class JobMerge {
 public:
  JobMerge(const AnalysisOptions& options, JobInputs inputs);

  // The parts, in a fixed order (a plan's): ties between equal gaps go to the first.
  void Add(PartResults part);

  // What the parts added so far cannot give right (empty: Build may go on).
  struct Regroup {
    // Per part, the first part it analyzed a device with (itself when none): parts that share a
    // device must be analyzed as one.
    std::vector<uint32_t> group_of;
    bool shared_devices = false;
    // Parts with a device whose tail was shorter than --min-gap where they finished it and is
    // longer at the job's end (TailChange::kRemap): they must be analyzed up to the job's end.
    std::vector<uint32_t> finish_later;
    Ns job_end = 0;
    bool empty() const { return !shared_devices && finish_later.empty(); }
  };
  Regroup Check() const;

  // The report: `cross_rank` finished, `symbols` resolves every (process, id) the parts name.
  JobReport Build(const CrossRank& cross_rank, const SymbolSource& symbols);

 private:
  Ns JobEnd() const;

  AnalysisOptions options_;
  JobInputs inputs_;
  JobProcesses processes_;
  std::vector<PartResults> parts_;
};

}  // namespace idlescope
