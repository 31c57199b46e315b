// A shard's summary (proto/summary.proto, Summary): what the analysis of one shard hands the
// merge, written by the map (map.h) and read back by the merge (merge.h). The conversions between
// the stages' state and the messages live here, both ways, so that a field added to one side is
// seen next to the other.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "analyzer/analysis/blame.h"
#include "analyzer/analysis/cross_rank.h"
#include "analyzer/analysis/device_result.h"
#include "analyzer/analysis/host_activity.h"
#include "analyzer/analysis/part_results.h"
#include "analyzer/analysis/startup.h"
#include "analyzer/model/symbol_source.h"
#include "analyzer/shard/summary_file.h"
#include "google/protobuf/arena.h"
#include "summary.pb.h"

namespace idlescope {

// A CrossRankBatch made or read one at a time in an arena, emptied for the next: a message on the
// heap frees each record's oneof member when it is cleared and allocates it again for the next
// record (a malloc and a free per record, some 4% of a map's time); an arena frees its few
// blocks once per batch.
class CrossRankBatchArena {
 public:
  CrossRankBatchArena() : arena_(std::make_unique<google::protobuf::Arena>()) { Clear(); }
  shard::CrossRankBatch& operator*() const { return *batch_; }
  shard::CrossRankBatch* operator->() const { return batch_; }
  // An empty batch in place of the last, whose memory goes.
  void Clear() {
    arena_->Reset();
    batch_ = google::protobuf::Arena::CreateMessage<shard::CrossRankBatch>(arena_.get());
  }

 private:
  std::unique_ptr<google::protobuf::Arena> arena_;  // a pointer: a replay is moved into place
  shard::CrossRankBatch* batch_ = nullptr;
};

// The cross-rank records of a shard's analysis, in the order it made them, as CrossRankBatch
// messages of at most kRecordsPerBatch records. Activity of threads that never call a collective
// is left out (CallingThreads: no wait can be blamed on it); held activity goes out at the
// thread's first call, before it, as the live stages would see it.
class CrossRankRecorder : public CrossRankSink {
 public:
  // The merge holds one parsed batch of every shard at once.
  static constexpr int kRecordsPerBatch = 256;

  // Each full batch goes to `writer` (summary_file.h) as it is made: the map's memory stays
  // bounded however long the job. Without one they are kept (TakeBatches).
  explicit CrossRankRecorder(SummaryWriter* writer = nullptr) : writer_(writer) {}

  void Arrival(const CollectiveArrival& a) override;
  void Activity(const RankActivity& a) override;
  void NcclKernel(int32_t rank, Interval when) override;
  void Snapshot(int32_t rank, uint32_t process, uint32_t tid, Interval copy) override;
  void AdvanceTo(Ns t) override { at_ = std::max(at_, t); }

  // Closes the last batch; the batches kept (none with a writer). Errors: the writer's.
  absl::StatusOr<std::vector<std::string>> Finish();
  uint64_t records() const { return records_; }
  // The (process, id) of the stacks and objects the activity records name: the summary resolves
  // them.
  const absl::flat_hash_set<EvidenceKey>& stacks() const { return stacks_; }
  const absl::flat_hash_set<EvidenceKey>& objects() const { return objects_; }

 private:
  shard::CrossRankRecord* Add();
  void CloseBatch();
  void WriteActivity(const RankActivity& a, shard::Activity* out);

  SummaryWriter* writer_;
  absl::Status status_;
  absl::flat_hash_set<EvidenceKey> stacks_, objects_;

  Ns at_ = 0;
  Ns batch_at_ = 0;  // the `at` of the batch's last record
  CallingThreads callers_;
  CrossRankBatchArena batch_;
  std::vector<std::string> batches_;
  uint64_t records_ = 0;
};

// Replays one summary's cross-rank records in order, a batch at a time.
class CrossRankReplay {
 public:
  explicit CrossRankReplay(const SummaryFile& summary) : summary_(summary) { Load(); }
  bool done() const { return next_ >= batch_->records_size(); }
  Ns at() const { return at_; }
  // Hands the next record to `sink` and moves on. A record naming a process past `processes`
  // (LimitProcesses) is not handed on: the summary is corrupt.
  void Next(CrossRankSink& sink);
  void LimitProcesses(uint32_t processes) { processes_ = processes; }
  bool corrupt() const { return corrupt_; }

 private:
  void Load();
  void Hand(const shard::CrossRankRecord& r, Ns at, CrossRankSink& sink);
  const SummaryFile& summary_;
  size_t batch_index_ = 0;
  int next_ = 0;
  Ns at_ = 0;  // of the next record
  uint32_t processes_ = ~uint32_t{0};
  bool corrupt_ = false;
  CrossRankBatchArena batch_;
};

// The summary of a shard's analysis: its part of the job (`part`, analysis/part_results.h) and
// the symbols its ids name, but its cross-rank records (the recorder's, whose stacks and objects
// it resolves too). `symbols` resolves the ids (the shard's reader's tables).
shard::Summary Summarize(const PartResults& part, const CrossRankRecorder& cross_rank,
                         const SymbolSource& symbols, const shard::Shard& shard,
                         uint32_t shard_index, bool python_frames);

// Back: the part a summary carries. `processes`: the job's processes, in the plan's numbering
// (what a summary names outside it is left out; shard/merge.cc checks summaries first).
PartResults PartOf(const shard::Summary& summary, const std::vector<ProcessInfo>& processes,
                   size_t top_evidence);
// OK when `s` was written with this idlescope's list of causes (Summary.causes), which its
// by-cause fields follow; else the one-line error the merge gives.
absl::Status CheckCauses(const shard::Summary& s);
HostClock FromMessage(const shard::HostClock& m);

// The strings and stacks of every summary, by (process, id): what the merge resolves evidence
// with. The summaries must outlive it.
class SummarySymbols : public SymbolSource {
 public:
  void Add(const shard::Summary& summary);
  std::string String(uint32_t process, uint64_t id) const override;
  std::vector<SymbolFrame> Stack(uint32_t process, uint64_t stack_id) const override;
  std::vector<SymbolFrame> NativeStack(uint32_t process, uint64_t stack_id) const override;

 private:
  struct StoredStack {
    const shard::Symbols* table;
    const shard::SymbolStack* stack;
  };
  std::vector<SymbolFrame> Frames(uint32_t process, uint64_t stack_id) const;
  absl::flat_hash_map<EvidenceKey, std::string_view> strings_;
  absl::flat_hash_map<EvidenceKey, StoredStack> stacks_;
};

}  // namespace idlescope
