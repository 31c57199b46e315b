// The timeline of one device and the idle gaps it contains (the "timeline" and "gaps" stages).
//
// Bands, each the union over all streams of the device:
//   compute   non-NCCL kernels: the GPU does useful work. Gaps are the holes in this band.
//   comm      NCCL kernels: communication (may only be waiting for a slower rank).
//   transfer  memcpy/memset: moving data.
//   any       every kernel, NCCL included: what nvidia-smi's "GPU util" counts (compute and comm
//             together, measured as they are sealed: no band of its own).
// A gap is a maximal interval inside the job span with no compute kernel: the startup gap before
// the first kernel, gaps between kernels, the tail gap after the last one. Gaps of at least
// `min_gap` are handed to attribution as GapEvents, in time order; shorter ones are only summed
// (they are the launch/batch-size signal, see docs/attribution.md).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "analyzer/analysis/interval_union.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/vocabulary.h"

namespace idlescope {

// A gap shorter than min_gap is only summed (a launch gap, or the tail of a device whose job ends
// right after its last kernel); a device that ran no kernel has one gap, long whatever its length.
inline bool IsShortGap(Ns length, Ns min_gap, GapKind kind) {
  return length < min_gap && kind != GapKind::kWhole;
}

// What the gap stage tells attribution. A long gap is reported in pieces as the analysis window
// moves on (kPiece: the slice [piece.start, piece.end) of the gap that began at gap_start is final
// and idle), then once more when it ends (kClose: the whole gap, and what kind it turned out to
// be). Pieces of one gap are contiguous and cover it exactly.
struct GapEvent {
  // kShort: a gap shorter than min_gap closed (summed as a whole; only the launching threads'
  // blocking host work in it is attributed on its own).
  enum Type : uint8_t { kPiece, kClose, kShort } type = kPiece;
  uint32_t device = 0;
  Interval piece;                   // kPiece: the final idle slice
  Interval gap;                     // kClose, kShort: the whole gap; kPiece: {gap start, piece end}
  GapKind kind = GapKind::kMiddle;  // kClose only
};

// Kernel statistics for the launch-bound / batch-size diagnosis.
struct KernelStats {
  uint64_t kernels = 0;          // compute kernels
  uint64_t nccl_kernels = 0;     // communication kernels
  Ns kernel_ns = 0;              // sum of compute kernel durations
  uint64_t below_sm_count = 0;   // compute kernels with fewer blocks than the device has SMs
  uint64_t with_grid = 0;        // compute kernels whose grid size is known
  Ns below_sm_ns = 0;            // sum of the durations of the kernels below the SM count
  uint64_t below_sm_blocks = 0;  // and of their blocks
  // Compute kernel durations by power of two of nanoseconds (bucket b: [2^b, 2^(b+1)) ns).
  std::array<uint64_t, 48> duration_log2{};
  // Approximate median kernel duration (the lower bound of the median's bucket, times 1.5).
  Ns MedianKernelNs() const;
};

class DeviceTimeline {
 public:
  DeviceTimeline(uint32_t device, Ns job_start, Ns min_gap);

  void SetSmCount(uint32_t sm_count) { sm_count_ = sm_count; }

  // A GPU activity of this device. Kernels feed the compute (or comm) band and the kernel
  // statistics; memcpy/memset feed the transfer band. Other kinds are ignored.
  void AddActivity(const GpuRecord& record);

  // Device memory: bytes allocated (positive) or freed (negative) at some time.
  void AddAllocation(int64_t delta_bytes);

  // Everything before `until` is final: seal the bands, append the gap events it reveals.
  void Advance(Ns until, std::vector<GapEvent>* out);
  // The job ended at `job_end`: seal everything, close the last gap (tail, or the whole span if
  // the device never ran a kernel).
  void Finish(Ns job_end, std::vector<GapEvent>* out);

  // Time up to which gaps have been reported (every idle slice before it has been handed out, or
  // is part of a gap still shorter than min_gap). Host evidence older than this is no longer
  // needed for this device.
  Ns attributed_until() const { return sliced_until_; }

  uint32_t device() const { return device_; }
  Ns compute_ns() const { return compute_ns_; }
  Ns comm_ns() const { return comm_ns_; }
  Ns transfer_ns() const { return transfer_ns_; }
  Ns any_kernel_ns() const { return any_ns_; }
  Ns short_gap_ns() const { return short_gap_ns_; }
  uint64_t short_gaps() const { return short_gaps_; }
  // Part of the short gaps was attributed to blocking host work that filled it; the rest is the
  // short-gap cause's.
  void ExplainShortGapTime(Ns ns) { short_explained_ns_ += ns; }
  Ns short_explained_ns() const { return short_explained_ns_; }
  uint64_t long_gaps() const { return long_gaps_; }
  bool ran_kernels() const { return stats_.kernels > 0; }
  Ns first_kernel() const { return first_busy_; }
  Ns last_kernel_end() const { return last_busy_end_; }
  const KernelStats& kernel_stats() const { return stats_; }
  int64_t peak_memory() const { return peak_memory_; }
  uint64_t late_records() const;
  Ns late_ns() const;
  size_t open_intervals() const;

 private:
  // Seals the bands up to `until` (compute's busy intervals to OnComputeBusy).
  void SealBands(Ns until, std::vector<GapEvent>* out);
  void OnComputeBusy(const Interval& busy, std::vector<GapEvent>* out);
  void CloseGap(Ns end, GapKind kind, std::vector<GapEvent>* out);

  uint32_t device_;
  Ns job_start_;
  Ns min_gap_;
  uint32_t sm_count_ = 0;
  IntervalUnion compute_, comm_, transfer_;  // "any" is compute and comm together (SealBands)
  std::vector<Interval> comm_sealed_;        // scratch of SealBands
  Ns compute_ns_ = 0, comm_ns_ = 0, transfer_ns_ = 0, any_ns_ = 0;
  // Gap state: the device is idle from last_busy_end_ on (as far as sealed).
  bool had_busy_ = false;
  Ns first_busy_ = -1;
  Ns last_busy_end_;
  Ns sliced_until_;
  Ns short_gap_ns_ = 0;
  Ns short_explained_ns_ = 0;
  uint64_t short_gaps_ = 0;
  uint64_t long_gaps_ = 0;
  KernelStats stats_;
  int64_t memory_ = 0;
  int64_t peak_memory_ = 0;
};

}  // namespace idlescope
