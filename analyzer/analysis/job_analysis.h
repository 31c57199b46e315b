// JobAnalysis: the streaming core of `idlescope report`. It is fed the plain records of a whole
// job (job_model.h) in approximate time order, runs the timeline, gap and attribution stages as
// the analysis window moves on (AdvanceTo), and builds the JobReport at the end.
//
// Bounded memory: per device it keeps the open window of busy intervals (analysis/timeline.h), and
// across the job the candidate events that may still explain an idle slice not yet attributed. A
// candidate is forgotten once every device it can explain has been attributed past its end.
// Results (per-cause totals, bounded top evidence, the top gaps) are what remains.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "analyzer/analysis/attribution.h"
#include "analyzer/analysis/collectives.h"
#include "analyzer/analysis/event_classes.h"
#include "analyzer/analysis/evidence.h"
#include "analyzer/analysis/snapshots.h"
#include "analyzer/analysis/startup.h"
#include "analyzer/analysis/timeline.h"
#include "analyzer/model/causes.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/record_sink.h"
#include "analyzer/model/symbol_source.h"

namespace idlescope {

struct AnalysisOptions {
  // Idle gaps shorter than this are not sliced: they count as launch-bound / batch-size idle.
  Ns min_gap = 1'000'000;  // 1 ms
  size_t top_gaps = 10;
  size_t top_evidence = 5;
  // The window is moved on at most once per this much trace time (cost vs. memory).
  Ns advance_quantum = 20'000'000;  // 20 ms
};

class JobAnalysis : public RecordSink {
 public:
  explicit JobAnalysis(AnalysisOptions options = {});
  ~JobAnalysis();

  // RecordSink. All processes come first: the job span starts at the earliest process start.
  void AddProcess(uint32_t process, const ProcessInfo& info) override;
  void AddDeviceInfo(uint32_t process, const DeviceProps& props) override;
  void AddHostEvent(const HostEvent& event) override;
  void AddGpuRecord(const GpuRecord& record) override;
  void EndProcess(uint32_t process, Ns end) override;
  // Every record before `t` has been delivered: attribute what became final.
  void AdvanceTo(Ns t) override;
  void AddWarning(const ReportWarning& warning) override;
  void AddFile(const FileReport& file) override;

  JobReport Finish(const SymbolSource& symbols);

  // For tests and --stats: candidates held now, and the most held at once.
  size_t pending_candidates() const { return pending_.size() + incoming_.size(); }
  size_t peak_pending_candidates() const { return peak_pending_; }

 private:
  struct CauseAccumulator;
  struct OpenGap;
  struct DeviceState;
  struct ProcessState;
  struct GapRecord;
  struct ActivityTable;

  void Start();
  void BuildFamilies();
  uint32_t DeviceFor(uint32_t process, uint32_t ordinal);
  void LinkProcess(uint32_t process, uint32_t device);
  void AddCandidate(const Candidate& candidate);
  uint64_t DirectoryOf(const HostEvent& event);
  void NoteHostActivity(const HostEvent& event, EventClass event_class);
  HostActivityReport BuildHostActivity(EvidenceResolver& evidence) const;
  void Step(Ns t);
  void MergeIncoming();
  void HandleGapEvents();
  void Attribute(uint32_t device, Interval piece);
  void Credit(DeviceState& device, const Candidate* candidate, Interval slice);
  // in_open_gap: the slice is in the device's open gap (not a late event's closed slice).
  void CreditCause(DeviceState& device, const Candidate& candidate, Ns length, bool in_open_gap);
  // Checkpoint snapshots (docs/attribution.md, "Checkpoint snapshots").
  void ReclassifySnapshot(uint32_t process, uint32_t tid, Interval copy);
  void ReclaimResidual(const Candidate& candidate);
  void CloseGap(uint32_t device, Interval gap, GapKind kind);
  void Prune();
  Ns ProcessEnd(const ProcessState& process) const;
  const Tier* TierFor(const Candidate& candidate, const DeviceState& device, uint32_t device_index,
                      Tier* storage) const;

  AnalysisOptions options_;
  bool started_ = false;
  Ns job_start_ = 0;
  Ns last_step_ = 0;
  std::vector<std::unique_ptr<ProcessState>> processes_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  absl::flat_hash_map<std::string, uint32_t> device_by_key_;
  std::vector<Candidate> pending_;   // sorted by start
  std::vector<Candidate> incoming_;  // not yet merged into pending_
  size_t pending_after_prune_ = 0;
  Ns longest_pending_ = 0;  // the longest candidate in pending_
  size_t peak_pending_ = 0;
  SnapshotRuns snapshots_;
  std::vector<Interval> snapshot_copies_;   // scratch: the copies a checkpoint write made snapshots
  std::vector<Candidate> installer_spans_;  // installer processes, whole lifetime
  // How an installer process was started: the exec/spawn call that named its command line and
  // the fork/exec/spawn call whose stack says where the job did it (docs/attribution.md,
  // "Library installation"). Keyed by (host, pid) of the installer; only installers are kept.
  struct Launch {
    std::string command;  // "pip install -r requirements.txt" ("" until an exec/spawn is seen)
    uint32_t stack_process = 0;
    uint64_t stack = 0;       // per-process StackNode id in stack_process (0: none)
    bool exec_stack = false;  // the stack is the exec/spawn call's (preferred to the fork's)
  };
  absl::flat_hash_map<std::pair<std::string, uint32_t>, Launch> launches_;
  absl::flat_hash_set<std::pair<std::string, uint32_t>> installer_pids_;  // (host, pid)
  void NoteLaunch(const HostEvent& event);
  const Launch* LaunchOf(uint32_t process) const;
  std::string InstallerCommand(uint32_t process) const;
  std::vector<GapEvent> gap_events_;
  std::vector<RankedCandidate> ranked_;
  std::vector<Tier> tiers_;
  std::vector<GapRecord> top_gaps_;      // min-heap by length, at most options_.top_gaps
  std::vector<ActivityTable> activity_;  // one per HostActivityKind
  Collectives collectives_;
  Startup startup_;
  // GPU-side bandwidth of host<->device copies (CUPTI GPU_MEMCPY: bytes over the copy's own
  // duration on the device), for the savings estimates. Host blocked time is not used: a
  // synchronous copy also waits for the kernels queued before it.
  struct CopyRate {
    uint64_t bytes = 0;
    Ns ns = 0;
    double BytesPerNs() const {
      return ns > 0 ? static_cast<double>(bytes) / static_cast<double>(ns) : 0;
    }
  };
  CopyRate pinned_copies_;                   // H2D and D2H with a pinned host side
  CopyRate d2h_pinned_copies_, d2h_copies_;  // D2H: pinned host side, any host side
  absl::flat_hash_map<uint64_t, std::string> directory_names_;
  uint64_t host_events_ = 0;
  uint64_t gpu_records_ = 0;
  uint64_t late_candidates_ = 0;
  uint64_t forgotten_candidates_ = 0;
  Ns reclaimed_ns_ = 0;
  std::vector<ReportWarning> warnings_;
  std::vector<FileReport> files_;
};

}  // namespace idlescope
