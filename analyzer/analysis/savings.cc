#include "analyzer/analysis/savings.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace idlescope {
namespace {

using Rule = Saving (*)(Ns idle_ns, const CauseTotals& totals, const CopyRates& rates);

Saving All(Ns idle_ns, const CauseTotals&, const CopyRates&) {
  return {idle_ns, {.method = SavingMethod::kAll}};
}

// A heuristic: overlapping communication with compute hides about half of it in DDP-style jobs;
// doubling the work per kernel halves the launch gaps per sample.
Saving Half(Ns idle_ns, const CauseTotals&, const CopyRates&) {
  return {idle_ns / 2, {.method = SavingMethod::kHalf}};
}

Saving None(Ns, const CauseTotals&, const CopyRates&) { return {}; }

// What the pageable bytes would cost from pinned memory. Not the GPU-side rate of the pageable
// copies: CUPTI's record covers the DMA from the driver's staging buffer (22 us for 1 MiB on an
// H200, whose cudaMemcpy blocked 194 us), not the staging.
Saving PageableAtPinnedRate(Ns, const CauseTotals& acc, const CopyRates& rates) {
  const double pinned = rates.pinned.BytesPerNs();
  const double rate = pinned > 0 ? pinned : kDefaultPinnedBytesPerNs;
  Ns pinned_ns = static_cast<Ns>(acc.pageable_bytes / rate);
  return {std::max<Ns>(0, acc.pageable_ns - pinned_ns),
          {.method = SavingMethod::kPageableAtPinnedRate,
           .rate_bytes_per_ns = rate,
           .rate_source = pinned > 0 ? RateSource::kPinnedCopies : RateSource::kAssumed}};
}

// An asynchronous checkpoint keeps the snapshot: the one measured before the writes, or the one
// their bytes need (a device-to-host copy into pinned memory), whichever is longer.
Saving CheckpointMinusSnapshot(Ns idle_ns, const CauseTotals& acc, const CopyRates& rates) {
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
  return {std::max<Ns>(0, idle_ns - snapshot),
          {.method = SavingMethod::kCheckpointMinusSnapshot,
           .rate_bytes_per_ns = rate,
           .rate_source = source,
           .bytes = bytes,
           .snapshot_ns = acc.snapshot_ns}};
}

// In the order of enum Cause.
constexpr std::array<Rule, kCauseCount> kSavingRules = {
    PageableAtPinnedRate,     // host_gpu_transfer
    Half,                     // communication
    CheckpointMinusSnapshot,  // checkpointing
    All,                      // intermediate_upload: moved to a background thread
    All,                      // data_loading: if loading runs ahead of compute
    All,                      // external_download: downloaded before the job
    All,                      // library_installation: a prebuilt environment
    All,                      // interactive: run as a batch job
    All,                      // synchronization: if the synchronization is not needed
    Half,                     // small_batch
    Half,                     // insufficient_memory
    Half,                     // launch_bound
    None,                     // startup: no specific fix
    All,                      // tail: release the GPU after the last kernel
    None,                     // unknown: no specific fix
    All,                      // unused_gpus: not needed
    All,                      // no_gpu_work: not needed
};

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

Saving EstimateSaving(Cause cause, Ns idle_ns, const CauseTotals& totals, const CopyRates& rates) {
  return kSavingRules[Index(cause)](idle_ns, totals, rates);
}

}  // namespace idlescope
