#include "analyzer/analysis/attribution.h"

#include <algorithm>
#include <tuple>

#include "analyzer/analysis/event_classes.h"

namespace idlescope {
namespace {

// Lower ranks first: tier, then the cause's precedence (causes.def: 1 to kCauseCount).
int Rank(const RankedCandidate& c) {
  return static_cast<int>(c.tier) * (kCauseCount + 1) + InfoOf(c.candidate->cause).precedence;
}

// Whether `a` explains a slice before `b`: its rank, then the one that started first (not the one
// the slice saw first: an idle interval is handed out in pieces, cut wherever the analysis window
// stood, and a piece sees every candidate running at its start at once).
bool Before(const RankedCandidate& a, const RankedCandidate& b) {
  const int ra = Rank(a), rb = Rank(b);
  if (ra != rb) return ra < rb;
  return a.candidate->when.start < b.candidate->when.start;
}

// What a launching thread's read of a pipe or socket may be waiting for: a job process that
// reads data or downloads, or an installer whose output it reads (subprocess.run(["pip", ...])).
bool IsPipeSource(const Candidate& c) {
  return c.event_class == EventClass::kReadLocal || c.event_class == EventClass::kReadRemote ||
         c.event_class == EventClass::kDownload || c.event_class == EventClass::kInstaller;
}

// Which of the workers' sampled states explains a wait for them first: a read of a data file
// (I/O-bound), a wait for a CPU (too many busy threads for the cores), then computing (the state of
// any busy worker).
int WorkerStateOrder(EventClass c) {
  return c == EventClass::kWorkerRead ? 0 : c == EventClass::kWorkerCpuWait ? 1 : 2;
}

// The candidate that explains a slice where `active` (indices into `all`) are running.
int Winner(const std::vector<int>& active, std::span<const RankedCandidate> all) {
  int best = -1;
  for (int i : active) {
    // A worker's sampled run explains only a wait for the workers (below): what they did while
    // the launching thread did something else, or nothing traced, says nothing of the gap.
    if (IsWorkerSampleClass(all[i].candidate->event_class)) continue;
    if (best < 0 || Before(all[i], all[best])) best = i;
  }
  if (best < 0 || all[best].tier != Tier::kLaunchingThread) return best;
  const Candidate& winner = *all[best].candidate;
  // A launching thread that waits on the device: what the device is doing explains the wait.
  if (WaitsForTheDevice(winner)) {
    int gpu = -1;
    for (int i : active) {
      if (all[i].tier == Tier::kGpu && (gpu < 0 || Before(all[i], all[gpu]))) gpu = i;
    }
    if (gpu >= 0) return winner.event_class == EventClass::kSync ? gpu : best;
    // The device is idle and the call has not returned: a thread that waits for a CPU meanwhile
    // (its sampled run says so) returns late for want of one.
    for (int i : active) {
      const Candidate& c = *all[i].candidate;
      if (c.event_class == EventClass::kCpuWait && c.process == winner.process &&
          c.tid == winner.tid) {
        return i;
      }
    }
  }
  // A launching thread that waits for its DataLoader workers, or reads an installer's output:
  // what the workers or the installer do explains it.
  if (winner.event_class == EventClass::kReadWorkerQueue) {
    int source = -1;
    for (int i : active) {
      if (all[i].tier == Tier::kJobProcess && IsPipeSource(*all[i].candidate) &&
          (source < 0 || Before(all[i], all[source]))) {
        source = i;
      }
    }
    if (source >= 0) return source;
    // No traced call of theirs: what the sampler saw their threads do.
    int sampled = -1;
    for (int i : active) {
      const Candidate& c = *all[i].candidate;
      if (all[i].tier != Tier::kJobProcess || !IsWorkerSampleClass(c.event_class)) continue;
      if (sampled < 0) {
        sampled = i;
        continue;
      }
      const Candidate& s = *all[sampled].candidate;
      const int order = WorkerStateOrder(c.event_class), s_order = WorkerStateOrder(s.event_class);
      if (order < s_order || (order == s_order && c.when.start < s.when.start)) sampled = i;
    }
    if (sampled >= 0) return sampled;
  }
  return best;
}

}  // namespace

bool WaitsForTheDevice(const Candidate& c) {
  if (c.gpu_side) return false;
  return c.event_class == EventClass::kSync ||
         (c.d2h &&
          (c.event_class == EventClass::kCopyPageable || c.event_class == EventClass::kCopyPinned));
}

std::vector<Slice> ResolveSlices(Interval idle, std::span<const RankedCandidate> candidates) {
  std::vector<Slice> slices;
  if (idle.length() <= 0) return slices;
  if (candidates.empty()) {  // the common case: nothing to cut
    slices.push_back(Slice{idle, -1, Cause::kUnknown});
    return slices;
  }
  // Boundaries: (time, +1 start / -1 end, candidate). Ends sort before starts at equal times so
  // that touching candidates do not overlap.
  struct Edge {
    Ns t;
    int delta;
    int index;
  };
  // Scratch reused across calls: this runs once per idle slice of every device.
  static thread_local std::vector<Edge> edges;
  edges.clear();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Interval& w = candidates[i].candidate->when;
    Ns s = std::max(w.start, idle.start);
    Ns e = std::min(w.end, idle.end);
    if (e <= s) continue;
    edges.push_back({s, +1, static_cast<int>(i)});
    edges.push_back({e, -1, static_cast<int>(i)});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return std::tie(a.t, a.delta, a.index) < std::tie(b.t, b.delta, b.index);
  });
  auto emit = [&](Ns s, Ns e, int winner) {
    if (e <= s) return;
    Cause cause = winner >= 0 ? candidates[winner].candidate->cause : Cause::kUnknown;
    if (!slices.empty() && slices.back().winner == winner && slices.back().when.end == s) {
      slices.back().when.end = e;
      return;
    }
    slices.push_back(Slice{{s, e}, winner, cause});
  };
  static thread_local std::vector<int> active;
  active.clear();
  Ns t = idle.start;
  size_t k = 0;
  while (k < edges.size()) {
    Ns next = edges[k].t;
    emit(t, next, Winner(active, candidates));
    t = next;
    for (; k < edges.size() && edges[k].t == next; ++k) {
      if (edges[k].delta > 0) {
        active.push_back(edges[k].index);
      } else {
        active.erase(std::find(active.begin(), active.end(), edges[k].index));
      }
    }
  }
  emit(t, idle.end, Winner(active, candidates));
  return slices;
}

