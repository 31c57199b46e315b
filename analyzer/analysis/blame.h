// Blame across ranks (docs/attribution.md, "Blame across ranks"): a rank that waits at a
// collective for the rank that called it last waits for whatever that rank did instead. Each wait
// (Collectives::waits: the waiting rank, the last arriver, the interval from the waiter's call to
// the last arrival) counts where the waiting rank's GPU sat in NCCL kernels meanwhile (its GPU
// waited; a host that only ran ahead of its GPU did not), and that time is credited to what the
// last arriver's calling thread did then: its candidates (checkpoint writes, data loading and
// waits for its workers, pageable copies, installers, ...), each for the part it covers. Other
// threads' activity did not delay the call (a background checkpoint writer); a sync means the
// thread waited for its own GPU. What no candidate covers is the last arriver's own GPU work or
// untraced host work (a straggler by compute).
//
// The last arriver's activity is taken when the wait is known (its calls before its late arrival
// came before it in its own trace); the waiting rank's NCCL kernels arrive later (GPU records
// lag), so a wait is resolved once the analysis has moved past it (Resolve). Memory is bounded:
// each rank's recent candidates and NCCL kernels (kBlameHorizon, at most kMaxRankActivity), and
// the waits not yet resolved.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "analyzer/analysis/attribution.h"
#include "analyzer/analysis/collectives.h"
#include "analyzer/model/causes.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

inline constexpr Ns kBlameHorizon = 30'000'000'000;  // 30 s, as kCollectiveHorizon
inline constexpr size_t kMaxRankActivity = 4096;

// What a rank's thread did: one of its host candidates, as blame keeps it.
struct RankActivity {
  int32_t rank = -1;
  Interval when;
  Cause cause = Cause::kUnknown;
  uint32_t process = 0;
  uint32_t tid = 0;
  uint64_t stack = 0;  // per-process ids, as Candidate's
  uint64_t object = 0;
};

// The threads that called a collective: only a collective's calling thread can have made the
// others wait for it (RankBlame::Wait), so only their activity is kept. A thread's activity
// before its first call is held (its last kBlameHorizon, at most kMaxRankActivity) and handed on
// at that call. The same filter runs where the records are written for a later merge
// (analyzer/shard/), so the merge keeps what one process would.
class CallingThreads {
 public:
  // Whether `a` is a calling thread's (hand it on now); false: held.
  bool Offer(const RankActivity& a);
  // Thread (process, tid) called a collective: its held activity, to hand on before the call.
  std::vector<RankActivity> Called(uint32_t process, uint32_t tid);

 private:
  absl::flat_hash_set<uint64_t> callers_;                         // ThreadKey
  absl::flat_hash_map<uint64_t, std::deque<RankActivity>> held_;  // by ThreadKey
};

class RankBlame {
 public:
  // What the last arriver's activity explains of the other ranks' waits, for one cause.
  struct Blamed {
    Ns ns = 0;                         // summed over the waits
    absl::btree_set<int32_t> waiters;  // the ranks that waited
    TopEvidence stacks{64};            // the last arriver's candidates, by the wait they cover
    TopEvidence objects{64};
  };
  // The last arriver's blame: by cause, and the waits none of its activity covers.
  struct Straggler {
    std::array<Blamed, kCauseCount> causes;
    Ns unexplained_ns = 0;
    absl::btree_set<int32_t> waiters;
  };

  // Whether a host candidate `c` of a process of job rank `rank` can be what the others waited
  // for: not GPU activity, not communication itself, not of a process without a rank.
  static bool Wants(int32_t rank, const Candidate& c) {
    return rank >= 0 && !c.gpu_side && c.cause != Cause::kCommunication && c.when.length() > 0;
  }
  static RankActivity ActivityOf(int32_t rank, const Candidate& c) {
    return {rank, c.when, c.cause, c.process, c.tid, c.stack, c.object};
  }
  // A host candidate of a rank's process (one that Wants).
  void Note(const RankActivity& a);
  // Thread (process, tid) of `rank` called a collective (before Collectives sees the call).
  void NoteCaller(uint32_t process, uint32_t tid);
  // An NCCL kernel on a device of job rank `rank`.
  void NoteNcclKernel(int32_t rank, Interval when);
  // A rank's wait for the last arriver.
  void Wait(const CollectiveWait& wait);
  // The copy `copy` of thread (process, tid) of `rank` was a checkpoint snapshot (snapshots.h):
  // waits see checkpointing, those not resolved yet too (an asynchronous checkpoint's copy is
  // known as its snapshot only once the writer thread wrote half of it, often after the wait).
  void MarkSnapshot(int32_t rank, uint32_t process, uint32_t tid, Interval copy);
  // Resolves the waits that ended before `until` (everything when `until` is the job's end).
  void Resolve(Ns until);

  const absl::flat_hash_map<int32_t, Straggler>& stragglers() const { return stragglers_; }
  // How long `waiter`'s GPU waited for ranks doing `cause`: what fixing that cause saves it.
  Ns WaitedFor(int32_t waiter, Cause cause) const {
    auto it = waited_.find(waiter);
    return it == waited_.end() ? 0 : it->second[Index(cause)];
  }

 private:
  using Activity = RankActivity;
  struct Pending {
    CollectiveWait wait;
    std::vector<Activity> activity;   // the last arriver's, clipped to the wait
    std::vector<Interval> unclipped;  // each one's own interval (MarkSnapshot finds it by it)
  };
  void ResolveOne(const Pending& p);
  void Keep(const RankActivity& a);

  CallingThreads callers_;

  absl::flat_hash_map<int32_t, std::deque<Activity>> recent_;  // by rank, in arrival order
  absl::flat_hash_map<int32_t, std::deque<Interval>> nccl_;    // by rank, in arrival order
  std::deque<Pending> pending_;                                // by wait end
  absl::flat_hash_map<int32_t, Straggler> stragglers_;
  absl::flat_hash_map<int32_t, std::array<Ns, kCauseCount>> waited_;  // by waiter, by cause
};

}  // namespace idlescope
