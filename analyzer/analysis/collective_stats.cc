#include "analyzer/analysis/collective_stats.h"

#include <algorithm>
#include <limits>

namespace idlescope {
namespace {

// Collectives kept whole for the report's slowest (more than it shows: --top is applied there).
constexpr size_t kSlowestKept = 64;

}  // namespace

double BusFactor(NcclOp op, int32_t nranks) {
  if (nranks < 1) return 1;
  const double n = nranks;
  switch (op) {
    case NCCL_ALL_REDUCE:
      return 2 * (n - 1) / n;
    case NCCL_ALL_GATHER:
    case NCCL_REDUCE_SCATTER:
    case NCCL_ALL_TO_ALL:
      return (n - 1) / n;
    default:
      return 1;  // broadcast, reduce, point to point
  }
}

uint64_t CollectiveSize(NcclOp op, uint64_t bytes_sent, int32_t nranks) {
  // nccl-tests' S: AllGather the gathered whole (each rank sends its part), the others what a
  // rank sends (ReduceScatter and AlltoAll: the whole input).
  return op == NCCL_ALL_GATHER ? bytes_sent * static_cast<uint64_t>(std::max(nranks, 1))
                               : bytes_sent;
}

void CollectiveStats::Call(int32_t rank, uint64_t comm, uint64_t seq, NcclOp op, uint64_t bytes,
                           bool grouped) {
  if (comm == 0 || seq == 0 || rank < 0) return;
  const Key key{comm, seq};
  Open& c = At(key);
  c.op = op;
  c.bytes = std::max(c.bytes, bytes);
  if (grouped) grouped_.insert(rank);
  if (grouped_.contains(rank)) {
    calls_.erase(rank);  // its kernels no longer pair with its calls
    return;
  }
  calls_[rank].push_back(key);
}

void CollectiveStats::Kernel(int32_t rank, Interval when) {
  auto it = calls_.find(rank);
  if (it == calls_.end() || it->second.empty()) return;
  const Key key = it->second.front();
  it->second.pop_front();
  auto c = open_.find(key);
  if (c == open_.end()) return;
  Open& open = c->second;
  bool known = false;
  for (Member& m : open.members) {
    if (m.rank != rank || m.kernel.start >= 0) continue;
    m.kernel = when;
    ++open.kernels;
    known = true;
    break;
  }
  if (!known) {
    // The call is not resolved yet (its kernel came before the last rank's call): keep it.
    open.members.push_back({.rank = rank, .arrival = -1, .waited = 0, .kernel = when});
    ++open.kernels;
  }
  if (open.resolved && open.kernels >= open.members.size()) {
    Close(key, open);
    open_.erase(c);
  }
}

void CollectiveStats::Resolved(const ResolvedCollective& r) {
  const Key key{r.comm, r.seq};
  Open& c = At(key);
  c.resolved = true;
  c.last = r.last;
  c.last_arrival = r.last_arrival;
  std::vector<Member> early = std::move(c.members);  // kernels that came first
  c.members.clear();
  c.kernels = 0;
  for (const ResolvedCollective::Member& m : r.members) {
    Member member{.rank = m.rank, .arrival = m.arrival, .waited = m.waited};
    for (Member& e : early) {
      if (e.rank == m.rank && e.kernel.start >= 0) {
        member.kernel = e.kernel;
        e.kernel = {-1, -1};
        ++c.kernels;
        break;
      }
    }
    c.members.push_back(member);
  }
  // Ranks that will never pair a kernel (grouped) are not waited for.
  size_t pairable = 0;
  for (const Member& m : c.members) pairable += !grouped_.contains(m.rank);
  if (c.kernels >= pairable) {
    Close(key, c);
    open_.erase(key);
  }
}

void CollectiveStats::Expire(Ns t) {
  std::vector<Key> done;
  for (auto& [key, c] : open_) {
    if (c.resolved && c.last_arrival + kCollectiveHorizon < t) done.push_back(key);
  }
  for (const Key& key : done) {
    Close(key, open_[key]);
    open_.erase(key);
  }
}

void CollectiveStats::Finish() {
  std::vector<Key> done;
  for (auto& [key, c] : open_) {
    if (c.resolved) done.push_back(key);
  }
  std::sort(done.begin(), done.end());
  for (const Key& key : done) Close(key, open_[key]);
  open_.clear();
  calls_.clear();
}

void CollectiveStats::Close(const Key& key, Open& c) {
  const int32_t nranks = static_cast<int32_t>(c.members.size());
  Totals& t = totals_[{key.first, static_cast<int>(c.op)}];
  t.nranks = std::max(t.nranks, nranks);
  ++t.collectives;
  const uint64_t size = CollectiveSize(c.op, c.bytes, nranks);
  t.size_bytes += size;
  ++t.last_arrivals[c.last];
  // The transfer: the shortest kernel, when the last arriver's is known (the others' may include
  // their wait for it).
  Ns transfer = -1;
  bool last_paired = false;
  Ns waited = 0;
  for (const Member& m : c.members) {
    waited += m.waited;
    if (m.kernel.start < 0) continue;
    last_paired = last_paired || m.rank == c.last;
    transfer = transfer < 0 ? m.kernel.length() : std::min(transfer, m.kernel.length());
  }
  if (!last_paired) transfer = -1;
  t.waited_ns += waited;
  if (transfer >= 0) {
    ++t.timed;
    t.timed_size_bytes += size;
    t.transfer_ns += transfer;
  }
  if (waited <= 0) return;
  if (slowest_.size() >= kSlowestKept && waited <= slowest_floor_) return;
  CollectiveDetail d;
  d.comm = key.first;
  d.seq = key.second;
  d.op = c.op;
  d.nranks = nranks;
  d.size_bytes = size;
  d.last_rank = c.last;
  d.waited_ns = waited;
  d.transfer_ns = transfer;
  for (const Member& m : c.members) {
    d.ranks.push_back({.rank = m.rank,
                       .arrival = m.arrival,
                       .kernel_start = m.kernel.start,
                       .kernel_ns = m.kernel.start >= 0 ? m.kernel.length() : 0,
                       .waited_ns = m.waited});
  }
  std::sort(d.ranks.begin(), d.ranks.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  slowest_.push_back(std::move(d));
  if (slowest_.size() > kSlowestKept) {
    // Drop the lightest (ties: the latest): the kept ones are the heaviest.
    auto lightest =
        std::min_element(slowest_.begin(), slowest_.end(), [](const auto& a, const auto& b) {
          return a.waited_ns != b.waited_ns ? a.waited_ns < b.waited_ns
                                            : std::tie(a.comm, a.seq) > std::tie(b.comm, b.seq);
        });
    slowest_.erase(lightest);
    slowest_floor_ = std::numeric_limits<Ns>::max();
    for (const CollectiveDetail& s : slowest_)
      slowest_floor_ = std::min(slowest_floor_, s.waited_ns);
  }
}

std::vector<CollectiveReport> CollectiveStats::Summaries() const {
  std::vector<CollectiveReport> out;
  for (const auto& [key, t] : totals_) {
    CollectiveReport r;
    r.comm = key.first;
    r.op = static_cast<NcclOp>(key.second);
    r.nranks = t.nranks;
    r.collectives = t.collectives;
    r.size_bytes = t.size_bytes;
    r.timed = t.timed;
    r.transfer_ns = t.transfer_ns;
    if (t.transfer_ns > 0) {
      r.algbw = static_cast<double>(t.timed_size_bytes) / static_cast<double>(t.transfer_ns);
      r.busbw = r.algbw * BusFactor(r.op, r.nranks);
    }
    r.waited_ns = t.waited_ns;
    for (const auto& [rank, n] : t.last_arrivals) {
      if (n > r.most_last_count) {
        r.most_last_rank = rank;
        r.most_last_count = n;
      }
    }
    out.push_back(r);
  }
  return out;
}

std::vector<CollectiveDetail> CollectiveStats::Slowest(size_t n, Ns job_start) const {
  std::vector<CollectiveDetail> out = slowest_;
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    if (a.waited_ns != b.waited_ns) return a.waited_ns > b.waited_ns;
    return std::tie(a.comm, a.seq) < std::tie(b.comm, b.seq);
  });
  if (out.size() > n) out.resize(n);
  for (CollectiveDetail& d : out) {
    for (CollectiveDetail::Rank& r : d.ranks) {
      if (r.arrival >= 0) r.arrival -= job_start;
      if (r.kernel_start >= 0) r.kernel_start -= job_start;
    }
  }
  return out;
}

}  // namespace idlescope
