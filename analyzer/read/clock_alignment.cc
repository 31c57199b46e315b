#include "analyzer/read/clock_alignment.h"

#include <algorithm>
#include <cstdlib>

namespace idlescope {
namespace {

Ns Median(std::vector<Ns>& v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

void CollectiveEndCollector::AddEvent(const Event& event, Ns start) {
  if (event.type() == CUDA_LAUNCH && event.correlation() != 0 && event.stream() != 0) {
    launch_stream_[event.correlation()] = event.stream();
    return;
  }
  if (event.type() != NCCL_COLLECTIVE || event.stream() == 0) return;
  Stream& s = host_streams_[event.stream()];
  if (event.group_depth() > 0) s.grouped = true;
  if (event.comm() == 0 || event.seq() == 0) return;
  s.calls.push_back({start, event.comm(), event.seq()});
  ++calls_;
}

void CollectiveEndCollector::AddActivity(const GpuActivity& a, Ns start) {
  if (a.kind() != GPU_KERNEL) return;
  GpuStream stream{a.device(), a.stream()};
  if (a.nccl()) {
    nccl_kernels_[stream].push_back({start, start + static_cast<Ns>(a.dur())});
    ++kernels_;
  } else if (a.correlation() != 0) {
    kernel_stream_.try_emplace(a.correlation(), stream);
  }
}

std::vector<CollectiveEnd> CollectiveEndCollector::Finish() {
  // Host stream -> GPU stream, from correlated launches.
  absl::flat_hash_map<uint64_t, GpuStream> gpu_of;
  for (const auto& [correlation, host] : launch_stream_) {
    if (!host_streams_.contains(host)) continue;
    auto it = kernel_stream_.find(correlation);
    if (it != kernel_stream_.end() && nccl_kernels_.contains(it->second)) {
      gpu_of.try_emplace(host, it->second);
    }
  }
  // The only host stream and GPU stream left unpaired pair up (NCCL's own streams).
  std::vector<uint64_t> hosts_left;
  for (const auto& [host, s] : host_streams_) {
    if (!gpu_of.contains(host)) hosts_left.push_back(host);
  }
  std::vector<GpuStream> gpus_left;
  for (const auto& [gpu, kernels] : nccl_kernels_) {
    bool used = false;
    for (const auto& [host, g] : gpu_of) used = used || g == gpu;
    if (!used) gpus_left.push_back(gpu);
  }
  if (hosts_left.size() == 1 && gpus_left.size() == 1) gpu_of[hosts_left[0]] = gpus_left[0];

  std::vector<CollectiveEnd> ends;
  for (auto& [host, s] : host_streams_) {
    auto g = gpu_of.find(host);
    if (s.grouped || g == gpu_of.end()) continue;
    std::vector<Interval>& kernels = nccl_kernels_[g->second];
    std::sort(s.calls.begin(), s.calls.end(),
              [](const Call& a, const Call& b) { return a.start < b.start; });
    std::sort(kernels.begin(), kernels.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start; });
    const size_t n = std::min(s.calls.size(), kernels.size());
    for (size_t i = 0; i < n; ++i) {
      // A kernel starts after the call that enqueued it, and before the next call returns
      // only if it is that call's: a kernel before its call means the pairing slipped.
      if (kernels[i].start < s.calls[i].start) break;
      ends.push_back({s.calls[i].comm, s.calls[i].seq, kernels[i].end});
    }
  }
  return ends;
}

HostAlignment AlignHosts(const std::vector<std::string>& hosts,
                         const std::vector<uint32_t>& file_host,
                         const std::vector<std::vector<CollectiveEnd>>& file_ends) {
  const uint32_t n = static_cast<uint32_t>(hosts.size());
  HostAlignment out;
  out.correction.assign(n, 0);
  out.clocks.resize(n);
  for (uint32_t h = 0; h < n; ++h) out.clocks[h].host = hosts[h];
  if (n == 0) return out;
  out.clocks[0].method = ClockMethod::kReference;

  // Per collective, one end per host: the first rank of that host seen (its ranks' ends differ
  // by the jitter only).
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<uint32_t, Ns>>>
      by_collective;  // (comm, seq) -> (host, end)
  for (size_t f = 0; f < file_ends.size(); ++f) {
    for (const CollectiveEnd& e : file_ends[f]) {
      auto& v = by_collective[{e.comm, e.seq}];
      const uint32_t host = file_host[f];
      bool seen = false;
      for (const auto& [h, t] : v) seen = seen || h == host;
      if (!seen) v.push_back({host, e.end});
    }
  }
  // Differences against the collective's lowest host: end(b) - end(a), for edge (a, b), a < b.
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, std::vector<Ns>> edges;
  for (auto& [key, v] : by_collective) {
    if (v.size() < 2) continue;
    std::sort(v.begin(), v.end());
    for (size_t i = 1; i < v.size(); ++i) {
      edges[{v[0].first, v[i].first}].push_back(v[i].second - v[0].second);
    }
  }
  struct Estimate {
    Ns median = 0;
    Ns residual = 0;
    uint64_t samples = 0;
  };
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, Estimate> estimate;
  for (auto& [edge, d] : edges) {
    Estimate e;
    e.samples = d.size();
    e.median = Median(d);
    std::vector<Ns> deviation(d.size());
    for (size_t i = 0; i < d.size(); ++i) deviation[i] = std::llabs(d[i] - e.median);
    e.residual = Median(deviation);
    estimate[edge] = e;
  }
  // Grow the tree from the reference, the best-supported edge first (Prim on sample counts).
  std::vector<bool> placed(n, false);
  placed[0] = true;
  for (;;) {
    const std::pair<uint32_t, uint32_t>* best = nullptr;
    const Estimate* best_e = nullptr;
    for (const auto& [edge, e] : estimate) {
      if (placed[edge.first] == placed[edge.second]) continue;
      if (best_e == nullptr || e.samples > best_e->samples ||
          (e.samples == best_e->samples && edge < *best)) {
        best = &edge;
        best_e = &e;
      }
    }
    if (best == nullptr) break;
    const auto [a, b] = *best;
    const uint32_t child = placed[a] ? b : a;
    const uint32_t parent = placed[a] ? a : b;
    out.correction[child] =
        out.correction[parent] + (child == b ? best_e->median : -best_e->median);
    placed[child] = true;
    HostClock& c = out.clocks[child];
    c.method = ClockMethod::kCollectives;
    c.via = hosts[parent];
    c.correction_ns = out.correction[child];
    c.collectives = best_e->samples;
    c.residual_ns = best_e->residual;
  }
  return out;
}

}  // namespace idlescope
