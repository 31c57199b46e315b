#include "analyzer/analysis/device_result.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_split.h"

namespace idlescope {

UnusedVisibleByHost UnusedVisibleOnHosts(const std::vector<ProcessInfo>& processes,
                                         const std::vector<uint32_t>& visible_devices,
                                         const std::vector<DeviceResult>& devices) {
  absl::flat_hash_map<std::string, uint32_t> most_visible;
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> tokens;
  for (uint32_t i = 0; i < processes.size(); ++i) {
    const ProcessInfo& info = processes[i];
    uint32_t& visible = most_visible[info.host];
    if (i < visible_devices.size()) visible = std::max(visible, visible_devices[i]);
    for (absl::string_view t :
         absl::StrSplit(info.cuda_visible_devices, ',', absl::SkipWhitespace())) {
      tokens[info.host].insert(std::string(t));
    }
  }
  absl::flat_hash_map<std::string, size_t> used;
  for (const DeviceResult& d : devices) ++used[d.host];
  UnusedVisibleByHost unused;
  for (const auto& [host, most] : most_visible) {
    auto t = tokens.find(host);
    auto u = used.find(host);
    const size_t visible = std::max<size_t>(most, t == tokens.end() ? 0 : t->second.size());
    const size_t seen = u == used.end() ? 0 : u->second;
    unused[host] = visible > seen ? static_cast<uint32_t>(visible - seen) : 0;
  }
  // Hosts of devices without a process (none in a consistent job) count none unused.
  for (const DeviceResult& d : devices) unused.try_emplace(d.host, 0);
  return unused;
}

TailChange TailChangeAt(const DeviceResult& d, Ns job_end, Ns min_gap) {
  if (job_end <= d.finished_at) return TailChange::kNone;
  if (d.first_kernel < 0) return TailChange::kExtend;  // a whole-span gap, always attributed
  const Ns before = d.finished_at - d.last_kernel_end;
  const Ns after = job_end - d.last_kernel_end;
  if (before > 0 && IsShortGap(before, min_gap, GapKind::kTail) &&
      !IsShortGap(after, min_gap, GapKind::kTail)) {
    return TailChange::kRemap;
  }
  return TailChange::kExtend;
}

void ExtendToJobEnd(DeviceResult& d, Ns job_end, Ns min_gap) {
  const Ns added = job_end - d.finished_at;
  if (added <= 0) return;
  const Ns before = d.finished_at - d.last_kernel_end;
  d.finished_at = job_end;
  if (d.first_kernel >= 0 && before == 0) {
    // No gap where the device was finished: a new one, that nothing explains.
    if (IsShortGap(added, min_gap, GapKind::kTail)) {
      ++d.short_gaps;
      d.short_gap_ns += added;
      return;
    }
    ++d.long_gaps;
    d.has_last_gap = true;
    d.last_gap = ClosedGap{};
    d.last_gap.gap = {d.last_kernel_end, d.last_kernel_end};
    d.last_gap.kind = GapKind::kTail;
  } else if (d.first_kernel >= 0 && IsShortGap(before, min_gap, GapKind::kTail)) {
    d.short_gap_ns += added;  // still short (one growing long is kRemap)
    return;
  }
  if (d.has_last_gap) ExtendClosedGap(d.last_gap, job_end, d.causes);
}

}  // namespace idlescope
