// A job analyzed in shards (docs/architecture.md, "Analysis in shards"), step 3: one shard of a
// plan (plan.h) analyzed into its summary (summary.h). The shard's files are read as planned
// (numbered and timed alike in every shard), every process of the job takes part in the families,
// and the shard's devices are finished no earlier than the plan's end hint.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "analyzer/read/job_reader.h"
#include "analyzer/shard/summary_file.h"
#include "summary.pb.h"

namespace idlescope {

struct MapStats {
  ReadStats read;  // of the files the shard read (its guests' too)
  uint64_t cross_rank_records = 0;
  uint64_t summary_bytes = 0;
};

// Writes the summary of shard `shard` to `path` (summary_file.h: its cross-rank records as they
// are made). Errors (one line): no such shard, a file that cannot be read as planned or is no
// longer the file indexed (integrity.h), the summary that cannot be written.
// `tick`, when given, is called every few thousand records with the bytes read and the records
// handed on since its last call (progress of a long analysis).
using MapTick = std::function<void(uint64_t bytes, uint64_t records)>;
absl::StatusOr<MapStats> MapShard(const shard::Plan& plan, uint32_t shard, const std::string& path,
                                  const MapTick& tick = {});
// The same into `writer` (finished here).
absl::StatusOr<MapStats> MapShard(const shard::Plan& plan, uint32_t shard, SummaryWriter& writer,
                                  const MapTick& tick = {});

}  // namespace idlescope
