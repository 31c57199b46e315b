// The job's timeline as tracks and slices, what the timeline exports write (report/
// timeline_exporters.h: Perfetto's protobuf, Chrome's Trace Event JSON; docs/timeline-export.md),
// streamed in two reads of the job's files so that memory stays flat in the trace's length:
//   1. beside the analysis, a JobTimelineRecorder (a RecordSink and a SliceObserver) keeps what
//      is small and only final at the end: the processes and their ends, the threads' names, and
//      the idle slices as the analysis credits them (corrections replace what they correct);
//   2. a second read feeds a TimelineStream (a RecordSink) that turns each record into a slice,
//      holds it until the read has passed its start (AdvanceTo: the same reorder window as the
//      analysis), merges the idle slices in, and hands slices in time order to a TimelineWriter
//      (the format), which writes them out at once.
//
// Tracks: a process per traced process (rank processes named by rank), in it a track per thread
// (CUDA calls) with child tracks for its NCCL calls, file and network I/O, syncs and process
// events, and per device ordinal the device's compute, communication and transfer tracks; one
// "GPU idle" group with a track per job device whose slices are the idle time named by cause,
// with the evidence that explains them as arguments. Flows join each CUDA call to the GPU record
// it caused (CUPTI correlation id) when that record starts within the reorder window of the call.
// Slices that overlap without nesting (kernels of two streams) go to numbered sibling lanes,
// since a track's slices must nest.
//
// Memory: the idle slices (one per stretch of idle time of one cause and evidence), the tracks,
// and the records of one reorder window; never the whole trace.
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "analyzer/model/credited_slice.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/record_sink.h"
#include "analyzer/model/symbol_source.h"
#include "analyzer/report/exporter.h"

namespace idlescope {

struct TimelineTrack {
  enum class Kind : uint8_t { kProcess, kThread, kPlain };
  uint64_t uuid = 0;
  uint64_t parent = 0;  // 0: top level
  Kind kind = Kind::kPlain;
  int32_t pid = 0;  // kProcess, kThread: unique in the timeline
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

// What a file of the timeline states first: the job clock.
struct TimelineClock {
  Ns start = 0;  // the job's start on the job clock
  // CLOCK_REALTIME at job-clock time 0, and whether a trace file said it.
  Ns realtime_at_zero = 0;
  bool has_realtime = false;
};

// What part of the job is written, and in how many files (`idlescope export --from --to --ranks
// --max-bytes`).
struct TimelineOptions {
  // Seconds from the job's start: the slices that overlap [from_s, to_s) are written whole.
  double from_s = 0;
  double to_s = -1;  // < 0: to the job's end
  // The processes of these ranks (a process without a rank goes with its nearest ranked
  // ancestor on its host) and the idle tracks of their devices; empty: every process.
  std::vector<int32_t> ranks;
  // Files of at most this many bytes each (Output::NextPart); 0: one file.
  uint64_t max_bytes = 0;
  // A whole-job view (`--level summary`): the idle slices (gaps by cause), the NCCL calls, and
  // per device and lane a "busy" slice per second instead of every GPU record; no other host call.
  bool summary = false;
};

// A format of the timeline (report/perfetto_export.cc, report/chrome_export.cc). Per file:
// BeginFile, then tracks (each before its first slice, parents first) and slices in time order
// (longer first at equal starts), then EndFile. A writer keeps per file only what it must to
// write the next slice (interned names, the ends of open slices).
class TimelineWriter {
 public:
  virtual ~TimelineWriter() = default;
  virtual void BeginFile(const TimelineClock& clock, Output& out) = 0;
  virtual void DeclareTrack(const TimelineTrack& track, Output& out) = 0;
  virtual void AddSlice(const TimelineSlice& slice, Output& out) = 0;
  virtual void EndFile(Output& out) = 0;
  // At least the bytes that AddSlice(slice) and then EndFile would add to the file.
  virtual uint64_t Bound(const TimelineSlice& slice) const = 0;
};

// The first read: what the timeline needs from the whole job before its first slice is written.
// The idle slices of the last kRecentIdle of the read stay in memory, where the analysis's
// corrections change them; older ones go to an unnamed temporary file (tmpfile(3): gone with the
// process) in time order, and what changes them later (a correction reaching back further, the
// residual time of a long gap handed out when it closes) is kept in memory over them: the
// timeline's idle slices are the file's, overlaid by those.
class JobTimelineRecorder : public RecordSink, public SliceObserver {
 public:
  // Idle slices that start this long before the read's frontier go to the file.
  static constexpr Ns kRecentIdle = 30'000'000'000;  // 30 s

  JobTimelineRecorder() = default;
  ~JobTimelineRecorder() override;
  JobTimelineRecorder(const JobTimelineRecorder&) = delete;
  JobTimelineRecorder& operator=(const JobTimelineRecorder&) = delete;

