// The job's devices (docs/attribution.md, "Devices"): a device is its host and DeviceInfo.uuid;
// without a uuid, its host and the CUDA_VISIBLE_DEVICES entry the process's ordinal points to,
// else its host and the ordinal. Processes that share a device share its timeline. Per device:
// its timeline, the threads that launch on it (their calls name it), the processes that use it;
// per process: its ordinals, the DeviceInfos it wrote, its device allocations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "analyzer/analysis/timeline.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

struct JobDevice {
  std::string id;  // "host/uuid", "host/<CUDA_VISIBLE_DEVICES entry>" or "host/<ordinal>"
  std::string host;
  DeviceProps props;
  bool has_props = false;
  int32_t rank = -1;  // the rank of the first process that used it
  DeviceTimeline timeline;
  absl::flat_hash_set<uint64_t> launcher_threads;  // ThreadKey(process, tid)
  uint64_t launches = 0;                           // kernel launches seen on the host side
  Ns launcher_cpu_ns = 0;  // the sampled CPU time of its launching threads (THREAD_SAMPLE runs)
  absl::flat_hash_set<uint32_t> processes;  // that called it
  // When its launching threads were in blocking host work (IsBlockingHostWork): a short gap
  // looks for its candidates only when one of these overlaps it (most gaps: none). Those ending
  // before the timeline's attributed_until() are dropped.
  std::deque<Interval> blocking_host_work;

  JobDevice(uint32_t index, Ns job_start, Ns min_gap) : timeline(index, job_start, min_gap) {}
};

inline uint64_t ThreadKey(uint32_t process, uint32_t tid) {
  return (uint64_t{process} << 32) | tid;
}

class JobDevices {
 public:
  explicit JobDevices(Ns min_gap) : min_gap_(min_gap) {}
  // Devices created from now on start their timelines at `job_start`.
  void Start(Ns job_start) { job_start_ = job_start; }

  void AddProcess(uint32_t process, const ProcessInfo& info);
  void Reserve(size_t processes) { processes_.reserve(processes); }
  void AddDeviceInfo(uint32_t process, const DeviceProps& props);

  // The job device of `process`'s ordinal. *linked is set when the process had not used the
  // device before (it is now one of its processes).
  uint32_t DeviceFor(uint32_t process, uint32_t ordinal, bool* linked) {
    Process& p = processes_[process];
    if (ordinal == p.cached_ordinal) return p.cached_device;
    return Lookup(process, ordinal, linked);
  }
  // A launching call (launch, copy, sync, collective) of thread `tid` naming `ordinal`: whether
  // it is another thread or device than the process's last one (most calls come from one
  // thread, so the device's launcher set is only touched when this changes).
  bool NewLauncher(uint32_t process, uint32_t tid, uint32_t ordinal) {
    Process& p = processes_[process];
    uint64_t thread = ThreadKey(process, tid);
    if (thread == p.last_launcher && ordinal == p.last_launcher_ordinal) return false;
    p.last_launcher = thread;
    p.last_launcher_ordinal = ordinal;
    return true;
  }

  // Device memory of `process`: an allocation on `device`, and a free by its pointer.
  void Allocate(uint32_t process, uint32_t device, uint64_t ptr, uint64_t bytes);
  void Free(uint32_t process, uint64_t ptr);

  // Links `process` to `device`; false when it was already. The device's rank is that of the
  // first process with one.
  bool Link(uint32_t device, uint32_t process);
  // Unlinks every process and returns what was linked, (process, device) in link-set order, so
  // the caller links them again (after the families changed).
  std::vector<std::pair<uint32_t, uint32_t>> Unlink();

  size_t size() const { return devices_.size(); }
  JobDevice& operator[](uint32_t i) { return devices_[i]; }
  const JobDevice& operator[](uint32_t i) const { return devices_[i]; }

  // The most devices `process`'s DeviceInfos said it could see (UnusedVisibleOnHosts).
  uint32_t VisibleDevices(uint32_t process) const {
    return process < processes_.size() ? processes_[process].visible_devices : 0;
  }

 private:
  struct Process {
    std::string host;
    int32_t rank = -1;
    std::vector<std::string> visible_tokens;  // CUDA_VISIBLE_DEVICES entries
    uint32_t visible_devices = 0;
    absl::flat_hash_map<uint32_t, uint32_t> device_by_ordinal;
    absl::flat_hash_map<uint32_t, DeviceProps> props_by_ordinal;
    absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint64_t>> allocations;  // ptr -> dev, bytes
    uint32_t cached_ordinal = ~uint32_t{0};  // the last ordinal looked up, and its device
    uint32_t cached_device = 0;
    uint64_t last_launcher = ~uint64_t{0};
    uint32_t last_launcher_ordinal = 0;
  };
  uint32_t Lookup(uint32_t process, uint32_t ordinal, bool* linked);
  static void SetProps(JobDevice& d, const DeviceProps& props);

  Ns min_gap_;
  Ns job_start_ = 0;
  std::vector<Process> processes_;
  std::deque<JobDevice> devices_;  // a deque: references stay valid as devices are added
  absl::flat_hash_map<std::string, uint32_t> device_by_key_;
};

}  // namespace idlescope
