// JobReader: the "read" stage. Opens the trace files of a job (one per process, of all ranks and
// hosts), merges them by time and hands plain records (model/job_model.h) to a RecordSink
// (model/record_sink.h): the analysis, or a tee of the analysis and other consumers. It knows
// nothing of what the sink does with them.
//
// Memory stays bounded: one decoded packet per file is held (a k-way merge on the packets' first
// timestamps), plus each file's interned tables (strings, frames, stacks), which grow with the
// program's distinct paths and call sites, not with the trace length. The analysis window trails
// the merge frontier by `reorder_window`, because a file's packets are only nearly time-ordered:
// CUPTI delivers GPU records in buffers, after the host events of the same time.
//
// Clocks: files with the same Header.boot_id share CLOCK_MONOTONIC; other hosts are shifted onto
// the first file's clock through their (monotonic, realtime) snapshots.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/record_sink.h"
#include "analyzer/read/job_symbols.h"

namespace idlescope {

struct ReadOptions {
  Ns reorder_window = 2'000'000'000;  // 2 s
};

struct ReadStats {
  uint64_t files = 0;
  uint64_t packets = 0;
  uint64_t host_events = 0;
  uint64_t gpu_records = 0;
  uint64_t bytes = 0;
};

class JobReader {
 public:
  // `inputs`: trace files and directories (their *.idlescope files). Fails with one line on the
  // first file that is not a readable trace, or when no trace file is found.
  static absl::StatusOr<std::unique_ptr<JobReader>> Open(const std::vector<std::string>& inputs);
  ~JobReader();

  // Streams every file into `sink` (processes first, then all packets merged by time). Once.
  void Run(RecordSink& sink, const ReadOptions& options);

  const ReadStats& stats() const { return stats_; }

  // The files' interned tables, after Run: what the report's evidence is resolved with.
  JobSymbols TakeSymbols() { return std::move(symbols_); }

 private:
  struct File;
  JobReader();
  void Process(File& file, const Packet& packet, RecordSink& sink);

  std::vector<std::unique_ptr<File>> files_;
  ReadStats stats_;
  JobSymbols symbols_;
};

}  // namespace idlescope