  void AddProcess(uint32_t process, const ProcessInfo& info) override;
  void AddHostEvent(const HostEvent& event) override;
  void AddGpuRecord(const GpuRecord& record) override;
  void EndProcess(uint32_t process, Ns end) override;
  void AddThreadName(uint32_t process, uint32_t tid, std::string_view name) override;
  void AdvanceTo(Ns t) override;
  void OnSlice(const CreditedSlice& slice) override;

  TimelineClock Clock() const;
  // The end of the first read: every idle slice in the file, read back from its start.
  void Seal();
  // Idle slices written to the file, and the most kept over it.
  uint64_t spilled() const { return spilled_; }

 private:
  friend class TimelineStream;
  struct Idle {
    Ns end;
    Cause cause;
    std::optional<SliceEvidence> evidence;  // nullopt: residual time
  };
  using IdleMap = std::map<Ns, Idle>;  // by start; never overlapping
  // An idle slice as the file holds it.
  struct Spilled {
    Ns start, end;
    uint32_t device;
    uint8_t cause;
    bool has_evidence;
    SliceEvidence evidence;
  };
  // Puts `idle` at `start`, cutting out what it overlaps: a correction replaces what it corrects.
  static void PutIdle(IdleMap& slices, Ns start, const Idle& idle);
  // The recent idle slices that start before `cut`, to the file in time order.
  void Spill(Ns cut);
  bool ReadSpilled(Spilled* out);

  std::vector<ProcessInfo> processes_;
  std::vector<Ns> process_end_;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, std::string>
      thread_names_;              // by (process, tid)
  std::vector<IdleMap> recent_;   // by device
  std::vector<IdleMap> overlay_;  // by device: over the file's slices, before flushed_
  std::vector<Ns> flushed_;       // by device: the file holds its slices before this
  std::vector<bool> has_idle_;    // by device
  std::FILE* spill_ = nullptr;
  Ns last_cut_ = std::numeric_limits<Ns>::min();
  uint64_t spilled_ = 0;
};

// What a TimelineStream wrote.
struct TimelineCounts {
  uint64_t tracks = 0;
  uint64_t slices = 0;
  uint64_t files = 0;
  uint64_t bytes = 0;
  // GPU records that start before the CUDA call that caused them (the host's and the GPU's
  // clocks disagree by microseconds): they get no flow, since a flow may not go back in time.
  uint64_t flows_before_their_call = 0;
  // Records that arrived after the read had passed their start by more than the reorder window:
  // written where they arrived, out of time order.
  uint64_t late_records = 0;
};

// The second read: records in, slices out through `writer` to `out`, one file or several
// (options.max_bytes). `recorder` (the first read's), `symbols` and `device_ids` (the analysis's
// device numbering, JobAnalysis::DeviceIds, with `device_ranks` their ranks, -1: none) must
// outlive it.
class TimelineStream : public RecordSink {
 public:
  TimelineStream(JobTimelineRecorder& recorder, const SymbolSource& symbols,
                 std::span<const std::string> device_ids, std::span<const int32_t> device_ranks,
                 const TimelineOptions& options, TimelineWriter& writer, Output& out);

  void AddProcess(uint32_t /*process*/, const ProcessInfo& /*info*/) override {}
  void AddHostEvent(const HostEvent& event) override;
  void AddGpuRecord(const GpuRecord& record) override;
  void AdvanceTo(Ns t) override;
  // After the read: the rest of the slices, and the end of the last file.
  void Finish();

  const TimelineCounts& counts() const { return counts_; }

 private:
  struct Host {
    uint32_t process, tid;
    EventType type;
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
    uint64_t name_id, bytes, correlation, grid;
    CopyKind copy_kind;
  };
  enum class Source : uint8_t { kHost, kGpu, kIdle };
  // A record or idle slice waiting for the read to pass its start.
  struct Pending {
    Ns start, end;
    uint64_t seq;
    Source source;
    uint32_t device;  // kIdle
    union {
      Host host;
      Gpu gpu;
    };
  };
  struct Earlier {  // for a min-heap: by start, longer first, then by arrival
    bool operator()(const Pending& a, const Pending& b) const {
      return a.start != b.start ? a.start > b.start
             : a.end != b.end   ? a.end < b.end
                                : a.seq > b.seq;
    }
  };
  // A flow's two ends while either is pending.
  struct Flow {
    Ns host_start = 0;
    uint64_t host_seq = 0;  // 0: no call seen
    Ns gpu_start = 0;
    uint64_t gpu_seq = 0;    // the first GPU record seen; 0: none
    bool committed = false;  // the call was written with the flow
    bool gpu_written = false;
  };
  struct Lanes {
    struct Lane {
      uint64_t uuid;
      std::vector<Ns> open;  // ends of the slices still open, outermost first
    };
    std::vector<Lane> lanes;
  };
  struct OutSlice {
    TimelineSlice slice;
    uint64_t seq;
  };
  struct OutEarlier {
    bool operator()(const OutSlice& a, const OutSlice& b) const {
      const TimelineSlice& x = a.slice;
      const TimelineSlice& y = b.slice;
      return x.start != y.start ? x.start > y.start
             : x.end != y.end   ? x.end < y.end
                                : a.seq > b.seq;
    }
  };

