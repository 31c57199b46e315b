// JobAnalysis: the streaming core of `idlescope report`, a RecordSink (model/record_sink.h) fed
// the plain records of a whole job in approximate time order. It owns one object per concern
// and routes each record to them; as the analysis window moves on (AdvanceTo) it runs the
// timeline, gap and attribution stages and credits what became final; at the end its results are
// one part of the job (analysis/part_results.h): BuildReport merges the whole job read in one pass
// as one part (analysis/job_merge.h), a shard's map hands its part over in a summary.
//
//   processes (families, workers, installers) -+
//   devices (identity, timelines, launchers) --+-> candidates -> window -> attribution
//   host events -> classes -> snapshots ------+    (per gap piece: ResolveSlices)
//                           -> host activity       -> crediting (totals, gaps, observer)
//   NCCL calls -> collectives; early events -> startup; GPU copies -> copy rates (savings)
//
// Bounded memory: per device it keeps the open window of busy intervals (analysis/timeline.h),
// and across the job the candidate events that may still explain an idle slice not yet
// attributed (analysis/candidate_window.h). Results (per-cause totals, bounded top evidence,
// the top gaps) are what remains. docs/architecture.md draws the stages.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/analysis/attribution.h"
#include "analyzer/analysis/blame.h"
#include "analyzer/analysis/candidate_window.h"
#include "analyzer/analysis/crediting.h"
#include "analyzer/analysis/cross_rank.h"
#include "analyzer/analysis/device_result.h"
#include "analyzer/analysis/devices.h"
#include "analyzer/analysis/evidence.h"
#include "analyzer/analysis/host_activity.h"
#include "analyzer/analysis/identities.h"
#include "analyzer/analysis/job_merge.h"
#include "analyzer/analysis/options.h"
#include "analyzer/analysis/part_results.h"
#include "analyzer/analysis/processes.h"
#include "analyzer/analysis/savings.h"
#include "analyzer/analysis/snapshots.h"
#include "analyzer/analysis/startup.h"
#include "analyzer/analysis/steps.h"
#include "analyzer/analysis/timeline.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/record_sink.h"
#include "analyzer/model/symbol_source.h"

namespace idlescope {

// What a process is to an analysis of part of a job (analyzer/shard/): its trace file is read
// and it is accounted for here (kOwned); its file is read for the candidates it gives the devices
// analyzed here, but its own figures are another part's (kGuest: a launcher, an installer); or its
// file is not read at all (kAbsent: it only takes part in the families).
enum class ProcessRole : uint8_t { kOwned, kGuest, kAbsent };

class JobAnalysis : public RecordSink {
 public:
  explicit JobAnalysis(AnalysisOptions options = {});

  // Part of a job (before the first record): each process's role (default: every one owned).
  void SetRoles(std::vector<ProcessRole> roles) { roles_ = std::move(roles); }
  // `processes` will be added (AddProcess): room for them at once.
  void ReserveProcesses(size_t processes) {
    processes_.Reserve(processes);
    devices_.Reserve(processes);
  }
  // Where the records of the cross-rank stages go (default: the analysis's own, fed live).
  void SetCrossRankSink(CrossRankSink* sink) { cross_ = sink; }

  // RecordSink. All processes come first: the job span starts at the earliest process start.
  void AddProcess(uint32_t process, const ProcessInfo& info) override;
  void AddDeviceInfo(uint32_t process, const DeviceProps& props) override;
  void AddHostEvent(const HostEvent& event) override;
  void AddGpuRecord(const GpuRecord& record) override;
  void EndProcess(uint32_t process, Ns end) override;
  void FileDone(uint32_t process) override {
    if (process < processes_.size()) processes_[process].read = true;
  }
  // Every record before `t` has been delivered: attribute what became final.
  void AdvanceTo(Ns t) override;
  void AddWarning(const ReportWarning& warning) override;
  void AddFile(const FileReport& file) override;
  void AddHostClock(const HostClock& clock) override { clocks_.push_back(clock); }
  void AddSocketAddress(uint32_t process, std::string key) override {
    peers_.AddAddress(process, std::move(key));
  }

  // Sees every credited slice from now on (analysis/crediting.h); nullptr: none.
  void SetSliceObserver(SliceObserver* observer) { crediting_.SetObserver(observer); }
  // The job devices the observer's slices are numbered by: their ids ("host/uuid"), as the
  // report's DeviceReport.id names them.
  std::vector<std::string> DeviceIds() const;

  // The whole job read in one pass (every process owned): closes every gap at the job's end and
  // builds the report as the merge of this one part, resolving evidence with `symbols`.
  JobReport BuildReport(const SymbolSource& symbols);

