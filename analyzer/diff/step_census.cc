#include "analyzer/diff/step_census.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"

namespace idlescope {
namespace {

// A copy's or memset's token in the step sequence: never a string id (small counters).
constexpr uint64_t kActivityToken = uint64_t{1} << 63;

uint64_t MedianOf(const std::map<uint64_t, uint64_t>& histogram, uint64_t total) {
  uint64_t seen = 0;
  for (const auto& [value, count] : histogram) {
    seen += count;
    if (2 * seen >= total) return value;
  }
  return 0;
}

}  // namespace

void StepCensusSink::AddProcess(uint32_t process, const ProcessInfo& /*info*/) {
  if (process >= processes_.size()) processes_.resize(process + 1);
}

std::string StepMarkerName(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
  if (end == name.size()) return std::string(name);
  while (end > 0 && (name[end - 1] == '#' || name[end - 1] == ' ' || name[end - 1] == '_' ||
                     name[end - 1] == '-' || name[end - 1] == ':')) {
    --end;
  }
  return std::string(name.substr(0, end));
}

void StepCensusSink::AddHostEvent(const HostEvent& e) {
  if (e.process >= processes_.size()) return;
  ProcessCensus& p = processes_[e.process];
  if (e.type == NCCL_COLLECTIVE) {
    ++p.collectives_by_comm[e.comm];
  } else if (e.type == NVTX_RANGE && e.count <= 1 && e.end > e.start && !e.path.empty() &&
             p.nvtx_ranges < kMaxStepKernels) {
    // Outermost pushed ranges and started ones (marks have no length).
    p.nvtx_starts[StepMarkerName(e.path)].push_back(e.start);
    ++p.nvtx_ranges;
  }
}

void StepCensusSink::AddGpuRecord(const GpuRecord& r) {
  if (r.process >= processes_.size()) return;
  ProcessCensus& p = processes_[r.process];
  // The step sequence: every kernel (NCCL's too), copy and memset, a copy or memset by its kind.
  uint64_t token = 0;
  if (r.kind == GPU_KERNEL) {
    token = r.name_id;
  } else if (r.kind == GPU_MEMCPY || r.kind == GPU_MEMSET) {
    token =
        kActivityToken | (static_cast<uint64_t>(r.kind) << 8) | static_cast<uint64_t>(r.copy_kind);
  }
  if (token != 0 && p.kernel_names.size() < kMaxStepKernels) {
    p.kernel_names.push_back(token);
    p.kernel_starts.push_back(r.start);
  }
  if (r.kind != GPU_KERNEL || r.nccl) return;
  if (p.last_count == nullptr || r.name_id != p.last_name || r.grid != p.last_grid) {
    p.last_name = r.name_id;
    p.last_grid = r.grid;
    p.last_count = &p.grids_by_name[r.name_id][r.grid];
  }
  ++*p.last_count;
}

std::optional<FoundSteps> FindSteps(const std::vector<uint32_t>& names,
                                    const std::vector<Ns>& starts) {
  const size_t n = names.size();
  if (n < 2 * kMinStepAnchors) return std::nullopt;
  uint32_t distinct = 0;
  for (uint32_t name : names) distinct = std::max(distinct, name + 1);
  // Each name's launches, by index in the sequence.
  std::vector<std::vector<uint32_t>> at(distinct);
  for (size_t i = 0; i < n; ++i) at[names[i]].push_back(static_cast<uint32_t>(i));
  struct Anchor {
    uint32_t name;
    size_t period;
  };
  std::vector<Anchor> anchors;
  for (uint32_t name = 0; name < distinct; ++name) {
    const std::vector<uint32_t>& idx = at[name];
    if (idx.size() < kMinStepAnchors) continue;
    std::map<size_t, size_t> gaps;
    for (size_t k = 1; k < idx.size(); ++k) ++gaps[idx[k] - idx[k - 1]];
    auto most = std::max_element(gaps.begin(), gaps.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (most->first < 2 || 4 * most->second < 3 * (idx.size() - 1)) continue;
    anchors.push_back({name, most->first});
  }
  std::stable_sort(anchors.begin(), anchors.end(), [&](const Anchor& a, const Anchor& b) {
    return a.period != b.period ? a.period < b.period : at[a.name][0] < at[b.name][0];
  });
  for (const Anchor& a : anchors) {
    if (a.period >= n) break;
    size_t same = 0;
    for (size_t i = 0; i + a.period < n; ++i) same += names[i] == names[i + a.period];
    if (5 * same < 4 * (n - a.period)) continue;
    FoundSteps steps{.anchor = a.name, .kernels_per_step = a.period, .durations = {}};
    const std::vector<uint32_t>& idx = at[a.name];
    for (size_t k = 1; k < idx.size(); ++k) {
      steps.durations.push_back(starts[idx[k]] - starts[idx[k - 1]]);
    }
    return steps;
  }
  return std::nullopt;
}

StepCensus StepCensusSink::Census(const SymbolSource& symbols) const {
  absl::flat_hash_map<uint64_t, uint64_t> collectives;
  struct NameStats {
    uint64_t count = 0;
    uint64_t median_grid = 0;
  };
  std::map<std::string, NameStats> kernels;
  for (uint32_t process = 0; process < processes_.size(); ++process) {
    const ProcessCensus& p = processes_[process];
    for (const auto& [comm, count] : p.collectives_by_comm) {
      collectives[comm] = std::max(collectives[comm], count);
    }
    for (const auto& [name_id, grids] : p.grids_by_name) {
      uint64_t total = 0;
      for (const auto& [grid, count] : grids) total += count;
      std::string name = symbols.String(process, name_id);
      if (name.empty()) name = absl::StrCat("kernel#", name_id);
      NameStats& stats = kernels[name];
      if (total > stats.count) stats = {total, MedianOf(grids, total)};
    }
  }
  StepCensus census;
  for (const auto& [comm, count] : collectives) {
    if (count > census.nccl_collectives ||
        (count == census.nccl_collectives && comm < census.nccl_comm)) {
      census.nccl_collectives = count;
      census.nccl_comm = comm;
    }
  }
  for (const auto& [name, stats] : kernels) {
    census.kernels.push_back({name, stats.count, stats.median_grid});
  }
  std::stable_sort(census.kernels.begin(), census.kernels.end(),
                   [](const KernelCount& a, const KernelCount& b) { return a.count > b.count; });
  if (census.kernels.size() > kMaxCensusKernels) census.kernels.resize(kMaxCensusKernels);
  // Steps from NVTX markers: the marker's name (or the name with the most outermost ranges of
  // one process, at least kMinStepAnchors + 1), each range's start begins a step.
  const std::vector<Ns>* marks = nullptr;
  std::string marker;
  for (const ProcessCensus& p : processes_) {
    for (const auto& [name, starts] : p.nvtx_starts) {
      if (!marker_.empty() && name != marker_) continue;
      if (starts.size() <= kMinStepAnchors) continue;
      if (marks == nullptr || starts.size() > marks->size() ||
          (starts.size() == marks->size() && name < marker)) {
        marks = &starts;
        marker = name;
      }
    }
  }
  if (marks != nullptr) {
    std::vector<Ns> sorted = *marks;
    std::sort(sorted.begin(), sorted.end());
    census.steps.source = Steps::Source::kNvtx;
    census.steps.anchor = marker;
    for (size_t k = 1; k < sorted.size(); ++k) {
      census.steps.durations.push_back(sorted[k] - sorted[k - 1]);
    }
    return census;
  }
  // Steps: in the kernels of the process that ran the most (a rank; its workers run none), in
  // start order, names numbered densely.
  uint32_t main = 0;
  for (uint32_t process = 0; process < processes_.size(); ++process) {
    if (processes_[process].kernel_names.size() > processes_[main].kernel_names.size()) {
      main = process;
    }
  }
  if (main < processes_.size()) {
    const ProcessCensus& p = processes_[main];
    std::vector<size_t> order(p.kernel_names.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return p.kernel_starts[a] < p.kernel_starts[b]; });
    absl::flat_hash_map<uint64_t, uint32_t> dense;
    std::vector<uint64_t> ids;
    std::vector<uint32_t> names;
    std::vector<Ns> starts;
    names.reserve(order.size());
    starts.reserve(order.size());
    for (size_t i : order) {
      auto [it, added] = dense.try_emplace(p.kernel_names[i], static_cast<uint32_t>(ids.size()));
      if (added) ids.push_back(p.kernel_names[i]);
      names.push_back(it->second);
      starts.push_back(p.kernel_starts[i]);
    }
    if (std::optional<FoundSteps> found = FindSteps(names, starts)) {
      const uint64_t id = ids[found->anchor];
      if ((id & kActivityToken) != 0) {
        const auto kind = static_cast<GpuActivityKind>((id >> 8) & 0xff);
        const auto copy = static_cast<CopyKind>(id & 0xff);
        // As `idlescope dump` names them: GPU_MEMCPY:COPY_H2D, GPU_MEMSET.
        census.steps.anchor =
            kind == GPU_MEMCPY ? absl::StrCat(GpuActivityKind_Name(kind), ":", CopyKind_Name(copy))
                               : GpuActivityKind_Name(kind);
      } else {
        census.steps.anchor = symbols.String(main, id);
        if (census.steps.anchor.empty()) census.steps.anchor = absl::StrCat("kernel#", id);
      }
      census.steps.source = Steps::Source::kGpuActivity;
      census.steps.kernels_per_step = found->kernels_per_step;
      census.steps.durations = std::move(found->durations);
    }
  }
  return census;
}

}  // namespace idlescope
