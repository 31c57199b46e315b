#include "analyzer/analysis/candidate_window.h"

#include "analyzer/analysis/snapshots.h"

namespace idlescope {

void CandidateWindow::Merge() {
  if (incoming_.empty()) return;
  auto by_start = [](const Candidate& a, const Candidate& b) {
    return a.when.start < b.when.start;
  };
  std::stable_sort(incoming_.begin(), incoming_.end(), by_start);
  for (const Candidate& c : incoming_) longest_ = std::max(longest_, c.when.length());
  size_t old_size = pending_.size();
  pending_.insert(pending_.end(), incoming_.begin(), incoming_.end());
  std::inplace_merge(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(old_size),
                     pending_.end(), by_start);
  incoming_.clear();
}

void CandidateWindow::MarkSnapshot(uint32_t process, uint32_t tid, Interval copy) {
  auto first = std::lower_bound(pending_.begin(), pending_.end(), copy.start,
                                [](const Candidate& c, Ns t) { return c.when.start < t; });
  for (auto it = first; it != pending_.end() && it->when.start == copy.start; ++it) {
    if (IsSnapshotCopy(*it, process, tid, copy)) MakeSnapshot(*it);
  }
  for (Candidate& c : incoming_) {
    if (IsSnapshotCopy(c, process, tid, copy)) MakeSnapshot(c);
  }
}

void CandidateWindow::MarkCheckpointWrites(std::span<const EvidenceKey> writes) {
  auto mark = [&](Candidate& c) {
    if (c.event_class != EventClass::kUploadWrite || c.gpu_side) return;
    for (const EvidenceKey& w : writes) {
      if (c.process == w.process && c.object == w.id) {
        c.event_class = EventClass::kCheckpointWrite;
        c.cause = Cause::kCheckpointing;
        return;
      }
    }
  };
  for (Candidate& c : pending_) mark(c);
  for (Candidate& c : incoming_) mark(c);
}

}  // namespace idlescope
