// CandidateWindow: the candidates (host events and GPU-side activity) that may still explain an
// idle slice not yet attributed, in bounded memory. New candidates go to an unsorted batch and
// are merged, sorted by start, each time the analysis window moves on; attribution asks for the
// ones that overlap a piece of a gap; Prune forgets the ones no device can use any more. A
// candidate is forgotten once every device it can explain has been attributed past its end, and
// at most kMaxPendingCandidates are held (about 100 MB): past that the oldest are forgotten and
// counted, since a process whose family never used a device keeps its candidates for a device
// that may still appear.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "analyzer/analysis/attribution.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

inline constexpr size_t kMaxPendingCandidates = 1 << 20;

class CandidateWindow {
 public:
  void Add(const Candidate& c) {
    incoming_.push_back(c);
    peak_ = std::max(peak_, size());
  }
  // Merges the new candidates into the sorted window.
  void Merge();

  // Calls fn(const Candidate&) for the merged candidates that start before `piece` ends and may
  // reach into it (no candidate is longer than the longest held), in start order.
  template <typename Fn>
  void ForEachReaching(Interval piece, Fn&& fn) const {
    auto first = std::lower_bound(pending_.begin(), pending_.end(), piece.start - longest_,
                                  [](const Candidate& c, Ns t) { return c.when.start < t; });
    for (auto it = first; it != pending_.end() && it->when.start < piece.end; ++it) fn(*it);
  }

  // The candidate of the copy (or sync) `copy` of thread (process, tid), merged or new, is a
  // checkpoint snapshot: its time not yet attributed goes to checkpointing when it is.
  void MarkSnapshot(uint32_t process, uint32_t tid, Interval copy);
  // The writes (uploads so far) of the files `writes` names by (process, path id) were a model
  // file's: checkpoint writes from now on (a rename showed it: analysis/identities.h).
  void MarkCheckpointWrites(std::span<const EvidenceKey> writes);

  // Pruning pays off once the window doubled since the last prune.
  bool WantsPrune() const { return pending_.size() > 2 * after_prune_ + 1024; }
  // Forgets the merged candidates for which done(c) is true, then the oldest past the cap.
  template <typename Done>
  void Prune(Done&& done) {
    std::erase_if(pending_, done);
    if (pending_.size() > kMaxPendingCandidates) {
      size_t excess = pending_.size() - kMaxPendingCandidates / 2;
      forgotten_ += excess;
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(excess));
    }
    after_prune_ = pending_.size();
    longest_ = 0;
    for (const Candidate& c : pending_) longest_ = std::max(longest_, c.when.length());
  }

  size_t size() const { return pending_.size() + incoming_.size(); }
  size_t merged() const { return pending_.size(); }
  size_t peak() const { return peak_; }
  uint64_t forgotten() const { return forgotten_; }

 private:
  std::vector<Candidate> pending_;   // sorted by start
  std::vector<Candidate> incoming_;  // not yet merged into pending_
  size_t after_prune_ = 0;
  Ns longest_ = 0;  // the longest candidate in pending_
  size_t peak_ = 0;
  uint64_t forgotten_ = 0;
};

// CandidateWindows: the candidate window (above) split by who may use a candidate, so that a gap
// looks only at the candidates of the processes that can explain it
// (docs/attribution.md, "Devices"): one window per process that drives a device (its own events
// and those of its workers and helpers), and one shared window for processes that may explain
// several ranks' devices (a launcher, an installer). A device's gap scans the windows of the
// processes that drive it and the shared one; with one rank per device, the work per gap no
// longer grows with the number of ranks.
//
// Candidates found in several windows come out in the order one window would give: by start,
// then in the order they were added.
class CandidateWindows {
 public:
  // The shared window's slot; process p's is p + 1.
  static constexpr size_t kShared = 0;
  static size_t SlotOf(uint32_t process) { return size_t{process} + 1; }

  void Add(size_t slot, Candidate c) {
    if (slot >= windows_.size()) windows_.resize(slot + 1);
    c.seq = next_seq_++;
    if (windows_[slot].size() == windows_[slot].merged()) dirty_.push_back(slot);
    windows_[slot].Add(c);
    ++size_;
    peak_ = std::max(peak_, size_);
  }
  // Merges the new candidates of every window.
  void Merge() {
    for (size_t slot : dirty_) windows_[slot].Merge();
    dirty_.clear();
  }

  // Calls fn(const Candidate&) for the merged candidates of `slots` that may reach into `piece`
  // (as CandidateWindow::ForEachReaching), by start then by the order they were added.
  template <typename Fn>
  void ForEachReaching(std::span<const size_t> slots, Interval piece, Fn&& fn) {
    found_.clear();
    size_t windows = 0;
    for (size_t slot : slots) {
      if (slot >= windows_.size()) continue;
      size_t before = found_.size();
      windows_[slot].ForEachReaching(piece, [&](const Candidate& c) { found_.push_back(&c); });
      windows += found_.size() > before;
    }
    if (windows > 1) {
      std::sort(found_.begin(), found_.end(), [](const Candidate* a, const Candidate* b) {
        return a->when.start != b->when.start ? a->when.start < b->when.start : a->seq < b->seq;
      });
    }
    for (const Candidate* c : found_) fn(*c);
  }

  // As CandidateWindow::MarkSnapshot, in every window (a checkpoint write is rare).
  void MarkSnapshot(uint32_t process, uint32_t tid, Interval copy) {
    for (CandidateWindow& w : windows_) w.MarkSnapshot(process, tid, copy);
  }
  // As CandidateWindow::MarkCheckpointWrites, in every window (a rename is rare).
  void MarkCheckpointWrites(std::span<const EvidenceKey> writes) {
    for (CandidateWindow& w : windows_) w.MarkCheckpointWrites(writes);
  }

  // Pruning pays off once the candidates held doubled since the last prune.
  bool WantsPrune() const { return size_ > 2 * after_prune_ + 1024; }
  template <typename Done>
  void Prune(Done&& done) {
    size_ = 0;
    for (CandidateWindow& w : windows_) {
      if (w.size() == 0) continue;
      w.Prune(done);
      size_ += w.size();
    }
    after_prune_ = size_;
  }

  size_t size() const { return size_; }
  size_t peak() const { return peak_; }
  uint64_t forgotten() const {
    uint64_t n = 0;
    for (const CandidateWindow& w : windows_) n += w.forgotten();
    return n;
  }

 private:
  std::vector<CandidateWindow> windows_;
  std::vector<size_t> dirty_;  // windows with candidates not merged yet
  std::vector<const Candidate*> found_;
  uint64_t next_seq_ = 0;
  size_t size_ = 0;
  size_t after_prune_ = 0;
  size_t peak_ = 0;
};

}  // namespace idlescope
