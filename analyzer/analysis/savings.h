// Estimated savings (docs/attribution.md, "The numbers"): for each cause, what its fix would
// remove from each used device's timeline (idle time, and for a larger batch the compute time of
// the kernels that did not fill the GPU), and how that was computed. One rule per saving method;
// each cause names its method in model/causes.def (`saving`). The bandwidths come from the job's
// own GPU copies where it has them. The job's figures (JobSavings) are the sum over devices (GPU
// time) and what the job's span becomes when every device's timeline shrinks so: it ends when the
// last device does.
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
  void MergeFrom(const CopyRates& other);
};

// What a used device did besides being idle, for the rules that need it.
struct DeviceWork {
  Ns compute_ns = 0;             // busy with compute kernels
  Ns collective_wait_ns = 0;     // its rank's host waits for the last arriver of its collectives
  Ns small_kernel_ns = 0;        // summed durations of the kernels with fewer blocks than SMs
  double small_kernel_fill = 0;  // their mean blocks / SM count (0: unknown)
  double memory_headroom = 0;    // device memory / peak use (0: unknown)
};

// A larger batch multiplies the work per kernel by at most this much (what the rule assumes when
// the memory use is unknown, and the most it claims otherwise).
inline constexpr double kMaxBatchGrowth = 64;

struct Saving {
  Ns ns = 0;       // idle time removed
  Ns busy_ns = 0;  // compute time removed too (small_batch: fewer, fuller kernels per sample)
  SavingBasis basis = {};
};

// The saving of `idle_ns` of `cause` on one device (or a job's totals), from what it was spent
// in, what the device did, and the job's copy rates.
Saving EstimateSaving(Cause cause, Ns idle_ns, const CauseTotals& totals, const CopyRates& rates,
                      const DeviceWork& work);

// The savings of one cause over the job's used devices.
class JobSaving {
 public:
  // One used device's saving of the cause (zero when the cause took none of its time).
  void AddDevice(const Saving& s);
  // The GPU time removed: the sum over devices.
  Ns gpu_ns() const { return gpu_ns_; }
  // How much sooner the job would end: the least that any used device's timeline shrinks (the
  // job ends when its last device does; a device whose time the cause did not take keeps it).
  Ns job_ns() const { return devices_ > 0 ? job_ns_ : 0; }

 private:
  Ns gpu_ns_ = 0;
  Ns job_ns_ = 0;
  size_t devices_ = 0;
};

}  // namespace idlescope
