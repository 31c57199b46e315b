// simgpu's parameters, read once from the environment (documented in ../README.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simgpu {

struct KernelRule {
  std::string match;      // substring of the mangled kernel name
  double us = 0;          // fixed duration, or
  int arg_ns_index = -1;  // "@N": the N-th kernel argument (uint64) is the duration in ns
};

struct Config {
  int devices = 1;
  std::vector<int> visible;  // physical ids after CUDA_VISIBLE_DEVICES
  int sms = 132;
  uint64_t mem_bytes = 141000000000ull;  // H200: 141 GB
  double pageable_gbps = 10, pinned_gbps = 25, d2d_gbps = 1500, p2p_gbps = 100;
  double copy_latency_us = 3;
  double kernel_base_us = 3, kernel_wave_us = 5;
  double launch_us = 2;         // host time spent in each launch call
  double start_latency_us = 5;  // from enqueue to the earliest start on the device
  double nccl_gbps = 100, nccl_latency_us = 10;
  double nccl_timeout_s = 120;
  // Device threads (one per stream: kernels, copies, NCCL) run SCHED_FIFO where the process
  // may (CAP_SYS_NICE or RLIMIT_RTPRIO), else at nice -20 where it may: a GPU does not wait for
  // a host CPU. 0 leaves them at the process's own priority.
  int device_rt = 1;
  std::vector<KernelRule> kernel_rules;
};

// Parses the environment on first use; never throws (bad values are reported on stderr,
// prefixed "simgpu:", and the default is kept).
const Config& GetConfig();

// Parses "1.5", "64M", "2G", "512K" (binary multiples) into bytes; false on error.
bool ParseBytes(const char* s, uint64_t* out);

}  // namespace simgpu
