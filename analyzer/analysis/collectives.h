// Collectives: NCCL collectives matched across ranks by (communicator, sequence number), to find
// the rank the others waited for (docs/attribution.md, "Waiting for a slower rank").
//
// A collective completes only when every rank has joined, so the rank that called last is the one
// the others waited for. Each other rank's wait counts from its own call, but no earlier than the
// last arrival at the communicator's previous collective: NCCL only enqueues a collective, so a
// fast rank's host may run steps ahead and its calls drift ever earlier; that drift is not
// waiting. Bounded memory: a collective still missing ranks kCollectiveHorizon after its last
// arrival is given up (its ranks' files are not part of the job) and counted.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/model/findings.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

inline constexpr Ns kCollectiveHorizon = 30'000'000'000;  // 30 s

// One rank's wait at a collective for the rank that arrived last.
struct CollectiveWait {
  int32_t waiter = -1;
  int32_t last = -1;
  uint32_t last_process = 0;  // the last arriver's call: its process and thread
  uint32_t last_tid = 0;
  Interval when;  // from the waiter's call (no earlier than the communicator's previous last
                  // arrival) to the last arrival
};

// A collective every rank called: who arrived when, who came last, and each rank's wait.
struct ResolvedCollective {
  uint64_t comm = 0;
  uint64_t seq = 0;
  int32_t last = -1;
  Ns last_arrival = 0;
  struct Member {
    int32_t rank;
    Ns arrival;
    Ns waited;
  };
  std::vector<Member> members;
};

class Collectives {
 public:
  // NCCL rank `nccl_rank` called collective `seq` of communicator `comm` (of `nranks` ranks) at
  // `arrival`, from a process of job rank `job_rank` (-1: unknown). The rank reported is the job
  // rank when known (what users launch), else the NCCL rank. Collectives without a communicator,
  // a sequence number, an NCCL rank or two ranks are not matched.
  // `process` and `tid` name the calling thread (what made a late rank late: blame.h).
  void Note(uint64_t comm, uint64_t seq, int32_t nranks, int32_t nccl_rank, int32_t job_rank,
            Ns arrival, uint32_t process = 0, uint32_t tid = 0);
  // Gives up the collectives whose last arrival is more than kCollectiveHorizon before `t`.
  void Expire(Ns t);
  // The end of the job: what is still open is incomplete.
  void Finish();

  uint64_t matched() const { return matched_; }
  uint64_t incomplete() const { return incomplete_; }
  // The ranks the others waited for, most waited for first (ties: the lower rank), at most
  // `n`, as kStragglerRank findings; none when nothing was waited for.
  std::vector<Finding> Stragglers(size_t n) const;
  // The waits of the collectives resolved since the last call (for blame across ranks).
  std::vector<CollectiveWait>& waits() { return waits_; }
  // The collectives resolved since the last call (for the per-collective view).
  std::vector<ResolvedCollective>& resolved() { return resolved_; }
  // How long `rank` waited, over the matched collectives, for the rank that called last.
  Ns WaitedNs(int32_t rank) const {
    auto it = waited_.find(rank);
    return it == waited_.end() ? 0 : it->second;
  }

 private:
  struct Group {
    int32_t nranks = 0;
    Ns last_arrival = 0;
    struct Member {
      int32_t rank;
      Ns arrival;
      uint32_t process;
      uint32_t tid;
    };
    std::vector<Member> members;
  };
  struct Straggler {
    uint64_t last_arrivals = 0;
    Ns waited_for_ns = 0;  // sum over collectives and the other ranks of their wait for this one
    Ns max_lateness_ns = 0;
  };
  void Resolve(uint64_t comm, uint64_t seq, const Group& group);

  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, Group> groups_;  // in flight
  absl::flat_hash_map<int32_t, Straggler> stragglers_;
  absl::flat_hash_map<int32_t, Ns> waited_;  // by rank: its waits for the last arrivers
  std::vector<CollectiveWait> waits_;
  std::vector<ResolvedCollective> resolved_;
  // Per communicator: the newest resolved collective's seq and its last arrival.
  absl::flat_hash_map<uint64_t, std::pair<uint64_t, Ns>> last_resolved_;
  uint64_t matched_ = 0;
  uint64_t incomplete_ = 0;
};

}  // namespace idlescope
