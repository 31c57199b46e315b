// What the analysis found on one device, once its timeline is finished: the figures the report
// is built from (analysis/report_builder.h). Plain data, so that the same report can be built from
// one process's analysis or from the summaries of a job analyzed in shards (analyzer/shard/),
// each device analyzed in exactly one shard.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/analysis/crediting.h"
#include "analyzer/analysis/timeline.h"
#include "analyzer/model/causes.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

struct DeviceResult {
  std::string id;  // "host/uuid", as JobDevice::id
  std::string host;
  DeviceProps props;
  int32_t rank = -1;           // the rank of the first process that used it
  std::vector<int32_t> ranks;  // the distinct ranks (>= 0) of the processes that used it
  uint32_t processes = 0;      // processes that used it
  Ns compute_ns = 0;           // DeviceTimeline's figures
  Ns comm_ns = 0;
  Ns transfer_ns = 0;
  Ns any_kernel_ns = 0;
  KernelStats kernels;
  uint64_t long_gaps = 0;
  uint64_t short_gaps = 0;
  Ns short_gap_ns = 0;
  Ns short_explained_ns = 0;
  int64_t peak_memory = 0;
  Ns first_kernel = -1;  // -1: it ran no compute kernel
  Ns last_kernel_end = 0;
  uint64_t late_records = 0;
  Ns late_ns = 0;
  uint64_t launches = 0;        // kernel launches seen on the host side
  Ns launcher_cpu_ns = 0;       // its launching threads' sampled CPU time
  uint64_t stretched_gaps = 0;  // gaps between kernels stretched by waits for a CPU
  Ns stretched_ns = 0;          // (Crediting::IsStretchedLaunchGap) and their idle time
  std::array<CauseTotals, kCauseCount> causes;  // its credited idle time
  // Its timeline was finished at `finished_at`; when the job ended later (a job analyzed in
  // shards learns its end only from all of them), what lies between is its last gap's.
  Ns finished_at = 0;
  bool has_last_gap = false;  // its last gap (tail, or whole span) was attributed: `last_gap`
  ClosedGap last_gap;         // (device: its index among the results)
};

// Devices visible on a host that no process used, by host.
using UnusedVisibleByHost = absl::flat_hash_map<std::string, uint32_t>;

// Per host of `processes`: the most devices one of its processes could see (`visible_devices`, by
// process: what its DeviceInfos said) or the distinct CUDA_VISIBLE_DEVICES entries of its
// processes, whichever is more, less the `devices` of the host (every device a process of it
// used). A host whose processes used no device, and could see none, has 0.
UnusedVisibleByHost UnusedVisibleOnHosts(const std::vector<ProcessInfo>& processes,
                                         const std::vector<uint32_t>& visible_devices,
                                         const std::vector<DeviceResult>& devices);

// What the job's end, learnt after device `d` was finished at d.finished_at, does to its last gap
// (a job analyzed in shards learns its end only from all of them; one pass knows it, and nothing
// changes):
//   kNone    the job ended where the device was finished;
//   kExtend  the last gap runs on to the job's end as residual time (ExtendToJobEnd);
//   kRemap   a tail shorter than min_gap where the device was finished is long at the job's end:
//            short and long gaps are attributed differently (docs/attribution.md, "Short gaps"),
//            so the device must be analyzed again up to the job's end.
enum class TailChange { kNone, kExtend, kRemap };
TailChange TailChangeAt(const DeviceResult& d, Ns job_end, Ns min_gap);

// `d`'s last gap runs on to `job_end` (TailChangeAt said kExtend): a new gap where there was none
// (short or long, as the timeline would count it), a short one grown but still short, or the
// attributed last gap extended by residual time (ExtendClosedGap).
void ExtendToJobEnd(DeviceResult& d, Ns job_end, Ns min_gap);

}  // namespace idlescope
