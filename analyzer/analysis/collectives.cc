#include "analyzer/analysis/collectives.h"

#include <algorithm>
#include <limits>

namespace idlescope {

void Collectives::Note(uint64_t comm, uint64_t seq, int32_t nranks, int32_t nccl_rank,
                       int32_t job_rank, Ns arrival, uint32_t process, uint32_t tid) {
  if (comm == 0 || seq == 0 || nranks < 2 || nccl_rank < 0) return;
  Group& group = groups_[{comm, seq}];
  group.nranks = nranks;
  group.last_arrival = std::max(group.last_arrival, arrival);
  group.members.push_back({job_rank >= 0 ? job_rank : nccl_rank, arrival, process, tid});
  if (static_cast<int32_t>(group.members.size()) >= group.nranks) {
    Resolve(comm, seq, group);
    groups_.erase({comm, seq});
  }
}

void Collectives::Resolve(uint64_t comm, uint64_t seq, const Group& group) {
  const Group::Member* last = &group.members[0];
  for (const auto& m : group.members) {
    if (m.arrival > last->arrival) last = &m;
  }
  Straggler& s = stragglers_[last->rank];
  ++s.last_arrivals;
  ++matched_;
  // No rank can wait at collective k for longer than since collective k-1 of the communicator
  // completed, which is no earlier than the last arrival at k-1 (without this bound a 2 s job
  // said "waited 51 s": the waits summed the fast rank's drift).
  Ns floor = std::numeric_limits<Ns>::min();
  auto previous = last_resolved_.find(comm);
  if (previous != last_resolved_.end() && previous->second.first < seq) {
    floor = previous->second.second;
  }
  ResolvedCollective& out = resolved_.emplace_back();
  out.comm = comm;
  out.seq = seq;
  out.last = last->rank;
  out.last_arrival = last->arrival;
  for (const auto& m : group.members) {
    Ns wait = std::max<Ns>(last->arrival - std::max(m.arrival, floor), 0);
    out.members.push_back({m.rank, m.arrival, wait});
    s.waited_for_ns += wait;
    s.max_lateness_ns = std::max(s.max_lateness_ns, wait);
    if (wait > 0) {
      waited_[m.rank] += wait;
      waits_.push_back({.waiter = m.rank,
                        .last = last->rank,
                        .last_process = last->process,
                        .last_tid = last->tid,
                        .when = {last->arrival - wait, last->arrival}});
    }
  }
  if (previous == last_resolved_.end()) {
    last_resolved_.emplace(comm, std::make_pair(seq, last->arrival));
  } else if (previous->second.first < seq) {
    previous->second = {seq, last->arrival};
  }
}

void Collectives::Expire(Ns t) {
  absl::erase_if(groups_, [&](const auto& kv) {
    if (kv.second.last_arrival + kCollectiveHorizon >= t) return false;
    ++incomplete_;
    return true;
  });
}

void Collectives::Finish() {
  incomplete_ += groups_.size();
  groups_.clear();
}

std::vector<Finding> Collectives::Stragglers(size_t n) const {
  std::vector<Finding> findings;
  if (matched_ == 0) return findings;
  std::vector<std::pair<int32_t, Straggler>> ranks(stragglers_.begin(), stragglers_.end());
  std::sort(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) {
    return a.second.waited_for_ns != b.second.waited_for_ns
               ? a.second.waited_for_ns > b.second.waited_for_ns
               : a.first < b.first;
  });
  for (size_t i = 0; i < ranks.size() && i < n; ++i) {
    const auto& [rank, s] = ranks[i];
    if (s.waited_for_ns <= 0) continue;
    Finding f{.kind = FindingKind::kStragglerRank,
              .ns = s.waited_for_ns,
              .other_ns = s.max_lateness_ns,
              .count = s.last_arrivals,
              .of_count = matched_};
    f.rank = rank;
    findings.push_back(f);
  }
  return findings;
}

}  // namespace idlescope
