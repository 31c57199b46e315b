#include "config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace simgpu {
namespace {

void ReadDouble(const char* var, double* out) {
  const char* v = getenv(var);
  if (v == nullptr || *v == '\0') return;
  char* end = nullptr;
  double d = strtod(v, &end);
  if (end == v || *end != '\0' || d < 0) {
    fprintf(stderr, "simgpu: ignoring %s=%s (not a non-negative number)\n", var, v);
    return;
  }
  *out = d;
}

void ReadInt(const char* var, int* out, int min_value) {
  double d = *out;
  ReadDouble(var, &d);
  if (d < min_value || d > 4096) {
    fprintf(stderr, "simgpu: ignoring %s (out of range)\n", var);
    return;
  }
  *out = static_cast<int>(d);
}

// "name=us" or "name=@N"; false if malformed.
bool ParseRule(const std::string& item, KernelRule* rule) {
  size_t eq = item.find('=');
  if (eq == std::string::npos) eq = item.find_last_of(" \t");
  if (eq == std::string::npos || eq == 0) return false;
  rule->match = item.substr(0, eq);
  while (!rule->match.empty() && (rule->match.back() == ' ' || rule->match.back() == '\t')) {
    rule->match.pop_back();
  }
  std::string value = item.substr(eq + 1);
  size_t b = value.find_first_not_of(" \t");
  if (b == std::string::npos) return false;
  value = value.substr(b);
  char* end = nullptr;
  if (value[0] == '@') {
    long idx = strtol(value.c_str() + 1, &end, 10);
    if (end == value.c_str() + 1 || idx < 0 || idx > 255) return false;
    rule->arg_ns_index = static_cast<int>(idx);
    return true;
  }
  rule->us = strtod(value.c_str(), &end);
  return end != value.c_str() && rule->us >= 0;
}

void AddRules(const std::string& text, char sep, const char* origin, Config* c) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) {
    size_t b = item.find_first_not_of(" \t\r");
    if (b == std::string::npos || item[b] == '#') continue;
    item = item.substr(b);
    while (!item.empty() && (item.back() == '\r' || item.back() == ' ')) item.pop_back();
    KernelRule rule;
    if (ParseRule(item, &rule)) {
      c->kernel_rules.push_back(rule);
    } else {
      fprintf(stderr, "simgpu: ignoring kernel rule '%s' from %s\n", item.c_str(), origin);
    }
  }
}

Config Load() {
  Config c;
  ReadInt("SIMGPU_DEVICES", &c.devices, 0);
  ReadInt("SIMGPU_SMS", &c.sms, 1);
  if (const char* v = getenv("SIMGPU_MEM_BYTES"); v != nullptr && *v != '\0') {
    if (!ParseBytes(v, &c.mem_bytes)) {
      fprintf(stderr, "simgpu: ignoring SIMGPU_MEM_BYTES=%s\n", v);
    }
  }
  ReadDouble("SIMGPU_PAGEABLE_GBPS", &c.pageable_gbps);
  ReadDouble("SIMGPU_PINNED_GBPS", &c.pinned_gbps);
  ReadDouble("SIMGPU_D2D_GBPS", &c.d2d_gbps);
  ReadDouble("SIMGPU_P2P_GBPS", &c.p2p_gbps);
  ReadDouble("SIMGPU_COPY_LATENCY_US", &c.copy_latency_us);
  ReadDouble("SIMGPU_KERNEL_BASE_US", &c.kernel_base_us);
  ReadDouble("SIMGPU_KERNEL_WAVE_US", &c.kernel_wave_us);
  ReadDouble("SIMGPU_LAUNCH_US", &c.launch_us);
  ReadDouble("SIMGPU_START_LATENCY_US", &c.start_latency_us);
  ReadDouble("SIMGPU_NCCL_GBPS", &c.nccl_gbps);
  ReadDouble("SIMGPU_NCCL_LATENCY_US", &c.nccl_latency_us);
  ReadDouble("SIMGPU_NCCL_TIMEOUT_S", &c.nccl_timeout_s);
  ReadInt("SIMGPU_DEVICE_RT", &c.device_rt, 0);
  for (double* bw : {&c.pageable_gbps, &c.pinned_gbps, &c.d2d_gbps, &c.p2p_gbps, &c.nccl_gbps}) {
    if (*bw <= 0) *bw = 1e-3;
  }
  if (const char* v = getenv("SIMGPU_KERNEL_US"); v != nullptr) {
    AddRules(v, ',', "SIMGPU_KERNEL_US", &c);
  }
  if (const char* path = getenv("SIMGPU_KERNEL_CONFIG"); path != nullptr && *path != '\0') {
    std::ifstream in(path);
    if (!in) {
      fprintf(stderr, "simgpu: cannot read SIMGPU_KERNEL_CONFIG=%s\n", path);
    } else {
      std::stringstream all;
      all << in.rdbuf();
      AddRules(all.str(), '\n', path, &c);
    }
  }
  // CUDA_VISIBLE_DEVICES selects and renumbers the simulated devices, as on real hardware.
  for (int i = 0; i < c.devices; ++i) c.visible.push_back(i);
  if (const char* v = getenv("CUDA_VISIBLE_DEVICES"); v != nullptr) {
    std::vector<int> vis;
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      long id = strtol(item.c_str(), &end, 10);
      if (end == item.c_str() || id < 0 || id >= c.devices)
        break;  // CUDA stops at the first bad id
      vis.push_back(static_cast<int>(id));
    }
    c.visible = vis;
  }
  return c;
}

}  // namespace

bool ParseBytes(const char* s, uint64_t* out) {
  char* end = nullptr;
  double d = strtod(s, &end);
  if (end == s || d < 0) return false;
  double mult = 1;
  switch (*end) {
    case '\0':
      break;
    case 'k':
    case 'K':
      mult = 1024.0;
      ++end;
      break;
    case 'm':
    case 'M':
      mult = 1024.0 * 1024;
      ++end;
      break;
    case 'g':
    case 'G':
      mult = 1024.0 * 1024 * 1024;
      ++end;
      break;
    case 't':
    case 'T':
      mult = 1024.0 * 1024 * 1024 * 1024;
      ++end;
      break;
    default:
      return false;
  }
  if (*end == 'i') ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return false;
  *out = static_cast<uint64_t>(d * mult);
  return true;
}

const Config& GetConfig() {
  static const Config* config = new Config(Load());  // leaked: worker threads outlive exit
  return *config;
}

}  // namespace simgpu
