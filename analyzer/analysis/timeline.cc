#include "analyzer/analysis/timeline.h"

#include <bit>

namespace idlescope {

Ns KernelStats::MedianKernelNs() const {
  if (kernels == 0) return 0;
  uint64_t seen = 0;
  for (size_t b = 0; b < duration_log2.size(); ++b) {
    seen += duration_log2[b];
    if (seen * 2 >= kernels) return static_cast<Ns>((uint64_t{1} << b) * 3 / 2);
  }
  return 0;
}

DeviceTimeline::DeviceTimeline(uint32_t device, Ns job_start, Ns min_gap)
    : device_(device),
      job_start_(job_start),
      min_gap_(min_gap),
      last_busy_end_(job_start),
      sliced_until_(job_start) {}

void DeviceTimeline::AddActivity(const GpuRecord& record) {
  // Nothing of the job happens before its first process started; clamp clock noise.
  Ns start = std::max(record.start, job_start_);
  Ns end = std::max(record.end, start);
  switch (record.kind) {
    case GPU_KERNEL: {
      if (record.nccl) {
        ++stats_.nccl_kernels;
        comm_.Add(start, end);
        return;
      }
      ++stats_.kernels;
      Ns dur = record.end - record.start;
      stats_.kernel_ns += dur;
      int bucket = dur <= 0 ? 0 : std::bit_width(static_cast<uint64_t>(dur)) - 1;
      stats_.duration_log2[std::min<size_t>(bucket, stats_.duration_log2.size() - 1)]++;
      if (record.grid > 0) {
        ++stats_.with_grid;
        if (sm_count_ > 0 && record.grid < sm_count_) {
          ++stats_.below_sm_count;
          stats_.below_sm_ns += dur;
          stats_.below_sm_blocks += record.grid;
        }
      }
      compute_.Add(start, end);
      return;
    }
    case GPU_MEMCPY:
    case GPU_MEMSET:
    case GPU_PEER_COPY:
      transfer_.Add(start, end);
      return;
    default:
      return;
  }
}

void DeviceTimeline::AddAllocation(int64_t delta_bytes) {
  memory_ += delta_bytes;
  if (memory_ < 0) memory_ = 0;  // frees of allocations made before tracing began
  peak_memory_ = std::max(peak_memory_, memory_);
}

void DeviceTimeline::CloseGap(Ns end, GapKind kind, std::vector<GapEvent>* out) {
  Interval gap{last_busy_end_, end};
  if (gap.length() <= 0) return;
  if (IsShortGap(gap.length(), min_gap_, kind)) {
    short_gap_ns_ += gap.length();
    ++short_gaps_;
    out->push_back(GapEvent{GapEvent::kShort, device_, {}, gap});
    return;
  }
  ++long_gaps_;
  if (sliced_until_ < end) {
    out->push_back(GapEvent{GapEvent::kPiece, device_, {sliced_until_, end}, {gap.start, end}});
  }
  out->push_back(GapEvent{GapEvent::kClose, device_, {}, gap, kind});
}

void DeviceTimeline::OnComputeBusy(const Interval& busy, std::vector<GapEvent>* out) {
  compute_ns_ += busy.length();
  if (busy.start > last_busy_end_) {
    CloseGap(busy.start, had_busy_ ? GapKind::kMiddle : GapKind::kStartup, out);
  }
  if (!had_busy_) first_busy_ = busy.start;
  had_busy_ = true;
  last_busy_end_ = std::max(last_busy_end_, busy.end);
  sliced_until_ = last_busy_end_;
}

void DeviceTimeline::SealBands(Ns until, std::vector<GapEvent>* out) {
  // Any kernel, NCCL included, is the union of the compute and comm bands: their sum less their
  // overlap, found as both are sealed up to the same time (each comes out in time order).
  comm_sealed_.clear();
  comm_.Seal(until, [&](const Interval& iv) {
    comm_ns_ += iv.length();
    any_ns_ += iv.length();
    comm_sealed_.push_back(iv);
  });
  size_t next = 0;
  compute_.Seal(until, [&](const Interval& busy) {
    any_ns_ += busy.length();
    while (next < comm_sealed_.size() && comm_sealed_[next].end <= busy.start) ++next;
    for (size_t k = next; k < comm_sealed_.size() && comm_sealed_[k].start < busy.end; ++k) {
      any_ns_ -=
          std::min(busy.end, comm_sealed_[k].end) - std::max(busy.start, comm_sealed_[k].start);
    }
    OnComputeBusy(busy, out);
  });
  transfer_.Seal(until, [&](const Interval& iv) { transfer_ns_ += iv.length(); });
}

void DeviceTimeline::Advance(Ns until, std::vector<GapEvent>* out) {
  SealBands(until, out);
  // An open gap that is already long enough is handed out piece by piece, so that the evidence
  // for it need not be kept until it ends.
  if (until > last_busy_end_ && until - last_busy_end_ >= min_gap_ && until > sliced_until_) {
    out->push_back(
        GapEvent{GapEvent::kPiece, device_, {sliced_until_, until}, {last_busy_end_, until}});
    sliced_until_ = until;
  }
}

void DeviceTimeline::Finish(Ns job_end, std::vector<GapEvent>* out) {
  // Work reported after the job end (clock noise) is clipped: seal at the end, drop the rest.
  job_end = std::max(job_end, job_start_);
  SealBands(job_end, out);
  if (job_end > last_busy_end_)
    CloseGap(job_end, had_busy_ ? GapKind::kTail : GapKind::kWhole, out);
  sliced_until_ = std::max(sliced_until_, job_end);
}

uint64_t DeviceTimeline::late_records() const {
  return compute_.late_records() + comm_.late_records() + transfer_.late_records();
}

Ns DeviceTimeline::late_ns() const { return compute_.late_ns() + comm_.late_ns(); }

size_t DeviceTimeline::open_intervals() const {
  return compute_.open_intervals() + comm_.open_intervals() + transfer_.open_intervals();
}

}  // namespace idlescope
