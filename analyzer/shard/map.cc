#include "analyzer/shard/map.h"

#include <algorithm>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "analyzer/analysis/job_analysis.h"
#include "analyzer/shard/integrity.h"
#include "analyzer/shard/plan.h"
#include "analyzer/shard/summary.h"

namespace idlescope {
namespace {

// Counts the records the analysis is handed, and tells `tick` how far the reader is every 4096.
class TickSink : public RecordSink {
 public:
  TickSink(const JobReader& reader, const MapTick& tick) : reader_(reader), tick_(tick) {}
  ~TickSink() override { Flush(); }
  void AddProcess(uint32_t, const ProcessInfo&) override {}
  void AddHostEvent(const HostEvent&) override { Count(); }
  void AddGpuRecord(const GpuRecord&) override { Count(); }
  void Flush() {
    const uint64_t read = reader_.BytesRead();
    if (records_ > 0 || read > reported_) tick_(read - reported_, records_);
    reported_ = read;
    records_ = 0;
  }

 private:
  void Count() {
    if (++records_ == 4096) Flush();
  }
  const JobReader& reader_;
  const MapTick& tick_;
  uint64_t reported_ = 0;
  uint64_t records_ = 0;
};

// Not a host name (a NUL is never part of one).
constexpr std::string_view kAbsentHost{"\0absent", 7};

}  // namespace

absl::StatusOr<MapStats> MapShard(const shard::Plan& plan, uint32_t index, const std::string& path,
                                  const MapTick& tick) {
  absl::StatusOr<std::unique_ptr<SummaryWriter>> writer = SummaryWriter::Create(path);
  if (!writer.ok()) return writer.status();
  return MapShard(plan, index, **writer, tick);
}

absl::StatusOr<MapStats> MapShard(const shard::Plan& plan, uint32_t index, SummaryWriter& writer,
                                  const MapTick& tick) {
  if (absl::Status s = CheckPlan(plan); !s.ok()) return s;
  if (index >= static_cast<uint32_t>(plan.shards_size())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("no shard %u in the plan (it has %d)", index, plan.shards_size()));
  }
  const shard::Shard& shard = plan.shards(static_cast<int>(index));
  const uint32_t n = static_cast<uint32_t>(plan.files_size());
  std::vector<ProcessRole> roles(n, ProcessRole::kAbsent);
  for (uint32_t i : shard.owned()) {
    if (i < n) roles[i] = ProcessRole::kOwned;
  }
  for (uint32_t i : shard.guests()) {
    if (i < n && roles[i] == ProcessRole::kAbsent) roles[i] = ProcessRole::kGuest;
  }
  std::vector<PlannedInput> inputs;
  for (uint32_t i = 0; i < n; ++i) {
    if (roles[i] == ProcessRole::kAbsent) continue;
    const shard::PlannedFile& f = plan.files(static_cast<int>(i));
    inputs.push_back(
        {.path = f.path(), .process = i, .offset = f.offset(), .start = f.process().start()});
  }
  if (inputs.empty()) return absl::InvalidArgumentError("the shard has no file");
  // Each file must be the one indexed (integrity.h): its content before it is read, its size and
  // time once read (a file changed meanwhile).
  auto check_files = [&](bool content) -> absl::Status {
    for (const PlannedInput& input : inputs) {
      const shard::PlannedFile& f = plan.files(static_cast<int>(input.process));
      if (!f.has_identity()) continue;
      if (absl::Status s = CheckIdentity(f.path(), f.identity(), content); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
  if (absl::Status s = check_files(true); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<JobReader>> reader = JobReader::OpenPlanned(inputs);
  if (!reader.ok()) return reader.status();

  const AnalysisOptions options = ToAnalysisOptions(plan.options());
  JobAnalysis analysis(options);
  analysis.SetRoles(roles);
  CrossRankRecorder cross_rank(&writer);
  analysis.SetCrossRankSink(&cross_rank);
  analysis.ReserveProcesses(n);
  // Every process of the job in the plan's order, so that ids are the job's. A process the shard
  // does not read relates to none it reads through a family (the plan put such processes
  // together, or made them guests), so it only holds its place: its start (the job's start is the
  // earliest), a host no process has, and how it ended (a rank that died explains every device's
  // time after its death: analysis/deaths.h).
  for (uint32_t i = 0; i < n; ++i) {
    const shard::PlannedFile& f = plan.files(static_cast<int>(i));
    if (roles[i] != ProcessRole::kAbsent) {
      analysis.AddProcess(i, ToProcessInfo(f.process(), f.path()));
    } else {
      ProcessInfo placeholder;
      placeholder.host = kAbsentHost;
      placeholder.start = f.process().start();
      placeholder.pid = f.process().pid();
      placeholder.rank = f.process().rank();
      placeholder.ending = ToProcessInfo(f.process(), f.path()).ending;
      analysis.AddProcess(i, placeholder);
    }
  }
  // Every process's socket addresses, read or not: a socket's other end may be another shard's.
  for (uint32_t i = 0; i < n; ++i) {
    for (const std::string& key : plan.files(static_cast<int>(i)).sockets()) {
      analysis.AddSocketAddress(i, key);
    }
  }
  ReadOptions read;
  read.reorder_window = plan.options().reorder_window();
  read.align_clocks = false;
  if (tick) {
    TickSink ticks(**reader, tick);
    TeeSink tee({&analysis, &ticks});
    (*reader)->Run(tee, read);
  } else {
    (*reader)->Run(analysis, read);
  }
  analysis.Finish(std::max(analysis.End(), plan.job_end_hint()));
  if (absl::Status s = check_files(false); !s.ok()) return s;
  JobSymbols symbols = (*reader)->TakeSymbols();
  if (absl::StatusOr<std::vector<std::string>> kept = cross_rank.Finish(); !kept.ok()) {
    return kept.status();
  }
  shard::Summary summary = Summarize(analysis.TakeResults(), cross_rank, symbols, shard, index,
                                     plan.options().python_frames());
  summary.set_job(plan.job());
  absl::Status written = writer.Finish(summary);
  if (!written.ok()) return written;
  MapStats stats;
  stats.read = (*reader)->stats();
  stats.cross_rank_records = cross_rank.records();
  stats.summary_bytes = writer.bytes();
  return stats;
}

}  // namespace idlescope
