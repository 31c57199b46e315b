#include "analyzer/analysis/savings.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace idlescope {
namespace {

using Rule = Saving (*)(Ns idle_ns, const CauseTotals& totals, const CopyRates& rates,
                        const DeviceWork& work);

Saving All(Ns idle_ns, const CauseTotals&, const CopyRates&, const DeviceWork&) {
  return {.ns = idle_ns, .basis = {.method = SavingMethod::kAll}};
}

// A heuristic: fusing kernels or capturing them in a graph (launch-bound), or freeing memory for
// a larger batch (memory-bound), halves the launch gaps per sample.
Saving Half(Ns idle_ns, const CauseTotals&, const CopyRates&, const DeviceWork&) {
  return {.ns = idle_ns / 2, .basis = {.method = SavingMethod::kHalf}};
}

Saving None(Ns, const CauseTotals&, const CopyRates&, const DeviceWork&) { return {}; }

// Communication overlapped with compute (gradients all-reduced in buckets on their own stream
// while the backward pass goes on, as DDP does) hides up to the compute it can run beside. What
// the rank waited for a slower rank stays: only fixing that rank removes it.
Saving OverlapWithCompute(Ns idle_ns, const CauseTotals&, const CopyRates&, const DeviceWork& w) {
  const Ns wait = std::clamp<Ns>(w.collective_wait_ns, 0, idle_ns);
  return {.ns = std::min(idle_ns - wait, w.compute_ns),
          .basis = {.method = SavingMethod::kOverlapWithCompute, .wait_ns = wait}};
}

// A batch grown as far as device memory allows (at most kMaxBatchGrowth; only until the kernels
// below the SM count fill the SMs when the memory use is unknown): each launch does that many
// times the work, so the launch gaps per sample shrink by that factor, and those kernels run at
// most full (their time per sample shrinks to their fill of the SMs). Without grid sizes or an
// SM count: half of the gaps.
Saving FillTheDevice(Ns idle_ns, const CauseTotals& t, const CopyRates& r, const DeviceWork& w) {
  const double fill = w.small_kernel_fill;
  if (fill <= 0) return Half(idle_ns, t, r, w);
  double growth = w.memory_headroom > 0 ? std::min(w.memory_headroom, kMaxBatchGrowth)
                                        : std::min(1 / fill, kMaxBatchGrowth);
  growth = std::max(growth, 1.0);
  const double kernels_kept = std::max(fill, 1 / growth);
  return {.ns = static_cast<Ns>(static_cast<double>(idle_ns) * (1 - 1 / growth)),
          .busy_ns = static_cast<Ns>(static_cast<double>(w.small_kernel_ns) * (1 - kernels_kept)),
          .basis = {.method = SavingMethod::kFillTheDevice, .batch_growth = growth}};
}

// The fix: copies from pinned memory, issued ahead on their own stream so they overlap compute.
// The copies then take the pageable bytes' time at the pinned bandwidth (and the pinned copies
// theirs), and only what compute cannot cover stays exposed. Not the GPU-side rate of the
// pageable copies: CUPTI's record covers the DMA from the driver's staging buffer (22 us for
// 1 MiB on an H200, whose cudaMemcpy blocked 194 us), not the staging.
Saving PageableAtPinnedRate(Ns idle_ns, const CauseTotals& acc, const CopyRates& rates,
                            const DeviceWork& w) {
  const double pinned = rates.pinned.BytesPerNs();
  const double rate = pinned > 0 ? pinned : kDefaultPinnedBytesPerNs;
  const Ns pageable_at_pinned = static_cast<Ns>(acc.pageable_bytes / rate);
  const Ns copies =
      std::min(acc.pageable_ns, pageable_at_pinned) + std::max<Ns>(0, idle_ns - acc.pageable_ns);
  const Ns exposed = std::max<Ns>(0, copies - w.compute_ns);
  return {.ns = std::max<Ns>(0, idle_ns - exposed),
          .basis = {.method = SavingMethod::kPageableAtPinnedRate,
                    .rate_bytes_per_ns = rate,
                    .rate_source = pinned > 0 ? RateSource::kPinnedCopies : RateSource::kAssumed}};
}

// An asynchronous checkpoint keeps the snapshot: the one measured before the writes, or the one
// their bytes need (a device-to-host copy into pinned memory), whichever is longer. It hides a
// save's writes behind the training that follows, until the next save is due: a writer with one
// save in flight makes that save wait for the writes that outlast it (outlast_ns), and the job's
// exit waits for the last; a checkpoint after the last kernel (the device's tail gap) has nothing
// to hide behind.
Saving CheckpointMinusSnapshot(Ns idle_ns, const CauseTotals& acc, const CopyRates& rates,
                               const DeviceWork&) {
  double rate = rates.d2h_pinned.BytesPerNs();
  RateSource source = RateSource::kPinnedDeviceToHostCopies;
  if (rate <= 0) {
    rate = rates.d2h.BytesPerNs();
    source = RateSource::kDeviceToHostCopies;
  }
  if (rate <= 0) {
    rate = kDefaultPinnedBytesPerNs;
    source = RateSource::kAssumed;
  }
  Ns snapshot = std::max(acc.snapshot_ns, static_cast<Ns>(acc.bytes / rate));
  // The bytes are a sum of shares of events (bytes in proportion to the time credited): the
  // report gives the nearest whole byte.
  const uint64_t bytes = static_cast<uint64_t>(std::nearbyint(std::max(acc.bytes, 0.0)));
  const Ns tail = std::clamp<Ns>(acc.tail_ns, 0, idle_ns);
  const Ns outlast = std::clamp<Ns>(acc.outlast_ns, 0, idle_ns - tail);
  const Ns hidden = idle_ns - tail - outlast;
  return {.ns = std::max<Ns>(0, hidden - snapshot),
          .basis = {.method = SavingMethod::kCheckpointMinusSnapshot,
                    .rate_bytes_per_ns = rate,
                    .rate_source = source,
                    .bytes = bytes,
                    .snapshot_ns = acc.snapshot_ns,
                    .tail_ns = tail,
                    .outlast_ns = outlast}};
}

// The rule of a saving method. kSpreadOverDevices is no device's rule: the report spreads the
// work of unused GPUs over the job (report_builder.cc), and causes.def may not name it.
constexpr Rule RuleOf(SavingMethod method) {
  switch (method) {
    case SavingMethod::kNone:
      return None;
    case SavingMethod::kAll:
      return All;
    case SavingMethod::kHalf:
      return Half;
    case SavingMethod::kPageableAtPinnedRate:
      return PageableAtPinnedRate;
    case SavingMethod::kCheckpointMinusSnapshot:
      return CheckpointMinusSnapshot;
    case SavingMethod::kOverlapWithCompute:
      return OverlapWithCompute;
    case SavingMethod::kFillTheDevice:
      return FillTheDevice;
    case SavingMethod::kSpreadOverDevices:
      break;
  }
  return nullptr;
}

// Each cause's rule, from its `saving` column in causes.def.
constexpr std::array<Rule, kCauseCount> kSavingRules = [] {
  std::array<Rule, kCauseCount> rules{};
  for (Cause c : kAllCauses) rules[Index(c)] = RuleOf(InfoOf(c).saving);
  return rules;
}();
static_assert(std::find(kSavingRules.begin(), kSavingRules.end(), nullptr) == kSavingRules.end(),
              "causes.def: every cause's .saving is a device's rule");

}  // namespace

