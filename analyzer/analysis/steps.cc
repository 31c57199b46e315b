#include "analyzer/analysis/steps.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace idlescope {

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

std::optional<FoundSteps> FindSteps(const std::vector<uint32_t>& names,
                                    const std::vector<Ns>& starts) {
  const size_t n = names.size();
  if (n < 2 * kMinStepAnchors) return std::nullopt;
  uint32_t distinct = 0;
  for (uint32_t name : names) distinct = std::max(distinct, name + 1);
  // Each name's runs, by index in the sequence.
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
    FoundSteps steps{.anchor = a.name, .kernels_per_step = a.period, .starts = {}};
    for (uint32_t i : at[a.name]) steps.starts.push_back(starts[i]);
    return steps;
  }
  return std::nullopt;
}

std::string ActivityTokenName(uint64_t token) {
  if ((token & kActivityToken) == 0) return "";
  const auto kind = static_cast<GpuActivityKind>((token >> 8) & 0xff);
  const auto copy = static_cast<CopyKind>(token & 0xff);
  return kind == GPU_MEMCPY ? absl::StrCat(GpuActivityKind_Name(kind), ":", CopyKind_Name(copy))
                            : GpuActivityKind_Name(kind);
}

void ProcessStepFinder::AddActivity(const GpuRecord& r) {
  // The step sequence: every kernel (NCCL's too), copy and memset, a copy or memset by its kind.
  uint64_t token = 0;
  if (r.kind == GPU_KERNEL) {
    token = r.name_id;
  } else if (r.kind == GPU_MEMCPY || r.kind == GPU_MEMSET) {
    token =
        kActivityToken | (static_cast<uint64_t>(r.kind) << 8) | static_cast<uint64_t>(r.copy_kind);
  }
  if (token == 0) return;
  ++activities_;
  if (!decided_) {
    tokens_.push_back(token);
    starts_.push_back(r.start);
    if (tokens_.size() >= kStepWindow) Decide();
  } else if (token == anchor_ && anchor_ != 0) {
    ++anchor_runs_;
    if (anchor_starts_.size() < kMaxSteps) anchor_starts_.push_back(r.start);
  }
}

void ProcessStepFinder::AddRange(const HostEvent& e) {
  // Outermost pushed ranges and started ones (marks have no length).
  if (e.count > 1 || e.end <= e.start || e.path.empty() || range_count_ >= kMaxSteps) return;
  ranges_[StepMarkerName(e.path)].push_back(e.start);
  ++range_count_;
}

void ProcessStepFinder::Decide() {
  decided_ = true;
  // In start order (records arrive nearly so), names numbered densely.
  std::vector<size_t> order(tokens_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return starts_[a] < starts_[b]; });
  absl::flat_hash_map<uint64_t, uint32_t> dense;
  std::vector<uint64_t> ids;
  std::vector<uint32_t> names;
  std::vector<Ns> starts;
  names.reserve(order.size());
  starts.reserve(order.size());
  for (size_t i : order) {
    auto [it, added] = dense.try_emplace(tokens_[i], static_cast<uint32_t>(ids.size()));
    if (added) ids.push_back(tokens_[i]);
    names.push_back(it->second);
    starts.push_back(starts_[i]);
  }
  if (std::optional<FoundSteps> found = FindSteps(names, starts)) {
    anchor_ = ids[found->anchor];
    per_step_ = found->kernels_per_step;
    anchor_starts_ = std::move(found->starts);
    anchor_runs_ = anchor_starts_.size();
  }
  tokens_ = {};
  starts_ = {};
}

