#include "analyzer/analysis/snapshots.h"

#include <algorithm>
#include <cstddef>
#include <limits>
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

bool SnapshotRuns::Note(const Candidate& c, std::vector<Interval>* snapshots, uint32_t* copy_tid) {
  uint64_t thread = Key(c.process, c.tid);
  if (c.d2h || (c.event_class == EventClass::kSync && runs_.contains(thread))) {
    Run& run = runs_[thread];
    // A copy long after the run's last one starts a new run (the old one was no snapshot).
    if (!run.copies.empty() && c.when.start - run.last_end > kSnapshotWindow) {
      run.copies.clear();
      run.bytes = 0;
    }
    if (run.copies.size() >= kMaxSnapshotRun) run.copies.erase(run.copies.begin());
    run.copies.push_back(c.when);
    run.last_end = std::max(run.last_end, c.when.end);
    if (c.d2h) run.bytes += c.bytes;
    return false;
  }
  if (c.event_class != EventClass::kCheckpointWrite) return false;
  auto it = runs_.find(thread);
  if (it == runs_.end()) return NoteHandedOff(c, snapshots, copy_tid);
  Run run = std::move(it->second);
  runs_.erase(it);
  if (c.when.start < run.last_end || c.when.start - run.last_end > kSnapshotWindow) return false;
  *snapshots = std::move(run.copies);
  *copy_tid = c.tid;
  return true;
}

bool SnapshotRuns::EndRun(uint32_t process, uint32_t tid, std::vector<Interval>* snapshots) {
  if (runs_.empty()) return false;
  auto it = runs_.find(Key(process, tid));
  if (it == runs_.end()) return false;
  Run run = std::move(it->second);
  runs_.erase(it);
  if (run.bytes < kMinHandOffBytes) return false;
  Process& p = handed_[process];
  size_t index = HandOffRun(Key(process, tid), std::move(run), p);
  // Writes of other threads that arrived first.
  HandOff& h = p.handed[index];
  const Ns next_end = index + 1 < p.handed.size() ? p.handed[index + 1].run.last_end
                                                  : std::numeric_limits<Ns>::max();
  std::erase_if(p.pending, [&](const Write& w) {
    const Ns start = w.when.start;
    if (w.tid == tid || start < h.run.last_end || start >= next_end ||
        start - h.run.last_end > kSnapshotWindow) {
      return false;
    }
    h.written += w.bytes;
    return true;
  });
  if (2 * h.written < h.run.bytes) return false;
  *snapshots = std::move(h.run.copies);
  p.handed.erase(p.handed.begin() + static_cast<std::ptrdiff_t>(index));
  return true;
}

size_t SnapshotRuns::HandOffRun(uint64_t key, Run run, Process& p) {
  if (p.handed.size() >= kMaxHandOffs) p.handed.erase(p.handed.begin());
  auto at = std::upper_bound(p.handed.begin(), p.handed.end(), run.last_end,
                             [](Ns end, const HandOff& h) { return end < h.run.last_end; });
  at = p.handed.insert(at, {.run = std::move(run), .tid = static_cast<uint32_t>(key)});
  return static_cast<size_t>(at - p.handed.begin());
}

bool SnapshotRuns::NoteHandedOff(const Candidate& write, std::vector<Interval>* snapshots,
                                 uint32_t* copy_tid) {
  Process& p = handed_[write.process];
  // A copying thread's next launch may come after the first write: its run is still open.
  for (auto r = runs_.begin(); r != runs_.end();) {
    const uint32_t process = static_cast<uint32_t>(r->first >> 32);
    const uint32_t tid = static_cast<uint32_t>(r->first);
    if (process != write.process || tid == write.tid || r->second.bytes < kMinHandOffBytes) {
      ++r;
      continue;
    }
    HandOffRun(r->first, std::move(r->second), p);
    runs_.erase(r++);
  }
  // The run that ended last before the write started.
  auto h = std::upper_bound(p.handed.begin(), p.handed.end(), write.when.start,
                            [](Ns start, const HandOff& h) { return start < h.run.last_end; });
  if (h == p.handed.begin() || std::prev(h)->tid == write.tid ||
      write.when.start - std::prev(h)->run.last_end > kSnapshotWindow) {
    if (p.pending.size() >= kMaxPendingWrites) p.pending.pop_front();
    p.pending.push_back({write.tid, write.when, write.bytes});
    return false;
  }
  --h;
  h->written += write.bytes;
  if (2 * h->written < h->run.bytes) return false;
  *snapshots = std::move(h->run.copies);
  *copy_tid = h->tid;
  p.handed.erase(h);
  return true;
}

bool SnapshotRuns::MayBecomeSnapshot(const Candidate& c) const {
  return !c.gpu_side && !c.snapshot &&
         (c.d2h || (c.event_class == EventClass::kSync && runs_.contains(Key(c.process, c.tid))));
}

}  // namespace idlescope