  // For an analysis of part of a job, instead of BuildReport: the end of the processes read here
  // (owned and guests), then Finish(t) closes every device's last gap at `t`, the job's end as
  // far as known (no earlier than End()), and TakeResults hands over the part's results (the
  // analysis is done then). Inputs: what the merge needs of the job besides the parts, as this
  // analysis saw it (its processes, the files its reader skipped, the hosts' clocks).
  Ns End() const;
  void Finish(Ns job_end);
  PartResults TakeResults();
  JobInputs Inputs() const;
  const JobProcesses& processes() const { return processes_; }

  // For tests and --stats: candidates held now, and the most held at once.
  size_t pending_candidates() const { return window_.size(); }
  size_t peak_pending_candidates() const { return window_.peak(); }

 private:
  void Start();
  void BuildFamilies();
  // The job device of `process`'s ordinal; links it to the process's family when new.
  uint32_t Device(uint32_t process, uint32_t ordinal);
  void AddCandidate(const Candidate& candidate);
  // A THREAD_SAMPLE run: a candidate on its thread's devices (docs/attribution.md, "Samples").
  void AddSample(const HostEvent& e);
  // A worker's sampled run: what it says of the waits for the workers (IsWorkerSampleClass).
  EventClassification ClassifyWorkerSample(const HostEvent& e, uint64_t* object) const;
  void Step(Ns t);
  void HandleGapEvents();
  void Attribute(uint32_t device, Interval piece);
  // A gap shorter than min_gap: the launching threads' blocking host work in it.
  void AttributeShort(uint32_t device, Interval gap);
  // The tier in which candidate `c` can explain `device`'s idle time; false when it cannot
  // (docs/attribution.md, "Tiers and precedence").
  bool TierFor(const Candidate& c, uint32_t device, Tier* tier) const;
  void ReclassifySnapshot(uint32_t process, uint32_t tid, Interval copy);
  // What the job did with a file or socket, and the child a wait was for, refine `c`
  // (analysis/identities.h); `object` becomes a child wait's evidence (the child's command).
  EventClassification Identify(const HostEvent& e, EventClassification c, uint64_t* object);
  // The writes of these (process, path id) files, uploads so far, were a model file's.
  void ReclassifyWrites(const std::vector<EvidenceKey>& writes);
  void Prune();
  // An installer process's event (its span too): installations hold the whole job up, whichever
  // process runs them, so it may explain every device. (The call of a rank that starts an
  // installer is that rank's, like its other events: the installer's own span covers the rest.)
  bool JobWide(const Candidate& c) const {
    return c.event_class == EventClass::kInstaller && processes_[c.process].in_installer;
  }
  bool Owned(uint32_t process) const {
    return process >= roles_.size() || roles_[process] == ProcessRole::kOwned;
  }

  AnalysisOptions options_;
  bool started_ = false;
  Ns job_start_ = 0;
  Ns last_step_ = 0;
  JobProcesses processes_;
  JobDevices devices_;
  CandidateWindows window_;
  Crediting crediting_;
  SnapshotRuns snapshots_;
  ModelFiles model_files_;
  SocketPeers peers_;
  MappedFiles mapped_;
  std::vector<EvidenceKey>
      made_model_;  // writes a rename or a read-back showed were of model files (scratch)
  HostActivity host_activity_;
  CrossRank cross_rank_;
  CrossRankSink* cross_ = &cross_rank_;
  std::vector<ProcessRole> roles_;
  bool finished_ = false;
  Ns finished_at_ = 0;
  Startup startup_;
  CopyRates copy_rates_;
  std::vector<ProcessStepFinder> step_finders_;  // by process (owned ones fed)
  DirectoryNames directories_;
  // The stack of each thread's last traced call, the evidence of its sampled runs: a direct-mapped
  // cache by thread (a collision forgets the other thread's: its runs then show no stack).
  class LastStacks {
   public:
    void Note(uint64_t thread, uint64_t stack) { slots_[Slot(thread)] = {thread, stack}; }
    uint64_t Of(uint64_t thread) const {
      const Entry& e = slots_[Slot(thread)];
      return e.thread == thread ? e.stack : 0;
    }

   private:
    struct Entry {
      uint64_t thread = ~uint64_t{0};
      uint64_t stack = 0;
    };
    static size_t Slot(uint64_t thread) { return (thread * 0x9E3779B97F4A7C15ull) >> 54; }
    std::array<Entry, 1024> slots_{};
  };
  LastStacks last_stacks_;
  std::vector<Interval> snapshot_copies_;  // scratch: the copies a checkpoint write made snapshots
  std::vector<GapEvent> gap_events_;       // scratch of Step
  std::vector<RankedCandidate> ranked_;    // scratch of Attribute
  std::vector<size_t> slots_;              // scratch of Attribute
  uint64_t host_events_ = 0;
  uint64_t gpu_records_ = 0;
  std::vector<ReportWarning> warnings_;  // the reader's, but the skipped files
  std::vector<ReportWarning> skipped_;
  std::vector<FileReport> files_;
  std::vector<HostClock> clocks_;
};

}  // namespace idlescope
