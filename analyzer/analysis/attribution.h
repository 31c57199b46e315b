// Attribution of an idle slice of a device to causes (the "attribution" stage).
//
// Candidates are the things that may explain idle time: host events of the job's threads
// (classified by ClassifyHostEvent) and GPU-side activity of the device itself (NCCL kernels,
// copies). ResolveSlices cuts an idle interval at every candidate boundary and gives each slice
// to the candidate that ranks first:
//   0. after the first death of a process that drove a GPU (a rank that crashed, was killed or
//      exited with an error), its death explains every device's idle time (processes.h,
//      DeathSpan): what the others do then is waiting for it until they are stopped;
//   1. tier: the device's launching threads (what the thread that feeds the GPU was blocked in)
//      before other threads/processes of the job, before GPU-side activity;
//   2. within a tier, the cause's precedence (model/causes.def: transfer, communication,
//      checkpointing, upload, data loading, download, installation, interactive, synchronization,
//      then unknown).
// Three refinements replace a launching-thread winner that only says "waiting": a sync while an
// NCCL kernel or a copy runs on the device is that communication or transfer; a sync or a
// device-to-host copy that has not returned while the device is idle and the thread's sampled run
// waits for a CPU is that wait (cpu_starvation); a read of a pipe or
// socket (waiting for DataLoader workers) while a worker reads files or downloads is that read,
// and while an installer runs (its output read through a pipe) that installation.
// A slice no candidate covers is residual: the gap's kind decides (startup, tail, unknown).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/analysis/event_classes.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

enum class Tier : uint8_t {
  kAfterDeath = 0,       // a rank of the job had died (rank_died): every device
  kLaunchingThread = 1,  // a thread that issues this device's kernels/copies/syncs
  kJobProcess = 2,       // another thread of the launching process, its parents and children
  kGpu = 3,              // activity on the device itself (NCCL kernels, copies)
};

struct Candidate {
  Interval when;
  Cause cause = Cause::kUnknown;
  EventClass event_class = EventClass::kNone;
  bool gpu_side = false;
  bool pageable = false;  // copies: host side pageable
  bool d2h = false;       // host copies: device-to-host (a possible checkpoint snapshot)
  // A device-to-host copy (or the sync after it) that snapshots the model for the checkpoint
  // write that follows on its thread: cause checkpointing, but its bytes are not written bytes.
  bool snapshot = false;
  // A read of a data file (IsDataFilePath): on a launching thread, the unexplained rest of its gap
  // is that thread's data preprocessing (docs/attribution.md, "Preprocessing on the launching
  // thread").
  bool data_read = false;
  NcclOp nccl_op = NCCL_OP_UNSPECIFIED;
  uint32_t process = 0;
  uint32_t tid = 0;
  uint32_t device = 0;     // gpu_side: the job device index
  uint64_t stack = 0;      // per-process StackNode id
  uint64_t object = 0;     // per-process string id: file path, address, program, kernel name
  uint64_t directory = 0;  // file events: hash of the file's directory (0: none)
  uint64_t bytes = 0;
  uint64_t seq = 0;  // the order candidates were added in (analysis/candidate_window.h)
  // A sampled run (THREAD_SAMPLE): its thread's time runnable waiting for a CPU.
  uint32_t wait_ns = 0;
};

struct RankedCandidate {
  const Candidate* candidate;
  Tier tier;
};

// A piece of an idle interval and who explains it (winner = index into the ranked candidates,
// -1 for a residual slice).
struct Slice {
  Interval when;
  int winner = -1;
  Cause cause = Cause::kUnknown;  // meaningless for residual slices
};

// A host call that waits for the device's work: a sync, or a device-to-host copy (synchronous).
bool WaitsForTheDevice(const Candidate& c);

// Slices of `idle` in time order, covering it exactly; adjacent slices with the same winner are
// merged.
std::vector<Slice> ResolveSlices(Interval idle, std::span<const RankedCandidate> candidates);

// Forgets the entries of `items` (a hash map whose values have an `ns`) lighter than the median;
// when that leaves `full` or more (all weigh the same), an arbitrary half: what keeps the bounded
// evidence tables bounded.
template <typename Map>
void ForgetLighterHalf(Map& items, size_t full) {
  std::vector<Ns> times;
  times.reserve(items.size());
  for (const auto& [key, w] : items) times.push_back(w.ns);
  auto middle = times.begin() + static_cast<ptrdiff_t>(times.size() / 2);
  std::nth_element(times.begin(), middle, times.end());
  Ns cut = *middle;
  absl::erase_if(items, [cut](const auto& kv) { return kv.second.ns < cut; });
  if (items.size() >= full) {
    size_t drop = items.size() / 2;
    for (auto it = items.begin(); it != items.end() && drop > 0; --drop) items.erase(it++);
  }
}

// The heaviest keys by time, in bounded memory: once more than `capacity` keys are held, the
// lighter half is forgotten (so a key's figures are exact unless it was forgotten once; with
// millions of distinct files only the heavy ones survive, which are the ones reported).
struct EvidenceKey {
  uint32_t process = 0;
  uint64_t id = 0;
  friend bool operator==(const EvidenceKey&, const EvidenceKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const EvidenceKey& k) {
    return H::combine(std::move(h), k.process, k.id);
  }
};

struct EvidenceWeight {
  Ns ns = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;  // slices credited
};

class TopEvidence {
 public:
  explicit TopEvidence(size_t capacity = 1024) : capacity_(capacity) {}
  // `slices`: 0 when this continues the key's previous slice (one run of a candidate cut where
  // the analysis window stood: Crediting's Run).
  void Add(EvidenceKey key, Ns ns, uint64_t bytes, uint64_t slices = 1);
  // Takes back one Add (a slice given to another cause later); nothing if the key was forgotten.
  void Remove(EvidenceKey key, Ns ns, uint64_t bytes, uint64_t slices = 1);
  void Merge(const TopEvidence& other);
  void Erase(EvidenceKey key) { weights_.erase(key); }
  // The `n` heaviest, heaviest first (ties: by process, then id).
  std::vector<std::pair<EvidenceKey, EvidenceWeight>> Top(size_t n) const;
  bool evicted() const { return evicted_; }
  size_t size() const { return weights_.size(); }
  size_t capacity() const { return capacity_; }
  // Every key held, for a summary (analyzer/shard/); Restore puts one back as it was.
  const absl::flat_hash_map<EvidenceKey, EvidenceWeight>& weights() const { return weights_; }
  void Restore(EvidenceKey key, const EvidenceWeight& weight) { weights_[key] = weight; }
  void RestoreEvicted(bool evicted) { evicted_ = evicted; }

 private:
  void Shrink();
  size_t capacity_;
  bool evicted_ = false;
  absl::flat_hash_map<EvidenceKey, EvidenceWeight> weights_;
};

}  // namespace idlescope
