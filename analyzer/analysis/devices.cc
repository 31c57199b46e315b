#include "analyzer/analysis/devices.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace idlescope {

void JobDevices::AddProcess(uint32_t process, const ProcessInfo& info) {
  if (process >= processes_.size()) processes_.resize(process + 1);
  Process& p = processes_[process];
  p.host = info.host;
  p.rank = info.rank;
  for (absl::string_view token :
       absl::StrSplit(info.cuda_visible_devices, ',', absl::SkipWhitespace())) {
    p.visible_tokens.emplace_back(token);
  }
}

void JobDevices::SetProps(JobDevice& d, const DeviceProps& props) {
  d.props = props;
  d.has_props = true;
  d.timeline.SetSmCount(props.sm_count);
}

void JobDevices::AddDeviceInfo(uint32_t process, const DeviceProps& props) {
  Process& p = processes_[process];
  p.props_by_ordinal[props.ordinal] = props;
  p.visible_devices = std::max(p.visible_devices, props.visible_devices);
  auto it = p.device_by_ordinal.find(props.ordinal);
  if (it != p.device_by_ordinal.end() && !devices_[it->second].has_props) {
    SetProps(devices_[it->second], props);
  }
}

uint32_t JobDevices::Lookup(uint32_t process, uint32_t ordinal, bool* linked) {
  Process& p = processes_[process];
  auto it = p.device_by_ordinal.find(ordinal);
  if (it != p.device_by_ordinal.end()) {
    p.cached_ordinal = ordinal;
    p.cached_device = it->second;
    return it->second;
  }
  // Identity: the uuid when the process told it; else the host and the physical device named
  // by CUDA_VISIBLE_DEVICES (or the ordinal when that is unset).
  std::string key;
  auto props = p.props_by_ordinal.find(ordinal);
  if (props != p.props_by_ordinal.end() && !props->second.uuid.empty()) {
    key = absl::StrCat(p.host, "/", props->second.uuid);
  } else if (ordinal < p.visible_tokens.size()) {
    key = absl::StrCat(p.host, "/", p.visible_tokens[ordinal]);
  } else {
    key = absl::StrCat(p.host, "/", ordinal);
  }
  auto [slot, inserted] = device_by_key_.try_emplace(key, devices_.size());
  if (inserted) {
    devices_.emplace_back(static_cast<uint32_t>(devices_.size()), job_start_, min_gap_);
    devices_.back().id = key;
    devices_.back().host = p.host;
    devices_.back().rank = p.rank;
  }
  uint32_t index = slot->second;
  if (props != p.props_by_ordinal.end() && !devices_[index].has_props) {
    SetProps(devices_[index], props->second);
  }
  p.device_by_ordinal[ordinal] = index;
  *linked = Link(index, process);
  return index;
}

bool JobDevices::Link(uint32_t device, uint32_t process) {
  JobDevice& d = devices_[device];
  if (!d.processes.insert(process).second) return false;
  if (d.rank < 0) d.rank = processes_[process].rank;
  return true;
}

std::vector<std::pair<uint32_t, uint32_t>> JobDevices::Unlink() {
  std::vector<std::pair<uint32_t, uint32_t>> linked;
  for (uint32_t d = 0; d < devices_.size(); ++d) {
    for (uint32_t process : devices_[d].processes) linked.push_back({process, d});
    devices_[d].processes.clear();
  }
  return linked;
}

void JobDevices::Allocate(uint32_t process, uint32_t device, uint64_t ptr, uint64_t bytes) {
  devices_[device].timeline.AddAllocation(static_cast<int64_t>(bytes));
  processes_[process].allocations[ptr] = {device, bytes};
}

void JobDevices::Free(uint32_t process, uint64_t ptr) {
  auto& allocations = processes_[process].allocations;
  auto it = allocations.find(ptr);
  if (it == allocations.end()) return;
  devices_[it->second.first].timeline.AddAllocation(-static_cast<int64_t>(it->second.second));
  allocations.erase(it);
}

}  // namespace idlescope
