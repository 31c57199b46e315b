// Host activity (docs/attribution.md, "Host activity"): what the job's threads and processes
// spent blocked time in, whether or not a GPU was involved: per kind (checkpoint writes, other
// writes, reads, pipes and sockets, network, terminal, programs, idle waits) exact totals, and per
// item (a file, an address, a command line) the heaviest ones in bounded tables (1024 per kind;
// when full the lighter half is forgotten and the kind is marked approximate). Also the job's
// worker processes and their file reads. It is the whole account of a job that ran no kernel:
// PointAtHostActivity turns it into that job's no_gpu_work findings and evidence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/analysis/attribution.h"
#include "analyzer/analysis/event_classes.h"
#include "analyzer/analysis/evidence.h"
#include "analyzer/analysis/processes.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/vocabulary.h"

namespace idlescope {

// The host activity kind of a blocked call (classified as `event_class`); nullopt for calls
// that are no host activity (launches, opens, a local file's close).
std::optional<HostActivityKind> ActivityKindOf(const HostEvent& event, EventClass event_class);

class HostActivity {
 public:
  struct Table;
  struct FileReads {
    uint64_t reads = 0;
    uint64_t bytes = 0;
    Ns ns = 0;
  };
  // At most `top` items per kind in the report.
  explicit HostActivity(size_t top);
  ~HostActivity();
  HostActivity(HostActivity&&) noexcept;
  HostActivity& operator=(HostActivity&&) noexcept;

  // A host event of the job; `main_thread`: its thread is its process's main thread.
  void Note(const HostEvent& event, EventClass event_class, bool main_thread);
  // The writes of the files `writes` names by (process, path id) were a model file's (a rename
  // showed it): their items and time move from writes to checkpoint writes.
  void MoveToCheckpointWrites(std::span<const EvidenceKey> writes);

  // The report's section: kinds in kind order (non-empty ones), items heaviest first merged
  // across processes by what they name, programs with the run time of the traced ones, workers.
  HostActivityReport Build(const JobProcesses& processes, EvidenceResolver& evidence) const;

  // For summaries (analyzer/shard/): the tables by kind, each process's file reads; MergeFrom adds
  // another part's (of other processes) as if its calls had been noted here.
  const std::vector<Table>& tables() const { return tables_; }
  std::vector<Table>& mutable_tables() { return tables_; }
  const std::vector<FileReads>& reads() const { return reads_; }
  void RestoreReads(uint32_t process, const FileReads& reads) {
    if (process >= reads_.size()) reads_.resize(process + 1);
    reads_[process] = reads;
  }
  void MergeFrom(const HostActivity& other);

 private:
  size_t top_;
  std::vector<Table> tables_;     // one per HostActivityKind
  std::vector<FileReads> reads_;  // per process: reads of files (workers' figures)
};

// Host activity items kept per kind before the lighter half is forgotten (as TopEvidence).
inline constexpr size_t kActivityCapacity = 1024;

struct HostActivity::Table {
  struct Weight {
    Ns ns = 0;
    uint64_t bytes = 0;
    uint64_t count = 0;
    Ns main_ns = 0;
    Ns longest = -1;  // the longest call, and its thread and stack
    uint32_t tid = 0;
    bool main_thread = false;
    uint64_t stack = 0;
    FsType fs = FS_UNSPECIFIED;
    std::string label;  // programs: the command line
    bool installer = false;
  };
  Ns ns = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  Ns main_ns = 0;
  bool evicted = false;
  absl::flat_hash_map<EvidenceKey, Weight> items;

  Weight& Item(EvidenceKey key) {
    if (items.size() >= kActivityCapacity && !items.contains(key)) Shrink();
    return items[key];
  }
  void Shrink() {
    ForgetLighterHalf(items, kActivityCapacity);
    evicted = true;
  }
};

// A job without GPU work: its no_gpu_work cause points at what the job's threads did instead
// (one kHostActivity finding per kind, heaviest first, and kWorkerProcesses), with the heaviest
// items of all kinds as its evidence (pipes and sockets only when nothing else is: they only say
// "waiting for another process").
void PointAtHostActivity(const HostActivityReport& host, size_t top, CauseReport& cause);

}  // namespace idlescope