  // Overlaps [from_, to_) (a slice of no length: begins in it).
  bool InWindow(Ns start, Ns end) const;
  bool Selected(uint32_t process, Ns start, Ns end) const;
  // The next record or idle slice, numbered in arrival order; an end before the start is the
  // start.
  Pending Next(Source source, Ns start, Ns end);
  void Push(const Pending& p);
  void PushIdleBefore(Ns t);
  void Release(Ns t);
  void Place(const Pending& p);
  // A summary's busy slice of one process, device and lane, while the read is in its second.
  struct Coarse {
    bool open = false;
    TimelineSlice slice;
    Ns bucket_end = 0;
    Ns last_end = std::numeric_limits<Ns>::min();  // of the one before
    uint64_t records = 0;
    Ns busy = 0;  // the records' time, summed
    uint64_t seq = 0;
  };
  static constexpr Ns kCoarseNs = 1'000'000'000;
  void Coarsen(const Pending& p);
  void CloseCoarse(Coarse& c);
  void CloseCoarseBefore(Ns t);
  // A slice onto a lane of its track, and the slices that start before it written.
  void Lay(TimelineSlice s, uint64_t seq);
  TimelineSlice HostSlice(const Pending& p);
  TimelineSlice GpuSlice(const Pending& p);
  TimelineSlice IdleSlice(uint32_t device, Ns start, const JobTimelineRecorder::Idle& idle) const;
  void PushIdle(uint32_t device, Ns start, const JobTimelineRecorder::Idle& idle);
  void Emit(TimelineSlice slice);
  void Write(const TimelineSlice& slice);
  void StartFile();
  void Declare(uint64_t uuid);
  uint64_t NewTrack(TimelineTrack track);
  uint64_t ThreadTrack(uint32_t process, uint32_t tid);
  uint64_t HostLaneTrack(uint32_t process, uint32_t tid, uint8_t lane);
  uint64_t GpuLaneTrack(uint32_t process, uint32_t device, uint8_t lane);
  uint64_t FlowId(uint32_t process, uint64_t correlation) const;

  JobTimelineRecorder& recorder_;
  const SymbolSource& symbols_;
  const TimelineOptions& options_;
  TimelineWriter& writer_;
  // The bytes of the current file, counted as they go to `out_`.
  class CountingOutput : public Output {
   public:
    explicit CountingOutput(Output& out) : out_(out) {}
    void Write(std::string_view bytes) override {
      bytes_ += bytes.size();
      out_.Write(bytes);
    }
    bool NextPart() override { return out_.NextPart(); }
    uint64_t bytes_ = 0;

   private:
    Output& out_;
  } out_;

  TimelineClock clock_;
  Ns from_ = 0, to_ = 0;        // job clock
  std::vector<bool> selected_;  // by process
  std::vector<int32_t> process_pid_;
  std::vector<uint64_t> process_track_;

  std::vector<TimelineTrack> tracks_;  // by uuid - 1
  std::vector<bool> declared_;         // in the current file, by uuid - 1
  std::vector<uint64_t> always_;       // declared at the start of every file
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint64_t> thread_track_;
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint8_t>, uint64_t> host_lane_;
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint8_t>, uint64_t> gpu_lane_;
  std::vector<uint64_t> idle_track_;  // by device; 0: not written

  std::priority_queue<Pending, std::vector<Pending>, Earlier> pending_;
  uint64_t seq_ = 0;
  Ns released_ = std::numeric_limits<Ns>::min();
  // The next idle slice of the recorder's file, and per device the next of its overlay, not yet
  // pending.
  JobTimelineRecorder::Spilled next_spilled_;
  bool has_spilled_ = false;
  std::vector<JobTimelineRecorder::IdleMap::const_iterator> next_overlay_;
  absl::flat_hash_map<uint64_t, TimelineSlice> idle_slices_;  // pending, by seq
  absl::flat_hash_map<uint64_t, Flow> flows_;                 // by flow id
  absl::flat_hash_map<uint64_t, Lanes> lanes_;                // by base track
  std::priority_queue<OutSlice, std::vector<OutSlice>, OutEarlier> out_slices_;
  std::map<std::tuple<uint32_t, uint32_t, uint8_t>, Coarse> coarse_;  // summary
  Ns coarse_min_ = std::numeric_limits<Ns>::max();  // the earliest open busy slice's start
  Ns coarse_due_ = std::numeric_limits<Ns>::max();  // the earliest open busy slice's second end

  // Splitting (options.max_bytes): once a file is nearly full no new flow begins, and the file
  // ends when no flow is open across it (or when the next slice would not fit).
  bool closing_ = false;
  absl::flat_hash_set<uint64_t> open_flows_;  // written flow_out, flow_in not yet
  absl::flat_hash_set<uint64_t> cut_flows_;   // open when a file ended: no flow_in later
  bool file_empty_ = true;
  TimelineCounts counts_;
};

}  // namespace idlescope