void CopyRates::Add(const GpuRecord& r) {
  if (r.kind != GPU_MEMCPY || r.bytes < kMinRateBytes || r.end <= r.start) return;
  if (r.copy_kind != COPY_H2D && r.copy_kind != COPY_D2H) return;
  MemKind host = r.copy_kind == COPY_H2D ? r.src_kind : r.dst_kind;
  auto add = [&](CopyRate& rate) {
    rate.bytes += r.bytes;
    rate.ns += r.end - r.start;
  };
  if (host == MEM_PINNED) add(pinned);
  if (r.copy_kind == COPY_D2H) {
    add(d2h);
    if (host == MEM_PINNED) add(d2h_pinned);
  }
}

void CopyRates::MergeFrom(const CopyRates& other) {
  for (auto [into, from] :
       {std::pair{&pinned, &other.pinned}, std::pair{&d2h_pinned, &other.d2h_pinned},
        std::pair{&d2h, &other.d2h}}) {
    into->bytes += from->bytes;
    into->ns += from->ns;
  }
}

Saving EstimateSaving(Cause cause, Ns idle_ns, const CauseTotals& totals, const CopyRates& rates,
                      const DeviceWork& work) {
  return kSavingRules[Index(cause)](idle_ns, totals, rates, work);
}

void JobSaving::AddDevice(const Saving& s) {
  gpu_ns_ += s.ns;
  const Ns shrink = s.ns + s.busy_ns;
  job_ns_ = devices_ == 0 ? shrink : std::min(job_ns_, shrink);
  ++devices_;
}

}  // namespace idlescope
