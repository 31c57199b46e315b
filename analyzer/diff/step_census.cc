#include "analyzer/diff/step_census.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"

namespace idlescope {
namespace {

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

void StepCensusSink::AddHostEvent(const HostEvent& e) {
  if (e.process >= processes_.size()) return;
  ProcessCensus& p = processes_[e.process];
  if (e.type == NCCL_COLLECTIVE) {
    ++p.collectives_by_comm[e.comm];
  }
}

void StepCensusSink::AddGpuRecord(const GpuRecord& r) {
  if (r.process >= processes_.size()) return;
  ProcessCensus& p = processes_[r.process];
  if (r.kind != GPU_KERNEL || r.nccl) return;
  if (p.last_count == nullptr || r.name_id != p.last_name || r.grid != p.last_grid) {
    p.last_name = r.name_id;
    p.last_grid = r.grid;
    p.last_count = &p.grids_by_name[r.name_id][r.grid];
  }
  ++*p.last_count;
}

Steps StepsOf(const StepsReport& report) {
  return {.source = report.source,
          .anchor = report.anchor,
          .kernels_per_step = report.per_step,
          .durations = report.durations};
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
  return census;
}

}  // namespace idlescope
