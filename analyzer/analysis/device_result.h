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
  uint64_t launches = 0;                        // kernel launches seen on the host side
  std::array<CauseTotals, kCauseCount> causes;  // its credited idle time
  // Its timeline was finished at `finished_at`; when the job ended later (a job analyzed in
  // shards learns its end only from all of them), what lies between is its last gap's.
  Ns finished_at = 0;
  bool has_last_gap = false;  // its last gap (tail, or whole span) was attributed: `last_gap`
  ClosedGap last_gap;         // (device: its index among the results)
};

// Devices visible on a host that no process used (JobDevices::UnusedVisible), by host.
using UnusedVisibleByHost = absl::flat_hash_map<std::string, uint32_t>;

}  // namespace idlescope
