// Clock alignment across hosts (docs/architecture.md, "Clocks across hosts"). Each trace file's
// times are on its host's CLOCK_MONOTONIC; the header's snapshot of CLOCK_REALTIME at the same
// moment places every host on one time line, but only as well as NTP keeps the hosts' real-time
// clocks together (milliseconds at best). The refinement: a collective of one communicator finishes
// at nearly the same moment on every rank (its NCCL kernels end together once the last rank
// joined), so for two hosts the median difference of their ranks' NCCL kernel ends over the
// collectives they share is the error of their snapshots. Hosts that share no collective are
// chained through others (the pairs with the most shared collectives first); a host that shares
// none with the reference host's component keeps its snapshot alignment, and says so.
//
// The ends come from a first pass over the start of each file (at most kAlignmentReadBytes and
// kAlignmentCollectives per file): per host stream, its NCCL calls in order (those made inside an
// NCCL group are not used: a group launches one kernel for several calls), and per GPU stream its
// NCCL kernels in order, which CUDA runs in the order they were enqueued; the GPU stream of a host
// stream is found from a launch on it whose correlation id names its kernel, or is the only pair
// of the file left.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/job_report.h"
#include "trace.pb.h"

namespace idlescope {

inline constexpr uint64_t kAlignmentReadBytes = 8ull << 20;
inline constexpr size_t kAlignmentCollectives = 1024;

// One collective's end on one rank, in its file's time.
struct CollectiveEnd {
  uint64_t comm = 0;
  uint64_t seq = 0;
  Ns end = 0;
};

// The NCCL calls and kernels of one file's first packets (v1 shape, times in the file's clock),
// linked into collective ends.
class CollectiveEndCollector {
 public:
  void AddEvent(const Event& event, Ns start);
  void AddActivity(const GpuActivity& activity, Ns start);
  // Enough calls and kernels to align on.
  bool Full() const { return calls_ >= kAlignmentCollectives && kernels_ >= kAlignmentCollectives; }
  std::vector<CollectiveEnd> Finish();

 private:
  struct Call {
    Ns start;
    uint64_t comm;
    uint64_t seq;
  };
  struct Stream {  // a host stream's NCCL calls
    std::vector<Call> calls;
    bool grouped = false;  // a call in a group: kernels and calls do not pair one to one
  };
  using GpuStream = std::pair<uint32_t, uint32_t>;  // (device, CUPTI stream id)
  absl::flat_hash_map<uint64_t, Stream> host_streams_;
  absl::flat_hash_map<uint64_t, uint64_t> launch_stream_;   // correlation -> host stream
  absl::flat_hash_map<uint64_t, GpuStream> kernel_stream_;  // correlation -> GPU stream
  absl::flat_hash_map<GpuStream, std::vector<Interval>> nccl_kernels_;
  size_t calls_ = 0;
  size_t kernels_ = 0;
};

// The alignment of `hosts` hosts (0 is the reference), given every file's host and collective
// ends (in the snapshot-aligned job time). correction[h] is what host h's snapshot-aligned times
// are ahead of the reference: subtract it.
struct HostAlignment {
  std::vector<Ns> correction;
  std::vector<HostClock> clocks;  // per host, for the report
};
HostAlignment AlignHosts(const std::vector<std::string>& hosts,
                         const std::vector<uint32_t>& file_host,
                         const std::vector<std::vector<CollectiveEnd>>& file_ends);

}  // namespace idlescope
