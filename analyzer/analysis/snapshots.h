// Checkpoint snapshots (docs/attribution.md, "Checkpoint snapshots"): torch.save and any
// synchronous checkpoint first copy the weights to host memory, then write them. Per host thread,
// SnapshotRuns keeps the run of device-to-host copies (and the syncs after them) since the
// thread's last kernel launch; a model-file write of the same thread that starts at most
// kSnapshotWindow after the run's last copy ends, with no launch in between, makes those copies
// snapshot copies: cause checkpointing, their bytes not written bytes. The write is seen after
// the copies (it starts after they return), so the copies may already be credited: the analysis
// then moves their slices (crediting's ReclassifySnapshot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/analysis/attribution.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

inline constexpr Ns kSnapshotWindow = 1'000'000'000;  // 1 s
// Copies a run keeps (the newest).
inline constexpr size_t kMaxSnapshotRun = 64;

// `c` is the candidate of the copy (or sync) `copy` of thread (process, tid), not yet made a
// snapshot: what a checkpoint write turns into one.
bool IsSnapshotCopy(const Candidate& c, uint32_t process, uint32_t tid, Interval copy);
// Makes `c` a snapshot copy: checkpointing, not a pageable transfer.
void MakeSnapshot(Candidate& c);

class SnapshotRuns {
 public:
  // A candidate of a host thread. A device-to-host copy, or a sync after one, joins the thread's
  // run; a checkpoint write ends it and returns true with the run's copies in `*snapshots` when
  // they were its snapshot. Anything else returns false.
  bool Note(const Candidate& c, std::vector<Interval>* snapshots);
  // A kernel launch of the thread ends its run: what follows is training, not a snapshot.
  void EndRun(uint32_t process, uint32_t tid) {
    if (!runs_.empty()) runs_.erase(Key(process, tid));
  }
  // `c` may still turn out to be a snapshot copy: a host device-to-host copy, or a sync of a
  // thread with a run (their credits are remembered for that).
  bool MayBecomeSnapshot(const Candidate& c) const;

 private:
  struct Run {
    std::vector<Interval> copies;  // at most kMaxSnapshotRun, the newest
    Ns last_end = 0;
  };
  static uint64_t Key(uint32_t process, uint32_t tid) { return (uint64_t{process} << 32) | tid; }
  absl::flat_hash_map<uint64_t, Run> runs_;  // by thread
};

}  // namespace idlescope
