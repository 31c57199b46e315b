#include "analyzer/analysis/snapshots.h"

#include <algorithm>
#include <utility>

namespace idlescope {

bool IsSnapshotCopy(const Candidate& c, uint32_t process, uint32_t tid, Interval copy) {
  return !c.gpu_side && !c.snapshot && c.process == process && c.tid == tid &&
         c.when.start == copy.start && c.when.end == copy.end &&
         (c.cause == Cause::kHostGpuTransfer || c.cause == Cause::kSynchronization);
}

void MakeSnapshot(Candidate& c) {
  c.cause = Cause::kCheckpointing;
  c.snapshot = true;
  c.pageable = false;
}

bool SnapshotRuns::Note(const Candidate& c, std::vector<Interval>* snapshots) {
  uint64_t thread = Key(c.process, c.tid);
  if (c.d2h || (c.event_class == EventClass::kSync && runs_.contains(thread))) {
    Run& run = runs_[thread];
    // A copy long after the run's last one starts a new run (the old one was no snapshot).
    if (!run.copies.empty() && c.when.start - run.last_end > kSnapshotWindow) run.copies.clear();
    if (run.copies.size() >= kMaxSnapshotRun) run.copies.erase(run.copies.begin());
    run.copies.push_back(c.when);
    run.last_end = std::max(run.last_end, c.when.end);
    return false;
  }
  if (c.event_class != EventClass::kCheckpointWrite) return false;
  auto it = runs_.find(thread);
  if (it == runs_.end()) return false;
  Run run = std::move(it->second);
  runs_.erase(it);
  if (c.when.start < run.last_end || c.when.start - run.last_end > kSnapshotWindow) return false;
  *snapshots = std::move(run.copies);
  return true;
}

bool SnapshotRuns::MayBecomeSnapshot(const Candidate& c) const {
  return !c.gpu_side && !c.snapshot &&
         (c.d2h || (c.event_class == EventClass::kSync && runs_.contains(Key(c.process, c.tid))));
}

}  // namespace idlescope
