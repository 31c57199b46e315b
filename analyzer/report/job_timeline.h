// JobTimeline: the job as tracks and slices, what the timeline exports write (report/
// timeline_exporters.h: Perfetto's protobuf, Chrome's Trace Event JSON; docs/timeline-export.md).
// A JobTimelineRecorder builds it beside the analysis: a RecordSink for the host calls and GPU
// records, a SliceObserver for the idle slices as the analysis credits them (corrections
// replace what they correct), never reaching into the analysis.
//
// Tracks: a process per traced process (rank processes named by rank), in it a track per thread
// (CUDA calls) with child tracks for its NCCL calls, file and network I/O, syncs and process
// events, and per device ordinal the device's compute, communication and transfer tracks; one
// "GPU idle" group with a track per job device whose slices are the idle time named by cause,
// with the evidence that explains them as arguments. Flows join each CUDA call to the GPU record
// it caused (CUPTI correlation id). Slices that overlap without nesting (kernels of two streams)
// go to numbered sibling lanes, since a track's slices must nest.
//
// Memory: the recorder keeps every record it exports (about 80 bytes each) until the end.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/model/credited_slice.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/record_sink.h"
#include "analyzer/model/symbol_source.h"

namespace idlescope {

struct TimelineTrack {
  enum class Kind : uint8_t { kProcess, kThread, kPlain };
  uint64_t uuid = 0;
  uint64_t parent = 0;  // 0: top level
  Kind kind = Kind::kPlain;
  int32_t pid = 0;  // kProcess, kThread: unique in the timeline (see JobTimeline)
  uint32_t tid = 0;
  std::string name;
  int32_t order = 0;  // among its siblings
};

struct TimelineArg {
  std::string name;
  std::string text;  // a string value; "" when the value is `number`
  int64_t number = 0;
  bool is_number = false;
};

struct TimelineSlice {
  uint64_t track = 0;  // TimelineTrack.uuid
  Ns start = 0;        // job clock
  Ns end = 0;
  std::string name;
  std::string category;  // cuda, nccl, io, sync, process, gpu, idle
  std::vector<TimelineArg> args;
  uint64_t flow_out = 0;  // 0: none; a flow from this slice to the slice with the same flow_in
  uint64_t flow_in = 0;
};

struct JobTimeline {
  std::vector<TimelineTrack> tracks;  // parents before their children
  std::vector<TimelineSlice> slices;  // by start, longer first at equal starts
  // CLOCK_REALTIME at job-clock time 0, and whether a trace file said it.
  Ns realtime_at_zero = 0;
  bool has_realtime = false;
  // The job's span on the job clock.
  Ns start = 0;
  Ns end = 0;
  // GPU records that start before the CUDA call that caused them (the host's and the GPU's
  // clocks disagree by microseconds): they get no flow, since a flow may not go back in time.
  uint64_t flows_before_their_call = 0;
};

class JobTimelineRecorder : public RecordSink, public SliceObserver {
 public:
  void AddProcess(uint32_t process, const ProcessInfo& info) override;
  void AddHostEvent(const HostEvent& event) override;
  void AddGpuRecord(const GpuRecord& record) override;
  void EndProcess(uint32_t process, Ns end) override;
  void AddThreadName(uint32_t process, uint32_t tid, std::string_view name) override;
  void OnSlice(const CreditedSlice& slice) override;

  // The timeline, names resolved with `symbols`, idle tracks named by `device_ids` (the
  // analysis's device numbering, JobAnalysis::DeviceIds).
  JobTimeline Build(const SymbolSource& symbols, std::span<const std::string> device_ids) const;

 private:
  struct Host {
    uint32_t process, tid;
    EventType type;
    Ns start, end;
    uint64_t api_id, path_id, stack, bytes, correlation;
    int32_t fd, device;
    NcclOp nccl_op;
    CopyKind copy_kind;
    MemKind host_mem;
    uint64_t cpu_ns, wait_ns;  // THREAD_SAMPLE
    int32_t syscall;
  };
  struct Gpu {
    uint32_t process, device, stream;
    GpuActivityKind kind;
    bool nccl;
    Ns start, end;
    uint64_t name_id, bytes, correlation, grid;
    CopyKind copy_kind;
  };
  struct Idle {
    Ns end;
    Cause cause;
    std::optional<SliceEvidence> evidence;  // nullopt: residual time
  };
  void PutIdle(uint32_t device, Ns start, const Idle& idle);

  std::vector<ProcessInfo> processes_;
  std::vector<Ns> process_end_;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, std::string>
      thread_names_;  // by (process, tid)
  std::vector<Host> host_;
  std::vector<Gpu> gpu_;
  std::vector<std::map<Ns, Idle>> idle_;  // by device, by start; never overlapping
};

}  // namespace idlescope