void TopEvidence::Add(EvidenceKey key, Ns ns, uint64_t bytes, uint64_t slices) {
  EvidenceWeight& w = weights_[key];
  w.ns += ns;
  w.bytes += bytes;
  w.count += slices;
  if (weights_.size() > capacity_) Shrink();
}

void TopEvidence::Remove(EvidenceKey key, Ns ns, uint64_t bytes, uint64_t slices) {
  auto it = weights_.find(key);
  if (it == weights_.end()) return;
  EvidenceWeight& w = it->second;
  w.ns -= ns;
  w.bytes -= std::min(w.bytes, bytes);
  w.count -= std::min(w.count, slices);
  if (w.ns <= 0) weights_.erase(it);
}

void TopEvidence::Merge(const TopEvidence& other) {
  for (const auto& [key, weight] : other.weights_) {
    EvidenceWeight& w = weights_[key];
    w.ns += weight.ns;
    w.bytes += weight.bytes;
    w.count += weight.count;
  }
  evicted_ = evicted_ || other.evicted_;
  if (weights_.size() > capacity_) Shrink();
}

std::vector<std::pair<EvidenceKey, EvidenceWeight>> TopEvidence::Top(size_t n) const {
  std::vector<std::pair<EvidenceKey, EvidenceWeight>> all(weights_.begin(), weights_.end());
  auto heavier = [](const auto& a, const auto& b) {
    if (a.second.ns != b.second.ns) return a.second.ns > b.second.ns;
    return std::tie(a.first.process, a.first.id) < std::tie(b.first.process, b.first.id);
  };
  n = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<ptrdiff_t>(n), all.end(), heavier);
  all.resize(n);
  return all;
}

void TopEvidence::Shrink() {
  ForgetLighterHalf(weights_, capacity_ + 1);
  evicted_ = true;
}

}  // namespace idlescope