ProcessSteps ProcessStepFinder::Take(uint32_t process, const std::string& marker) {
  if (!decided_) Decide();
  ProcessSteps p;
  p.process = process;
  p.activities = activities_;
  p.anchor = anchor_;
  p.per_step = per_step_;
  p.anchor_starts = std::move(anchor_starts_);
  p.anchor_runs = anchor_runs_;
  std::sort(p.anchor_starts.begin(), p.anchor_starts.end());
  // The marker: the name asked for, else the one with the most ranges (ties: the first name).
  const std::vector<Ns>* marks = nullptr;
  for (const auto& [name, starts] : ranges_) {
    if (!marker.empty() && name != marker) continue;
    if (marks == nullptr || starts.size() > marks->size() ||
        (starts.size() == marks->size() && name < p.marker)) {
      marks = &starts;
      p.marker = name;
    }
  }
  if (marks != nullptr) {
    p.marker_starts = *marks;
    std::sort(p.marker_starts.begin(), p.marker_starts.end());
  }
  ranges_.clear();
  return p;
}

const ProcessSteps* ChooseSteps(const std::vector<ProcessSteps>& processes, bool* from_markers) {
  const ProcessSteps* marked = nullptr;
  for (const ProcessSteps& p : processes) {
    if (p.marker_starts.size() <= kMinStepAnchors) continue;
    if (marked == nullptr || p.marker_starts.size() > marked->marker_starts.size() ||
        (p.marker_starts.size() == marked->marker_starts.size() && p.marker < marked->marker)) {
      marked = &p;
    }
  }
  *from_markers = marked != nullptr;
  if (marked != nullptr) return marked;
  // Steps: those of the process that ran the most (a rank; its workers run none).
  const ProcessSteps* main = nullptr;
  for (const ProcessSteps& p : processes) {
    if (main == nullptr || p.activities > main->activities) main = &p;
  }
  if (main == nullptr || main->anchor == 0 || main->anchor_starts.size() < 2) return nullptr;
  return main;
}

StepsReport ReportSteps(const ProcessSteps& steps, bool from_markers, std::string anchor,
                        uint32_t pid, Ns job_start, const std::vector<GapReport>& gaps,
                        const std::vector<std::string>& devices) {
  const std::vector<Ns>& starts = from_markers ? steps.marker_starts : steps.anchor_starts;
  StepsReport r;
  if (starts.size() < 2) return r;
  r.source = from_markers ? StepSource::kNvtx : StepSource::kGpuActivity;
  r.anchor = std::move(anchor);
  r.per_step = from_markers ? 0 : steps.per_step;
  r.pid = pid;
  r.first_start = starts.front() - job_start;
  r.steps = std::max<uint64_t>(from_markers ? 0 : steps.anchor_runs, starts.size()) - 1;
  for (size_t k = 1; k < starts.size(); ++k) r.durations.push_back(starts[k] - starts[k - 1]);
  std::vector<Ns> sorted = r.durations;
  std::sort(sorted.begin(), sorted.end());
  r.p25 = sorted[sorted.size() / 4];
  r.median = sorted[sorted.size() / 2];
  r.p90 = sorted[std::min(sorted.size() - 1, sorted.size() * 9 / 10)];
  r.max = sorted.back();
  // The slowest steps: longest first (ties: the earlier), at least twice the median.
  std::vector<size_t> order(r.durations.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return r.durations[a] > r.durations[b]; });
  for (size_t i : order) {
    if (r.slowest.size() == kSlowestSteps || r.durations[i] < 2 * r.median) break;
    SlowStep s{.number = i + 1, .start = starts[i] - job_start, .length = r.durations[i]};
    // The gap that overlaps the step most, of those mostly in it (a gap may begin in the step
    // before: the step's first activity, a copy, can run while the device computes nothing).
    Ns most = 0;
    for (const GapReport& g : gaps) {
      if (std::find(devices.begin(), devices.end(), g.device) == devices.end()) continue;
      const Ns overlap =
          std::min(g.start + g.length, s.start + s.length) - std::max(g.start, s.start);
      if (overlap <= most || 2 * overlap < g.length || g.causes.empty()) continue;
      most = overlap;
      s.gap_ns = g.length;
      s.cause = g.causes.front().first;
      s.cause_ns = g.causes.front().second;
    }
    r.slowest.push_back(s);
  }
  return r;
}

}  // namespace idlescope
