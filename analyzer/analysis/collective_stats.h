// The per-collective view (docs/attribution.md, "Collectives"): each matched collective's ranks,
// when each called it (its arrival) and when its NCCL kernel ran, the rank that arrived last,
// how long each other rank waited (Collectives' waits), and the collective's own transfer time:
// the shortest of its ranks' kernels, which waited for nobody (the last arriver's; TraceLens's
// choice). Aggregated per communicator and operation, with the data moved and the bus bandwidth
// as nccl-tests defines it; the collectives the ranks waited longest at are kept whole.
//
// Kernels are paired with their rank's calls in call order (a rank's collectives on a
// communicator run on its stream in the order it called them). A rank that called inside an NCCL
// group, which launches one kernel for several calls, is not paired from then on: its collectives
// have no kernel, and those are not timed. Memory is bounded: a collective whose kernels have not
// all come kCollectiveHorizon after its last arrival is closed with those it has.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "analyzer/analysis/collectives.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/job_report.h"

namespace idlescope {

// The factor nccl-tests multiplies a collective's algorithm bandwidth by to get its bus
// bandwidth, and the size S it divides by the time, from the bytes a rank sends
// (Event.bytes: an AllGather sends its count, a ReduceScatter nranks x its count).
double BusFactor(NcclOp op, int32_t nranks);
uint64_t CollectiveSize(NcclOp op, uint64_t bytes_sent, int32_t nranks);

class CollectiveStats {
 public:
  // A rank called a collective (Collectives::Note's arguments, with the operation, the bytes the
  // rank sends and whether it called inside a group).
  void Call(int32_t rank, uint64_t comm, uint64_t seq, NcclOp op, uint64_t bytes, bool grouped);
  // An NCCL kernel of `rank` (job rank), in its time order.
  void Kernel(int32_t rank, Interval when);
  // Collectives resolved (every rank arrived): their arrivals and waits.
  void Resolved(const ResolvedCollective& c);
  // Closes what waited for kernels longer than kCollectiveHorizon; Finish: everything.
  void Expire(Ns t);
  void Finish();

  // Per communicator and operation, by communicator then operation.
  std::vector<CollectiveReport> Summaries() const;
  // The `n` collectives whose ranks waited longest (ties: the earlier), times since `job_start`.
  std::vector<CollectiveDetail> Slowest(size_t n, Ns job_start) const;

 private:
  struct Member {
    int32_t rank = -1;
    Ns arrival = 0;
    Ns waited = 0;
    Interval kernel{-1, -1};  // none yet
  };
  struct Open {
    NcclOp op = NCCL_OP_UNSPECIFIED;
    uint64_t bytes = 0;  // the most a rank sends
    int32_t last = -1;
    Ns last_arrival = 0;
    bool resolved = false;
    std::vector<Member> members;
    size_t kernels = 0;
  };
  struct Totals {
    int32_t nranks = 0;
    uint64_t collectives = 0;
    uint64_t size_bytes = 0;
    uint64_t timed = 0;
    uint64_t timed_size_bytes = 0;
    Ns transfer_ns = 0;
    Ns waited_ns = 0;
    std::map<int32_t, uint64_t> last_arrivals;  // by rank
  };
  using Key = std::pair<uint64_t, uint64_t>;  // (comm, seq)
  void Close(const Key& key, Open& c);
  Open& At(const Key& key) { return open_[key]; }

  absl::flat_hash_map<Key, Open> open_;
  // Per rank, its calls whose kernels have not come yet, in call order.
  absl::flat_hash_map<int32_t, std::deque<Key>> calls_;
  absl::flat_hash_set<int32_t> grouped_;               // ranks no longer paired
  std::map<std::pair<uint64_t, int>, Totals> totals_;  // (comm, op)
  std::vector<CollectiveDetail> slowest_;              // the kSlowestKept longest waits, unordered
  Ns slowest_floor_ = 0;
};

}  // namespace idlescope
