#include "analyzer/analysis/startup.h"

#include <algorithm>

#include "analyzer/analysis/event_classes.h"

namespace idlescope {

void Startup::AddProcess(uint32_t process, const ProcessInfo& info) {
  if (process >= processes_.size()) processes_.resize(process + 1);
  Process& p = processes_[process];
  p.pid = info.pid;
  p.rank = info.rank;
  p.start = info.start;
}

void Startup::Note(const HostEvent& e) {
  Process& p = processes_[e.process];
  if (e.type == CUDA_LAUNCH || e.type == CUDA_LAUNCH_SUMMARY || e.type == CUDA_GRAPH_LAUNCH) {
    p.launched = true;
    p.first_launch = e.start;
    return;
  }
  if (e.type >= CUDA_MEMCPY && e.type <= CUDA_LAUNCH_SUMMARY) {
    p.first_cuda = std::min(p.first_cuda, e.start);
    if (e.end - e.start > p.longest_cuda_ns) {
      p.longest_cuda_ns = e.end - e.start;
      p.longest_cuda_api = e.api_id;
    }
    return;
  }
  if (e.type != FILE_READ) return;
  if (IsCodeFilePath(e.path)) {
    p.code_reads += std::max<uint64_t>(e.count, 1);
    p.code_read_bytes += e.bytes;
    p.code_read_ns += std::max<Ns>(e.end - e.start, 0);
  } else if (IsModelCheckpointPath(e.path)) {
    p.model_read_bytes += e.bytes;
  }
}

void Startup::Findings(EvidenceResolver& evidence, std::vector<Finding>* out) const {
  const Process* slowest = nullptr;
  uint32_t index = 0;
  for (uint32_t i = 0; i < processes_.size(); ++i) {
    const Process& p = processes_[i];
    if (!p.launched || p.first_launch < p.start) continue;
    if (slowest == nullptr || p.first_launch - p.start > slowest->first_launch - slowest->start) {
      slowest = &p;
      index = i;
    }
  }
  if (slowest == nullptr) return;
  const Process& p = *slowest;
  Finding first{.kind = FindingKind::kStartupFirstKernel, .ns = p.first_launch - p.start};
  first.pid = p.pid;
  first.rank = p.rank;
  out->push_back(first);
  out->push_back({.kind = FindingKind::kStartupBeforeCuda,
                  .ns = std::min(p.first_cuda, p.first_launch) - p.start,
                  .other_ns = p.code_read_ns,
                  .bytes = p.code_read_bytes,
                  .count = p.code_reads});
  if (p.first_cuda < p.first_launch) {
    Finding cuda{.kind = FindingKind::kStartupCudaToKernel,
                 .ns = p.first_launch - p.first_cuda,
                 .other_ns = p.longest_cuda_ns,
                 .bytes = p.model_read_bytes};
    cuda.api = evidence.String(index, p.longest_cuda_api);
    out->push_back(cuda);
  }
}

}  // namespace idlescope
