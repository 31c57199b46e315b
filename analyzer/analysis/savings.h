// Estimated savings (docs/attribution.md, "The numbers"): for each cause, the GPU-seconds of idle
// time its fix would remove, and how that was computed. One rule per cause (kSavingRules); the
// bandwidths come from the job's own GPU copies where it has them.
#pragma once

#include <cstdint>

#include "analyzer/analysis/crediting.h"
#include "analyzer/model/causes.h"
#include "analyzer/model/findings.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

// Pinned host<->device bandwidth assumed when the trace has no large pinned copy to measure
// (PCIe 4 x16 in practice).
inline constexpr double kDefaultPinnedBytesPerNs = 12.0;  // 12 GB/s
// Copies smaller than this measure latency, not bandwidth (a 4-byte loss read-back into pinned
// memory takes ~2 us on an H200: 0.002 GB/s), and are left out of the measured rates.
inline constexpr uint64_t kMinRateBytes = 1 << 20;

struct CopyRate {
  uint64_t bytes = 0;
  Ns ns = 0;
  double BytesPerNs() const {
    return ns > 0 ? static_cast<double>(bytes) / static_cast<double>(ns) : 0;
  }
};

// GPU-side bandwidth of host<->device copies (CUPTI GPU_MEMCPY: bytes over the copy's own
// duration on the device). The host's blocked time is not used: a synchronous copy also waits for
// the kernels queued before it (a copy after a step of kernels "ran" at 0.1 GB/s).
struct CopyRates {
  CopyRate pinned;      // H2D and D2H with a pinned host side
  CopyRate d2h_pinned;  // D2H into pinned memory
  CopyRate d2h;         // D2H, any host memory
  void Add(const GpuRecord& record);
};

struct Saving {
  Ns ns = 0;
  SavingBasis basis;
};

// The saving of `idle_ns` of `cause`, from what it was spent in and the job's copy rates.
Saving EstimateSaving(Cause cause, Ns idle_ns, const CauseTotals& totals, const CopyRates& rates);

}  // namespace idlescope
