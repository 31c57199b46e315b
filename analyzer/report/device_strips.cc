#include "analyzer/report/device_strips.h"

#include <algorithm>
#include <cmath>

namespace idlescope {

void DeviceStripRecorder::AddProcess(uint32_t /*process*/, const ProcessInfo& info) {
  job_start_ = have_start_ ? std::min(job_start_, info.start) : info.start;
  have_start_ = true;
}

void DeviceStripRecorder::OnSlice(const CreditedSlice& slice) {
  if (slice.correction) Add(slice.device, slice.when, Index(slice.replaces), -1);
  // Explained time of a short gap is its cause's, no longer the short-gap cause's.
  if (slice.in_short_gap) Add(slice.device, slice.when, kShortGapSlot, -1);
  Add(slice.device, slice.when, Index(slice.cause), 1);
}

void DeviceStripRecorder::OnShortGap(uint32_t device, Interval gap) {
  Add(device, gap, kShortGapSlot, 1);
}

void DeviceStripRecorder::Widen() {
  bucket_ns_ *= 2;
  for (auto& device : buckets_) {
    size_t merged = (device.size() + 1) / 2;
    for (size_t i = 0; i < merged; ++i) {
      Bucket sum = device[2 * i];
      if (2 * i + 1 < device.size()) {
        for (size_t c = 0; c < sum.size(); ++c) sum[c] += device[2 * i + 1][c];
      }
      device[i] = sum;
    }
    device.resize(merged);
  }
}

void DeviceStripRecorder::Add(uint32_t device, Interval when, int slot, Ns sign) {
  Ns start = std::max<Ns>(when.start - job_start_, 0);
  Ns end = when.end - job_start_;
  if (end <= start) return;
  while (static_cast<size_t>((end - 1) / bucket_ns_) >= kMaxBuckets) Widen();
  if (device >= buckets_.size()) buckets_.resize(device + 1);
  auto& strip = buckets_[device];
  size_t last = static_cast<size_t>((end - 1) / bucket_ns_);
  if (last >= strip.size()) strip.resize(last + 1, Bucket{});
  // Split the slice over the buckets it crosses, exactly: the parts add up to its length.
  for (size_t i = static_cast<size_t>(start / bucket_ns_); i <= last; ++i) {
    Ns bucket_start = static_cast<Ns>(i) * bucket_ns_;
    Ns part = std::min(end, bucket_start + bucket_ns_) - std::max(start, bucket_start);
    strip[i][slot] += sign * part;
  }
}

JobStrips DeviceStripRecorder::Finish(Ns span, std::span<const std::string> device_ids) const {
  JobStrips out;
  // A job that ends in a long quiet stretch (no slice near its end) widens the buckets here.
  out.bucket_ns = bucket_ns_;
  auto count = [&](Ns width) {
    return span > 0 ? static_cast<size_t>((span + width - 1) / width) : 0;
  };
  while (count(out.bucket_ns) > kMaxBuckets) out.bucket_ns *= 2;
  out.buckets = count(out.bucket_ns);
  const size_t merge = static_cast<size_t>(out.bucket_ns / bucket_ns_);
  for (size_t d = 0; d < device_ids.size(); ++d) {
    DeviceStrip strip;
    strip.device = device_ids[d];
    strip.idle.assign(out.buckets, std::array<Ns, kCauseCount>{});
    strip.short_gap.assign(out.buckets, 0);
    if (d < buckets_.size()) {
      const auto& have = buckets_[d];
      for (size_t i = 0; i < have.size() && i / merge < out.buckets; ++i) {
        for (int c = 0; c < kCauseCount; ++c) strip.idle[i / merge][c] += have[i][c];
        strip.short_gap[i / merge] += have[i][kShortGapSlot];
      }
    }
    out.devices.push_back(std::move(strip));
  }
  return out;
}

std::vector<int> ShareLevels(std::span<const Ns> idle, Ns bucket_ns, Ns span) {
  std::vector<int> levels(idle.size(), 0);
  double carry = 0;
  size_t largest = idle.size();
  bool shown = false;
  for (size_t b = 0; b < idle.size(); ++b) {
    Ns width = std::min<Ns>(bucket_ns, span - static_cast<Ns>(b) * bucket_ns);
    // Only a bucket with time of the cause gets a level; the carry (within half a level) waits
    // for the next one.
    if (width <= 0 || idle[b] <= 0) continue;
    double want =
        static_cast<double>(idle[b]) / static_cast<double>(width) * kTopStripLevel + carry;
    levels[b] = std::clamp(static_cast<int>(std::lround(want)), 0, kTopStripLevel);
    carry = want - levels[b];
    shown = shown || levels[b] > 0;
    if (largest == idle.size() || idle[b] > idle[largest]) largest = b;
  }
  if (!shown && largest < idle.size()) levels[largest] = 1;
  return levels;
}

}  // namespace idlescope
