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
#include <vector>

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
  // At most `top` items per kind in the report.
  explicit HostActivity(size_t top);
  ~HostActivity();

  // A host event of the job; `main_thread`: its thread is its process's main thread.
  void Note(const HostEvent& event, EventClass event_class, bool main_thread);

  // The report's section: kinds in kind order (non-empty ones), items heaviest first merged
  // across processes by what they name, programs with the run time of the traced ones, workers.
  HostActivityReport Build(const JobProcesses& processes, EvidenceResolver& evidence) const;

 private:
  struct Table;
  struct FileReads {
    uint64_t reads = 0;
    uint64_t bytes = 0;
    Ns ns = 0;
  };
  size_t top_;
  std::vector<Table> tables_;     // one per HostActivityKind
  std::vector<FileReads> reads_;  // per process: reads of files (workers' figures)
};

// A job without GPU work: its no_gpu_work cause points at what the job's threads did instead
// (one kHostActivity finding per kind, heaviest first, and kWorkerProcesses), with the heaviest
// items of all kinds as its evidence (pipes and sockets only when nothing else is: they only say
// "waiting for another process").
void PointAtHostActivity(const HostActivityReport& host, size_t top, CauseReport& cause);

}  // namespace idlescope
