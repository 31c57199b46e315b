// The step census of `idlescope diff` (diff/diff.h, "Runs of different lengths"): how many
// collectives each process issued per communicator and how often it ran each compute kernel, with
// which grid; and the job's training steps, found in its own kernel sequence (FindSteps).
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
#include "analyzer/model/record_sink.h"
#include "analyzer/model/symbol_source.h"

namespace idlescope {

// A compute kernel name and how often one process ran it.
struct KernelCount {
  std::string name;
  uint64_t count = 0;        // most launches of this name by one process (one rank's steps)
  uint64_t median_grid = 0;  // blocks per launch (median), 0: unknown
};

// The training steps of a run, found without markers in the GPU activity sequence (kernels, NCCL's
// too, copies and memsets by kind) of the process that ran the most (docs/diff.md, "Steps"): a
// step begins at each start of the anchor, an activity that runs once per period of the sequence.
struct Steps {
  // Where the steps come from: the job's NVTX ranges (its own markers: one name recurring at the
  // outermost level of a thread), else its GPU activity (FindSteps).
  enum class Source : uint8_t { kNone, kNvtx, kGpuActivity };
  Source source = Source::kNone;
  // The anchor: the NVTX range's name (trailing digits and '#' dropped: ProfilerStep#12 is
  // ProfilerStep), a kernel's name, GPU_MEMCPY:COPY_H2D, GPU_MEMSET ("": no steps found).
  std::string anchor;
  uint64_t kernels_per_step = 0;  // the period, in GPU activities
  std::vector<Ns> durations;      // from one anchor's start on the GPU to the next's, in order
};

// The steps of an activity sequence (each one's name, in start order, with its start): the
// anchor is a name that runs at least kMinStepAnchors times, its runs `P` activities apart for
// 75% of them (P >= 2; an evaluation every 10 steps breaks 1 gap in 10), and the sequence
// repeats with period P (the activity P later has the same name) for 80% of it; of the anchors that
// qualify, the smallest P (a finer cycle inside a step does not repeat the whole sequence; a
// coarser one, such as an evaluation every 50 steps, is longer). nullopt when none qualifies.
inline constexpr uint64_t kMinStepAnchors = 4;
// An NVTX range name as a step marker: "ProfilerStep#12" -> "ProfilerStep", "step 3" -> "step".
std::string StepMarkerName(std::string_view name);
struct FoundSteps {
  uint32_t anchor = 0;  // its name, as in `names`
  uint64_t kernels_per_step = 0;
  std::vector<Ns> durations;
};
std::optional<FoundSteps> FindSteps(const std::vector<uint32_t>& names,
                                    const std::vector<Ns>& starts);

// What a run's trace says about its steps.
struct StepCensus {
  uint64_t nccl_collectives = 0;     // collectives on the main communicator, 0: no NCCL
  uint64_t nccl_comm = 0;            // its id
  std::vector<KernelCount> kernels;  // most frequent first, at most kMaxCensusKernels
  Steps steps;
};
inline constexpr size_t kMaxCensusKernels = 8;
// Kernels of one process kept for FindSteps (16 bytes each): past that, the steps are those of
// the run's first kMaxStepKernels kernels.
inline constexpr size_t kMaxStepKernels = size_t{1} << 24;

class StepCensusSink : public RecordSink {
 public:
  void AddProcess(uint32_t process, const ProcessInfo& info) override;
  void AddHostEvent(const HostEvent& event) override;
  void AddGpuRecord(const GpuRecord& record) override;
  // Steps from NVTX ranges named `marker` (after the trailing step number is dropped) rather than
  // the most frequent outermost name; "" for that.
  void SetStepMarker(std::string marker) { marker_ = std::move(marker); }

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
    // GPU activities in arrival order (nearly start order): token (a kernel's name id, a copy's
    // kind) and start.
    std::vector<uint64_t> kernel_names;
    std::vector<Ns> kernel_starts;
    // Outermost NVTX ranges (and started ones) by name, their starts (at most kMaxStepKernels).
    absl::flat_hash_map<std::string, std::vector<Ns>> nvtx_starts;
    size_t nvtx_ranges = 0;
  };
  std::vector<ProcessCensus> processes_;
  std::string marker_;
};

}  // namespace idlescope
