// Startup: what each process did before its first kernel launch, and the findings of the startup
// cause: for the process that took longest from its start to its first kernel (every rank starts
// alike; the slowest one is what the GPUs waited for), the time before its first CUDA call
// (imports: its reads of code files) and from that call to the first kernel (CUDA context, model
// construction: the model files it read, its longest CUDA call). docs/attribution.md, "The
// numbers", startup's breakdown.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "analyzer/analysis/evidence.h"
#include "analyzer/model/findings.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

class Startup {
 public:
  struct Process {
    uint32_t pid = 0;
    int32_t rank = -1;
    Ns start = 0;
    bool launched = false;
    Ns first_launch = 0;                             // start of its first kernel launch
    Ns first_cuda = std::numeric_limits<Ns>::max();  // start of its first CUDA runtime call
    Ns longest_cuda_ns = 0;         // the longest CUDA call before the first launch
    uint64_t longest_cuda_api = 0;  // ... and its API's string id ("cudaMalloc": context creation)
    uint64_t code_reads = 0;        // reads of .py/.pyc/.so files: imports, library loading
    uint64_t code_read_bytes = 0;
    Ns code_read_ns = 0;
    uint64_t model_read_bytes = 0;  // model files read: loading weights
  };

  void AddProcess(uint32_t process, const ProcessInfo& info);
  // Whether `process` launched a kernel yet: only events before that are startup's.
  bool launched(uint32_t process) const { return processes_[process].launched; }
  // An event of a process that has not launched yet.
  void Note(const HostEvent& event);

  // kStartupFirstKernel, kStartupBeforeCuda and kStartupCudaToKernel (when a CUDA call came
  // before the first launch) of the slowest launching process; nothing when none launched.
  void Findings(EvidenceResolver& evidence, std::vector<Finding>* out) const;

  // For summaries (analyzer/shard/): a process's state, and putting it back.
  const Process& process(uint32_t i) const { return processes_[i]; }
  void Restore(uint32_t i, const Process& p) {
    if (i >= processes_.size()) processes_.resize(i + 1);
    processes_[i] = p;
  }

 private:
  std::vector<Process> processes_;
};

}  // namespace idlescope
