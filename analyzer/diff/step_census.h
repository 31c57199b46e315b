// The step census of `idlescope diff` (diff/diff.h, "Runs of different lengths"): how many
// collectives each process issued per communicator and how often it ran each compute kernel, with
// which grid; and the job's training steps, as its report found them (analysis/steps.h).
// StepCensusSink collects it as a RecordSink, from the same single read of the files that feeds
// the analysis (a TeeSink), and resolves the kernel names once the read is done.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/record_sink.h"
#include "analyzer/model/symbol_source.h"

namespace idlescope {

// A compute kernel name and how often one process ran it.
struct KernelCount {
  std::string name;
  uint64_t count = 0;        // most launches of this name by one process (one rank's steps)
  uint64_t median_grid = 0;  // blocks per launch (median), 0: unknown
};

// The training steps of a run as its report found them (analysis/steps.h): where from, what each
// begins with, and their durations in order.
struct Steps {
  StepSource source = StepSource::kNone;
  std::string anchor;             // StepsReport::anchor ("": no steps found)
  uint64_t kernels_per_step = 0;  // the period, in GPU activities
  std::vector<Ns> durations;
};
Steps StepsOf(const StepsReport& report);

// What a run's trace says about its steps.
struct StepCensus {
  uint64_t nccl_collectives = 0;     // collectives on the main communicator, 0: no NCCL
  uint64_t nccl_comm = 0;            // its id
  std::vector<KernelCount> kernels;  // most frequent first, at most kMaxCensusKernels
  Steps steps;
};
inline constexpr size_t kMaxCensusKernels = 8;

class StepCensusSink : public RecordSink {
 public:
  void AddProcess(uint32_t process, const ProcessInfo& info) override;
  void AddHostEvent(const HostEvent& event) override;
  void AddGpuRecord(const GpuRecord& record) override;

  // Per communicator and per kernel name, the most any one process saw: every rank of a
  // data-parallel job runs the same steps, and DataLoader workers run none.
  StepCensus Census(const SymbolSource& symbols) const;

 private:
  struct ProcessCensus {
    absl::flat_hash_map<uint64_t, uint64_t> collectives_by_comm;
    // Kernel name id -> grid -> launches.
    absl::flat_hash_map<uint64_t, std::map<uint64_t, uint64_t>> grids_by_name;
    // The counter of the last kernel's (name, grid): consecutive kernels repeat them. std::map
    // nodes stay where they are when their map moves, so the pointer outlives a rehash.
    uint64_t last_name = 0;
    uint64_t last_grid = 0;
    uint64_t* last_count = nullptr;
  };
  std::vector<ProcessCensus> processes_;
};

}  // namespace idlescope
