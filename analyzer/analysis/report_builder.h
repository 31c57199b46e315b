// The report's assembly: once every record is in and every gap closed, the stages' results
// become the JobReport (model/job_report.h). Per device its figures and the short-gap rule; the
// unused visible devices; per cause the job's totals, the estimated saving (analysis/savings.h),
// the findings and the heaviest evidence resolved to the report's symbols; the longest gaps;
// the warnings. Nothing here reads a trace or words a sentence.
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/analysis/blame.h"
#include "analyzer/analysis/candidate_window.h"
#include "analyzer/analysis/collective_stats.h"
#include "analyzer/analysis/collectives.h"
#include "analyzer/analysis/crediting.h"
#include "analyzer/analysis/device_result.h"
#include "analyzer/analysis/evidence.h"
#include "analyzer/analysis/host_activity.h"
#include "analyzer/analysis/options.h"
#include "analyzer/analysis/processes.h"
#include "analyzer/analysis/savings.h"
#include "analyzer/analysis/startup.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/symbol_source.h"

namespace idlescope {

// What the stages hold at the end of the job, merged from the parts of its analysis
// (analysis/job_merge.h, the only caller).
struct AnalysisResults {
  const AnalysisOptions& options;
  Ns job_start;
  Ns job_end;
  const JobProcesses& processes;
  const std::vector<DeviceResult>& devices;
  const UnusedVisibleByHost& unused_visible;
  const std::vector<ClosedGap>& top_gaps;  // the longest gaps (device: index into `devices`)
  uint64_t late_candidates;
  const HostActivity& host_activity;
  const Collectives& collectives;
  const RankBlame& blame;
  const CollectiveStats& collective_stats;
  const Startup& startup;
  const CopyRates& copy_rates;
  const DirectoryNames& directories;
  uint64_t host_events;
  uint64_t gpu_records;
  uint64_t forgotten_candidates;
  const std::vector<ReportWarning>& warnings;  // the reader's
  const std::vector<FileReport>& files;
  const std::vector<HostClock>& clocks;
};

JobReport AssembleReport(const AnalysisResults& results, const SymbolSource& symbols);

// What the job's totals of `cause` (`idle_ns` of it) say beyond its time: the pageable share of
// transfers, the NCCL ops, remote reads, the kernels of launch-bound time, ...
void TotalsFindings(Cause cause, Ns idle_ns, const CauseTotals& totals, const KernelStats& kernels,
                    std::vector<Finding>* out);

}  // namespace idlescope
