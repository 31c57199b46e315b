// What the analysis of one part of a job tells the cross-rank stages (collectives, blame across
// ranks), and those stages fed live. The per-device stages need only the processes that drive a
// device (docs/attribution.md, "Devices"); matching collectives across ranks and blaming the last
// arriver need every rank. So JobAnalysis hands the records those two stages read to a
// CrossRankSink: in one process the live stages (CrossRank); when the job is analyzed in shards
// (analyzer/shard/), a recorder that writes them into the shard's summary, and the merge replays
// every shard's records into one CrossRank in time order.
//
// Every call carries the analysis window's position (`at`, from AdvanceTo): the order a replay of
// several shards follows.
#pragma once

#include <cstdint>

#include "analyzer/analysis/attribution.h"
#include "analyzer/analysis/blame.h"
#include "analyzer/analysis/collective_stats.h"
#include "analyzer/analysis/collectives.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

// An NCCL collective call of a rank (Collectives::Note's arguments).
struct CollectiveArrival {
  uint64_t comm = 0;
  uint64_t seq = 0;
  int32_t nranks = 0;
  int32_t nccl_rank = -1;
  int32_t job_rank = -1;
  Ns arrival = 0;
  uint32_t process = 0;
  uint32_t tid = 0;
  NcclOp op = NCCL_OP_UNSPECIFIED;
  uint64_t bytes = 0;    // what the rank sends
  bool grouped = false;  // called inside an NCCL group
};

class CrossRankSink {
 public:
  virtual ~CrossRankSink() = default;
  virtual void Arrival(const CollectiveArrival& a) = 0;
  // A host candidate of a rank's process (only those RankBlame::Wants).
  virtual void Activity(const RankActivity& a) = 0;
  virtual void NcclKernel(int32_t rank, Interval when) = 0;
  // The copy `copy` of thread (process, tid) of `rank` was a checkpoint snapshot.
  virtual void Snapshot(int32_t rank, uint32_t process, uint32_t tid, Interval copy) = 0;
  // Every record before `t` was handed over.
  virtual void AdvanceTo(Ns t) = 0;
};

// The cross-rank stages, fed live.
class CrossRank : public CrossRankSink {
 public:
  void Arrival(const CollectiveArrival& a) override;
  void Activity(const RankActivity& a) override { blame_.Note(a); }
  void NcclKernel(int32_t rank, Interval when) override {
    blame_.NoteNcclKernel(rank, when);
    stats_.Kernel(rank, when);
  }
  void Snapshot(int32_t rank, uint32_t process, uint32_t tid, Interval copy) override {
    blame_.MarkSnapshot(rank, process, tid, copy);
  }
  void AdvanceTo(Ns t) override {
    collectives_.Expire(t);
    blame_.Resolve(t);
    stats_.Expire(t);
  }
  // The end of the job: what is still open is incomplete, every wait is resolved.
  void Finish();

  const Collectives& collectives() const { return collectives_; }
  const RankBlame& blame() const { return blame_; }
  const CollectiveStats& stats() const { return stats_; }

 private:
  Collectives collectives_;
  RankBlame blame_;
  CollectiveStats stats_;
};

}  // namespace idlescope
