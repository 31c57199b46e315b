// The job's training steps, found in its own records (docs/attribution.md, "Steps"): the job's
// NVTX ranges when it marks its steps (one name recurring at the outermost level of a thread:
// `ProfilerStep#12`, `train_step`), else the repeating cycle of the GPU activity of the process
// that ran the most. Each analysis keeps, per process it owns, what it needs to find them in
// bounded memory (ProcessStepFinder); the merge chooses the job's steps among all parts'
// processes (ChooseSteps), so a job split into shards has the steps of a job read in one pass.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/job_report.h"

namespace idlescope {

// An NVTX range name as a step marker: "ProfilerStep#12" -> "ProfilerStep", "step 3" -> "step".
std::string StepMarkerName(std::string_view name);

// The steps of an activity sequence (each one's name, in start order, with its start): the
// anchor is a name that runs at least kMinStepAnchors times, its runs `P` activities apart for
// 75% of them (P >= 2; an evaluation every 10 steps breaks 1 gap in 10), and the sequence
// repeats with period P (the activity P later has the same name) for 80% of it; of the anchors that
// qualify, the smallest P (a finer cycle inside a step does not repeat the whole sequence; a
// coarser one, such as an evaluation every 50 steps, is longer). nullopt when none qualifies.
inline constexpr uint64_t kMinStepAnchors = 4;
struct FoundSteps {
  uint32_t anchor = 0;  // its name, as in `names`
  uint64_t kernels_per_step = 0;
  std::vector<Ns> starts;  // the anchor's starts, in order
};
std::optional<FoundSteps> FindSteps(const std::vector<uint32_t>& names,
                                    const std::vector<Ns>& starts);

// The GPU activities of a process the anchor and period are chosen from (16 bytes each): its
// first this many. Past them only the anchor's starts are kept (8 bytes a step).
inline constexpr size_t kStepWindow = size_t{1} << 16;
// NVTX ranges kept per process (8 bytes each), and steps whose starts are kept per process: the
// times of a longer run's first kMaxSteps steps are measured, all of its steps counted.
inline constexpr size_t kMaxSteps = size_t{1} << 17;
// The slowest steps the report lists.
inline constexpr size_t kSlowestSteps = 3;

// What one process's records say about its steps: its outermost NVTX ranges of the name with the
// most of them (or of the marker asked for), and its GPU activity's cycle.
struct ProcessSteps {
  uint32_t process = 0;
  std::string marker;             // "": no NVTX ranges
  std::vector<Ns> marker_starts;  // in order
  uint64_t activities = 0;        // GPU activities (kernels, copies, memsets) it ran
  // The anchor of the cycle: a kernel's name id in the process's strings, or a copy's or memset's
  // kind (kActivityToken set); 0: no cycle found.
  uint64_t anchor = 0;
  uint64_t per_step = 0;             // the period, in GPU activities
  std::vector<Ns> anchor_starts;     // in order (the first kMaxSteps)
  uint64_t anchor_runs = 0;          // the anchor's runs, all of them
  std::vector<std::string> devices;  // the ids of the job devices it used
};
// A copy's or memset's token in the step sequence: never a string id (small counters).
inline constexpr uint64_t kActivityToken = uint64_t{1} << 63;
// A token's name as `idlescope dump` writes it (GPU_MEMCPY:COPY_H2D, GPU_MEMSET); "" for a kernel.
std::string ActivityTokenName(uint64_t token);

// One process's records, as the analysis sees them (bounded: kStepWindow activities, then one
// start per step).
class ProcessStepFinder {
 public:
  void AddActivity(const GpuRecord& r);
  // An NVTX range at depth `count` (1: outermost).
  void AddRange(const HostEvent& e);
  // What it found; `marker` (StepMarkerName form): only ranges of that name count ("": any).
  ProcessSteps Take(uint32_t process, const std::string& marker);

 private:
  void Decide();

  uint64_t activities_ = 0;
  bool decided_ = false;
  std::vector<uint64_t> tokens_;  // the window, in arrival order (nearly start order)
  std::vector<Ns> starts_;
  uint64_t anchor_ = 0;
  uint64_t per_step_ = 0;
  std::vector<Ns> anchor_starts_;
  uint64_t anchor_runs_ = 0;
  absl::flat_hash_map<std::string, std::vector<Ns>> ranges_;
  size_t range_count_ = 0;
};

// The job's steps among its processes' (ordered by process): the marker with the most ranges of
// one process (at least kMinStepAnchors + 1; ties: the first name, then process), else the cycle of
// the process that ran the most GPU activities (ties: the first), if it has one. nullptr: none.
// `from_markers` says which.
const ProcessSteps* ChooseSteps(const std::vector<ProcessSteps>& processes, bool* from_markers);

// The steps block of the report from the chosen steps: durations between consecutive starts, the
// slowest steps with the gap of the report's top gaps that overlaps each most (and lies mostly in
// it) on `devices` (the step process's device ids). `anchor`: resolved name. Times since
// `job_start`.
StepsReport ReportSteps(const ProcessSteps& steps, bool from_markers, std::string anchor,
                        uint32_t pid, Ns job_start, const std::vector<GapReport>& gaps,
                        const std::vector<std::string>& devices);

}  // namespace idlescope
