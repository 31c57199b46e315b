// Checkpoint snapshots (docs/attribution.md, "Checkpoint snapshots"): torch.save and any
// synchronous checkpoint first copy the weights to host memory, then write them. Per host thread,
// SnapshotRuns keeps the run of device-to-host copies (and the syncs after them) since the
// thread's last kernel launch; a model-file write of the same thread that starts at most
// kSnapshotWindow after the run's last copy ends, with no launch in between, makes those copies
// snapshot copies: cause checkpointing, their bytes not written bytes. The write is seen after
// the copies (it starts after they return), so the copies may already be credited: the analysis
// then moves their slices (crediting's ReclassifySnapshot).
//
// An asynchronous checkpoint (torch.distributed.checkpoint.async_save, a background writer) copies
// on the training thread, which then goes on launching, and writes on another thread. A run of at
// least kMinHandOffBytes that a launch ends is handed off to the process's other threads: the
// checkpoint writes of other threads that start at most kSnapshotWindow after its last copy (and
// after no later handed-off run) count towards it, and once they have written half of its bytes
// the run was their snapshot. Threads' events reach the analysis in packets, so the writes may
// arrive before the run is handed off: the newest unmatched ones are kept for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/analysis/attribution.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

inline constexpr Ns kSnapshotWindow = 1'000'000'000;  // 1 s
// Copies a run keeps (the newest).
inline constexpr size_t kMaxSnapshotRun = 64;
// A run handed off to another thread's writes has at least these bytes (not a loss read-back).
inline constexpr uint64_t kMinHandOffBytes = 1 << 20;
// Handed-off runs and unmatched checkpoint writes kept per process (the newest).
inline constexpr size_t kMaxHandOffs = 8;
inline constexpr size_t kMaxPendingWrites = 256;

// `c` is the candidate of the copy (or sync) `copy` of thread (process, tid), not yet made a
// snapshot: what a checkpoint write turns into one.
bool IsSnapshotCopy(const Candidate& c, uint32_t process, uint32_t tid, Interval copy);
// Makes `c` a snapshot copy: checkpointing, not a pageable transfer.
void MakeSnapshot(Candidate& c);

class SnapshotRuns {
 public:
  // A candidate of a host thread. A device-to-host copy, or a sync after one, joins the thread's
  // run; a checkpoint write ends it and returns true with the run's copies in `*snapshots`, and
  // the thread that made them in `*copy_tid`, when they were its snapshot (the write's own
  // thread's run, or a run handed off by another thread). Anything else returns false.
  bool Note(const Candidate& c, std::vector<Interval>* snapshots, uint32_t* copy_tid);
  // A kernel launch of the thread ends its run: what follows is training, not a snapshot of the
  // thread's own writes. A large run is handed off to the process's other threads; true, with
  // the run's copies in `*snapshots`, when writes already seen make it their snapshot.
  bool EndRun(uint32_t process, uint32_t tid, std::vector<Interval>* snapshots);
  // `c` may still turn out to be a snapshot copy: a host device-to-host copy, or a sync of a
  // thread with a run (their credits are remembered for that).
  bool MayBecomeSnapshot(const Candidate& c) const;

 private:
  struct Run {
    std::vector<Interval> copies;  // at most kMaxSnapshotRun, the newest
    Ns last_end = 0;
    uint64_t bytes = 0;  // of its device-to-host copies
  };
  struct HandOff {
    Run run;
    uint32_t tid = 0;      // the thread that made the copies
    uint64_t written = 0;  // bytes of other threads' checkpoint writes since
  };
  struct Write {
    uint32_t tid;
    Interval when;
    uint64_t bytes;
  };
  struct Process {
    std::vector<HandOff> handed;  // by run end, at most kMaxHandOffs
    std::deque<Write> pending;    // unmatched writes, at most kMaxPendingWrites
  };
  bool NoteHandedOff(const Candidate& write, std::vector<Interval>* snapshots, uint32_t* copy_tid);
  // Moves thread `key`'s run to its process's handed-off runs; the index it took there.
  size_t HandOffRun(uint64_t key, Run run, Process& p);
  static uint64_t Key(uint32_t process, uint32_t tid) { return (uint64_t{process} << 32) | tid; }
  absl::flat_hash_map<uint64_t, Run> runs_;        // by thread
  absl::flat_hash_map<uint32_t, Process> handed_;  // by process
};

}  // namespace idlescope
