// JobReader: the "read" stage. Opens the trace files of a job (one per process, of all ranks and
// hosts), merges them by time and hands plain records (model/job_model.h) to a RecordSink
// (model/record_sink.h): the analysis, or a tee of the analysis and other consumers. It knows
// nothing of what the sink does with them.
//
// Memory and open files stay bounded: a file is opened when the merge reaches its process's start
// and closed, its buffers freed, when it ends; while open it holds one decoded packet (a k-way
// merge on the packets' first timestamps) and a read buffer. Past the open-file budget (from
// RLIMIT_NOFILE) the file used longest ago is suspended: closed, to be reopened where it was.
// Each file's interned tables (strings, frames, stacks) stay to resolve the report's evidence:
// they grow with the program's distinct paths and call sites, not with the trace length. The
// analysis window trails the merge frontier by `reorder_window`, because a file's packets are only
// nearly time-ordered: CUPTI delivers GPU records in buffers, after the host events of the same
// time.
//
// Clocks: files with the same Header.boot_id share CLOCK_MONOTONIC; other hosts are shifted onto
// the first file's clock through their (monotonic, realtime) snapshots.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/record_sink.h"
#include "analyzer/read/job_symbols.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope {

struct CollectiveEnd;

struct ReadOptions {
  Ns reorder_window = 2'000'000'000;  // 2 s
  // Files held open at once; 0: the soft RLIMIT_NOFILE less a reserve for the rest of the
  // process (at least 8).
  size_t max_open_files = 0;
  // Jobs on several hosts: refine the hosts' REALTIME alignment from the ends of the collectives
  // they share (read/clock_alignment.h).
  bool align_clocks = true;
};

struct ReadStats {
  uint64_t files = 0;
  uint64_t packets = 0;
  uint64_t host_events = 0;
  uint64_t gpu_records = 0;
  uint64_t bytes = 0;
  uint64_t skipped_files = 0;    // in a directory, but empty or not a readable trace
  uint64_t most_open_files = 0;  // trace files open at the same time, at most
  uint64_t suspensions = 0;      // files closed to stay within the budget, reopened later
};

// One trace file of a planned job (analyzer/shard/): its place among the job's processes and its
// clock offset, decided before it is read.
struct PlannedInput {
  std::string path;
  uint32_t process = 0;
  Ns offset = 0;  // added to the file's times to get job-clock times
  Ns start = 0;   // its process's start, job clock
};

// The ends of the first collectives of trace file `path` (at most kAlignmentReadBytes read,
// kAlignmentCollectives kept: read/clock_alignment.h), in the file's own time.
std::vector<CollectiveEnd> ReadCollectiveEnds(const std::string& path);

// The process a trace file's header describes, its times moved onto the job clock by `offset`.
ProcessInfo ProcessInfoOf(const Header& header, Ns offset, const std::string& path);

class JobReader {
 public:
  // `inputs`: trace files and directories (their *.idlescope files). Fails with one line on the
  // first named file that is not a readable trace, or when no readable trace file is found. A
  // file of a directory that is empty or not a readable trace (a process killed before its
  // first flush) is skipped: the report warns about it (WarningKind::kSkippedFile).
  static absl::StatusOr<std::unique_ptr<JobReader>> Open(const std::vector<std::string>& inputs);
  // A part of a planned job: `inputs` in the plan's order. Run delivers their records (numbered
  // and timed as planned), but no processes (the caller adds the plan's) and no host clocks.
  static absl::StatusOr<std::unique_ptr<JobReader>> OpenPlanned(
      const std::vector<PlannedInput>& inputs);
  ~JobReader();

  // Streams every file into `sink` (processes first, then all packets merged by time). Once.
  void Run(RecordSink& sink, const ReadOptions& options);

  const ReadStats& stats() const { return stats_; }
  // For progress while Run streams (a sink may call them): the bytes of complete packets read so
  // far, and the files' sizes when opened.
  uint64_t BytesRead() const;
  uint64_t TotalBytes() const { return total_bytes_; }

  // The files' interned tables, after Run: what the report's evidence is resolved with.
  JobSymbols TakeSymbols() { return std::move(symbols_); }

 private:
  struct File;
  JobReader();
  // The k-way merge of the files' packets into `sink`, then the files' warnings and figures.
  void Merge(RecordSink& sink, const ReadOptions& options);
  void Process(File& file, const Packet& packet, RecordSink& sink);
  // The forked children's files by (boot id, parent pid, pid), for the runs of a worker's threads
  // that its parent's sampler wrote (Event.sampled_pid): they are the worker process's.
  void IndexForkedFiles();
  // The file of the child `pid` forked by `sampler`'s process that had started by `t` (the latest:
  // a pid used again); nullptr when none is read (no trace of it, or another shard's).
  File* WorkerFile(const File& sampler, uint32_t pid, Ns t);
  // The collective ends of the start of `file` (a reader of its own), in its file's time.
  static std::vector<CollectiveEnd> CollectiveEnds(const File& file);

  // The batches every file's reader reuses (TraceFileReader::ShareBatchPool); declared before
  // the files, which use it until they are destroyed.
  BatchPool batch_pool_;
  std::vector<std::unique_ptr<File>> files_;
  bool planned_ = false;
  std::vector<std::pair<std::string, std::string>> skipped_;  // path, why
  ReadStats stats_;
  uint64_t total_bytes_ = 0;
  JobSymbols symbols_;
  absl::flat_hash_map<std::tuple<std::string, uint32_t, uint32_t>, std::vector<File*>> forked_;
};

}  // namespace idlescope
