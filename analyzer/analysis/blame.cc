#include "analyzer/analysis/blame.h"

#include <algorithm>
#include <limits>

namespace idlescope {
namespace {

// Candidates and GPU records arrive in packets, roughly by end time: a wait looks back this far
// past the first one that ended before it began.
constexpr Ns kReorderSlack = 1'000'000'000;  // 1 s

// The union of `pieces` (sorted by start), clipped to nothing: its total length.
Ns UnionLength(std::vector<Interval>& pieces) {
  std::sort(pieces.begin(), pieces.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  Ns total = 0, until = std::numeric_limits<Ns>::min();
  for (const Interval& p : pieces) {
    const Ns start = std::max(p.start, until);
    if (p.end > start) total += p.end - start;
    until = std::max(until, p.end);
  }
  return total;
}

template <typename T>
void Bound(std::deque<T>& q, Ns newest_end, auto end_of) {
  while (!q.empty() &&
         (q.size() >= kMaxRankActivity || end_of(q.front()) < newest_end - kBlameHorizon)) {
    q.pop_front();
  }
}

}  // namespace

bool CallingThreads::Offer(const RankActivity& a) {
  const uint64_t thread = (uint64_t{a.process} << 32) | a.tid;
  if (callers_.contains(thread)) return true;
  std::deque<RankActivity>& held = held_[thread];
  Bound(held, a.when.end, [](const RankActivity& x) { return x.when.end; });
  held.push_back(a);
  return false;
}

std::vector<RankActivity> CallingThreads::Called(uint32_t process, uint32_t tid) {
  const uint64_t thread = (uint64_t{process} << 32) | tid;
  if (!callers_.insert(thread).second) return {};
  auto it = held_.find(thread);
  if (it == held_.end()) return {};
  std::vector<RankActivity> out(it->second.begin(), it->second.end());
  held_.erase(it);
  return out;
}

void RankBlame::Note(const RankActivity& a) {
  if (callers_.Offer(a)) Keep(a);
}

void RankBlame::NoteCaller(uint32_t process, uint32_t tid) {
  for (const RankActivity& a : callers_.Called(process, tid)) Keep(a);
}

void RankBlame::Keep(const RankActivity& a) {
  std::deque<Activity>& recent = recent_[a.rank];
  Bound(recent, a.when.end, [](const Activity& x) { return x.when.end; });
  recent.push_back(a);
}

void RankBlame::NoteNcclKernel(int32_t rank, Interval when) {
  if (rank < 0 || when.length() <= 0) return;
  std::deque<Interval>& kernels = nccl_[rank];
  Bound(kernels, when.end, [](const Interval& k) { return k.end; });
  kernels.push_back(when);
}

void RankBlame::MarkSnapshot(int32_t rank, uint32_t process, uint32_t tid, Interval copy) {
  for (Pending& p : pending_) {
    if (p.wait.last != rank) continue;
    for (size_t i = 0; i < p.activity.size(); ++i) {
      Activity& a = p.activity[i];
      if (a.process == process && a.tid == tid && p.unclipped[i] == copy) {
        a.cause = Cause::kCheckpointing;
      }
    }
  }
  auto it = recent_.find(rank);
  if (it == recent_.end()) return;
  for (auto a = it->second.rbegin(); a != it->second.rend(); ++a) {
    if (a->process == process && a->tid == tid && a->when == copy) {
      a->cause = Cause::kCheckpointing;
      return;
    }
  }
}

void RankBlame::Wait(const CollectiveWait& wait) {
  const Interval w = wait.when;
  if (w.length() <= 0 || wait.waiter == wait.last) return;
  Pending p{.wait = wait, .activity = {}, .unclipped = {}};
  auto it = recent_.find(wait.last);
  if (it != recent_.end()) {
    const std::deque<Activity>& recent = it->second;
    for (auto a = recent.rbegin(); a != recent.rend(); ++a) {
      if (a->when.end < w.start - kReorderSlack) break;
      if (a->process != wait.last_process || a->tid != wait.last_tid) continue;
      // A sync: the thread waited for its own GPU, whose kernels made it late (its compute).
      if (a->cause == Cause::kSynchronization) continue;
      const Interval clipped{std::max(a->when.start, w.start), std::min(a->when.end, w.end)};
      if (clipped.length() <= 0) continue;
      Activity piece = *a;
      piece.when = clipped;
      p.activity.push_back(piece);
      p.unclipped.push_back(a->when);
    }
  }
  pending_.push_back(std::move(p));
}

void RankBlame::Resolve(Ns until) {
  while (!pending_.empty() && pending_.front().wait.when.end < until) {
    ResolveOne(pending_.front());
    pending_.pop_front();
  }
  // Waits resolve in arrival order; one that ends later blocks the rest only until it resolves.
  if (pending_.size() > kMaxRankActivity) {
    ResolveOne(pending_.front());
    pending_.pop_front();
  }
}

void RankBlame::ResolveOne(const Pending& p) {
  const CollectiveWait& wait = p.wait;
  const Interval w = wait.when;
  // Where the waiting rank's GPU sat in NCCL kernels during the wait.
  std::vector<Interval> gpu;
  auto kernels = nccl_.find(wait.waiter);
  if (kernels != nccl_.end()) {
    for (auto k = kernels->second.rbegin(); k != kernels->second.rend(); ++k) {
      if (k->end < w.start - kReorderSlack) break;
      const Interval clipped{std::max(k->start, w.start), std::min(k->end, w.end)};
      if (clipped.length() > 0) gpu.push_back(clipped);
    }
  }
  const Ns waited = UnionLength(gpu);
  if (waited <= 0) return;  // the GPU was busy: the host had only run ahead
  Straggler& s = stragglers_[wait.last];
  s.waiters.insert(wait.waiter);
  // The last arriver's activity in those intervals: each candidate's overlap, and their union.
  std::vector<std::pair<const Activity*, Ns>> covering;
  std::vector<Interval> covered_pieces;
  for (const Activity& a : p.activity) {
    Ns overlap = 0;
    for (const Interval& g : gpu) {
      const Interval c{std::max(a.when.start, g.start), std::min(a.when.end, g.end)};
      if (c.length() <= 0) continue;
      overlap += c.length();
      covered_pieces.push_back(c);
    }
    if (overlap > 0) covering.push_back({&a, overlap});
  }
  // `gpu` holds disjoint-or-overlapping clips; their union is what waited. Overlapping
  // candidates share the time they cover together.
  const Ns covered = std::min(UnionLength(covered_pieces), waited);
  Ns overlaps = 0;
  for (const auto& [a, ns] : covering) overlaps += ns;
  const double scale =
      overlaps > 0 ? static_cast<double>(covered) / static_cast<double>(overlaps) : 0;
  std::array<Ns, kCauseCount>& by_cause = waited_[wait.waiter];
  for (const auto& [a, ns] : covering) {
    const Ns share = static_cast<Ns>(static_cast<double>(ns) * scale);
    if (share <= 0) continue;
    Blamed& b = s.causes[Index(a->cause)];
    b.ns += share;
    b.waiters.insert(wait.waiter);
    if (a->stack != 0) b.stacks.Add({a->process, a->stack}, share, 0);
    if (a->object != 0) b.objects.Add({a->process, a->object}, share, 0);
    by_cause[Index(a->cause)] += share;
  }
  s.unexplained_ns += waited - covered;
}

}  // namespace idlescope
