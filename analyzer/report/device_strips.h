// DeviceStrips: each device's idle time by cause over the job, in a fixed number of time buckets:
// what the HTML report's timeline strip draws. It watches the analysis's credited slices
// (model/credited_slice.h, corrections included) and never the analysis itself; the report's
// figures stay the report's own, the buckets only place them in time.
//
// Memory is bounded whatever the job's length: the bucket width starts at kFirstBucketNs and
// doubles (neighbouring buckets merge) whenever a slice lands beyond kMaxBuckets buckets, so a
// device holds at most kMaxBuckets x kCauseCount counters and the strip keeps between
// kMaxBuckets / 2 and kMaxBuckets buckets over the job's span.
//
// Gaps shorter than min_gap are not credited slices: their time goes to the device's short-gap
// cause, which the report decides when the job ends (ShortGapCause). The strips keep it apart per
// bucket (DeviceStrip::short_gap), less the slices of those gaps that blocking host work
// explained, for the page to add to the device's short-gap cause. Each short gap is narrower than
// a pixel; summed per bucket they show where the launch- or batch-bound time was.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analyzer/model/causes.h"
#include "analyzer/model/credited_slice.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/record_sink.h"

namespace idlescope {

inline constexpr Ns kFirstBucketNs = 1'000'000;  // 1 ms
inline constexpr size_t kMaxBuckets = 2048;

// One device's strip: bucket i covers [i * bucket_ns, (i + 1) * bucket_ns) since the job start.
struct DeviceStrip {
  std::string device;  // DeviceReport.id
  // idle[i][cause]: idle ns of that cause credited inside bucket i
  std::vector<std::array<Ns, kCauseCount>> idle;
  // short_gap[i]: idle ns of gaps shorter than min_gap inside bucket i that no slice explained
  // (the device's short-gap cause's)
  std::vector<Ns> short_gap;
};

struct JobStrips {
  Ns bucket_ns = kFirstBucketNs;
  size_t buckets = 0;  // every strip has this many (covering the job span)
  std::vector<DeviceStrip> devices;
};

// The strip's levels: a bucket's share of one cause in kTopStripLevel + 1 steps.
inline constexpr int kTopStripLevel = 63;

// One cause's levels on one device's strip, a level per bucket: `idle[i]` ns over bucket i's
// width (bucket_ns; the last bucket ends with the job's `span`), rounded. The rounding is carried
// from bucket to bucket (error diffusion), so a row's levels add up to its idle time within half a
// level wherever it is spread: a cause thinner than a level in every bucket (short gaps spread
// over the job) shows as scattered low levels at its true density, neither lost nor inflated. A
// cause with any time at all has at least one level, in its largest bucket (a sliver still shows).
std::vector<int> ShareLevels(std::span<const Ns> idle, Ns bucket_ns, Ns span);

class DeviceStripRecorder : public RecordSink, public SliceObserver {
 public:
  // RecordSink: the processes' starts give the job start (the earliest).
  void AddProcess(uint32_t process, const ProcessInfo& info) override;
  // SliceObserver
  void OnSlice(const CreditedSlice& slice) override;
  void OnShortGap(uint32_t device, Interval gap) override;

  // The strips over [job start, job start + span), devices named by `device_ids` (the
  // analysis's device numbering, JobAnalysis::DeviceIds).
  JobStrips Finish(Ns span, std::span<const std::string> device_ids) const;

  Ns bucket_ns() const { return bucket_ns_; }

 private:
  // A bucket's counters: one per cause, then the short gaps' (kShortGapSlot).
  static constexpr int kShortGapSlot = kCauseCount;
  using Bucket = std::array<Ns, kCauseCount + 1>;

  void Add(uint32_t device, Interval when, int slot, Ns sign);
  void Widen();

  bool have_start_ = false;
  Ns job_start_ = 0;
  Ns bucket_ns_ = kFirstBucketNs;
  std::vector<std::vector<Bucket>> buckets_;  // by device
};

}  // namespace idlescope
