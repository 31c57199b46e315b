#include "analyzer/report/job_timeline.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "analyzer/model/causes.h"
#include "analyzer/report/text_cat.h"
#include "analyzer/report/units.h"

namespace idlescope {
namespace {

// The child track of a thread an event goes to; kCuda is the thread's own track.
enum class HostLane : uint8_t { kCuda, kNccl, kIo, kSync, kProcess, kSampled };
constexpr std::string_view kHostLaneName[] = {"CUDA", "NCCL", "I/O", "syncs", "process", "sampled"};
constexpr std::string_view kHostLaneCategory[] = {"cuda", "nccl",    "io",
                                                  "sync", "process", "sampler"};
static_assert(std::size(kHostLaneName) == static_cast<size_t>(HostLane::kSampled) + 1 &&
              std::size(kHostLaneCategory) == std::size(kHostLaneName));

HostLane LaneOf(EventType type) {
  if (type == THREAD_SAMPLE) return HostLane::kSampled;
  if (type == CUDA_SYNC) return HostLane::kSync;
  if (type >= CUDA_MEMCPY && type <= CUDA_LAUNCH_SUMMARY) return HostLane::kCuda;
  if (type >= NCCL_COLLECTIVE && type <= NCCL_COMM_DESTROY) return HostLane::kNccl;
  if (type >= FILE_OPEN && type <= NET_SEND) return HostLane::kIo;
  return HostLane::kProcess;
}

// A device ordinal's tracks.
enum class GpuLane : uint8_t { kCompute, kCommunication, kTransfer, kOther };
constexpr std::string_view kGpuLaneName[] = {"compute", "communication", "transfer", "other"};
static_assert(std::size(kGpuLaneName) == static_cast<size_t>(GpuLane::kOther) + 1);

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string CopyKindName(CopyKind kind) {
  switch (kind) {
    case COPY_H2D:
      return "HtoD";
    case COPY_D2H:
      return "DtoH";
    case COPY_D2D:
      return "DtoD";
    case COPY_H2H:
      return "HtoH";
    case COPY_PEER:
      return "peer";
    default:
      return "";
  }
}

// A stack on one line, innermost first: "save <- train_step <- main".
std::string StackText(const SymbolSource& symbols, uint32_t process, uint64_t stack) {
  if (stack == 0) return "";
  std::string out;
  int shown = 0;
  for (const SymbolFrame& f : symbols.Stack(process, stack)) {
    if (shown++ == 12) {
      out += " <- ...";
      break;
    }
    if (!out.empty()) out += " <- ";
    if (!f.function.empty()) {
      CatTo(&out, f.function);
    } else {
      absl::StrAppendFormat(&out, "%s+0x%x", Basename(f.module), f.rel_pc);
    }
    if (!f.file.empty()) CatTo(&out, " (", Basename(f.file), ":", f.line, ")");
  }
  return out;
}

// What kind of event explains an idle slice (analysis/event_classes.h), in the export's words.
std::string_view EventClassName(EventClass c) {
  switch (c) {
    case EventClass::kCopyPageable:
      return "pageable copy";
    case EventClass::kCopyPinned:
      return "pinned copy";
    case EventClass::kNccl:
      return "NCCL call";
    case EventClass::kCheckpointWrite:
      return "checkpoint write";
    case EventClass::kUploadWrite:
      return "upload write";
    case EventClass::kIpcWrite:
      return "pipe or local socket write";
    case EventClass::kPeerSend:
      return "send to a peer";
    case EventClass::kReadLocal:
      return "local file read";
    case EventClass::kReadRemote:
      return "remote file read";
    case EventClass::kReadWorkerQueue:
      return "wait for a worker";
    case EventClass::kDownload:
      return "download";
    case EventClass::kInstaller:
      return "package installer";
    case EventClass::kTerminalRead:
      return "terminal read";
    case EventClass::kIdleWait:
      return "idle wait (sleep, event loop)";
    case EventClass::kSync:
      return "CUDA synchronization";
    case EventClass::kPeerRecv:
      return "receive from a peer";
    case EventClass::kStdinPipe:
      return "stdin pipe read";
    case EventClass::kChildWait:
      return "wait for a child process";
    case EventClass::kSignalHandler:
      return "signal handler";
    case EventClass::kCpuWork:
      return "CPU work (sampled)";
    case EventClass::kCpuWait:
      return "waiting for a CPU (sampled)";
    case EventClass::kMappedRead:
      return "page faults of a mapped file (sampled)";
    case EventClass::kNone:
      break;
  }
  return "GPU activity";
}

TimelineArg Text(std::string_view name, std::string text) {
  return {std::string(name), std::move(text), 0, false};
}
TimelineArg Number(std::string_view name, int64_t n) { return {std::string(name), "", n, true}; }

// A thread makes one call at a time, but its calls' times come from TSC readings converted with
// an anchor and a ratio that are refreshed as it runs (interpose/call_clock.h): a call may appear
// to begin a few microseconds before the previous one ended. A call that begins inside another
// and ends after it (which one thread cannot do) begins where that one ended; a call inside
// another (made from a signal handler) nests there.

// Gives each slice of `slices` a lane of its track such that a lane's slices nest, adding the
// lanes' tracks to `tracks` ("CUDA #2" beside "CUDA").
void AssignLanes(std::vector<TimelineTrack>& tracks, std::vector<TimelineSlice>& slices,
                 uint64_t* next_uuid) {
  std::sort(slices.begin(), slices.end(), [](const TimelineSlice& a, const TimelineSlice& b) {
    return std::tie(a.track, a.start, b.end) < std::tie(b.track, b.start, a.end);
  });
  absl::flat_hash_map<uint64_t, size_t> index_of;
  for (size_t i = 0; i < tracks.size(); ++i) index_of[tracks[i].uuid] = i;
  struct Lane {
    uint64_t uuid;
    std::vector<Ns> open;  // ends of the slices still open, outermost first
  };
  std::vector<Lane> lanes;
  uint64_t current = 0;
  for (TimelineSlice& s : slices) {
    if (s.track != current || lanes.empty()) {
      current = s.track;
      lanes.assign(1, Lane{s.track, {}});
    }
    if (tracks[index_of[s.track]].kind == TimelineTrack::Kind::kThread) {
      std::vector<Ns>& open = lanes[0].open;
      while (!open.empty() && open.back() <= s.start) open.pop_back();
      if (!open.empty() && open.back() < s.end) s.start = open.back();
    }
    size_t lane = 0;
    for (; lane < lanes.size(); ++lane) {
      std::vector<Ns>& open = lanes[lane].open;
      while (!open.empty() && open.back() <= s.start) open.pop_back();
      if (open.empty() || open.back() >= s.end) break;
    }
    if (lane == lanes.size()) {
      const TimelineTrack base = tracks[index_of[s.track]];
      TimelineTrack t;
      t.uuid = (*next_uuid)++;
      // A thread's or process's own lanes become its children; a plain track's, its siblings.
      t.parent = base.kind == TimelineTrack::Kind::kPlain ? base.parent : base.uuid;
      t.name = Cat(base.kind == TimelineTrack::Kind::kThread ? "CUDA" : base.name, " #", lane + 1);
      t.order = base.order;
      tracks.push_back(t);
      lanes.push_back(Lane{t.uuid, {}});
    }
    lanes[lane].open.push_back(s.end);
    s.track = lanes[lane].uuid;
  }
  std::stable_sort(slices.begin(), slices.end(),
                   [](const TimelineSlice& a, const TimelineSlice& b) {
                     return a.start != b.start ? a.start < b.start : a.end > b.end;
                   });
}

}  // namespace

void JobTimelineRecorder::AddProcess(uint32_t process, const ProcessInfo& info) {
  if (process >= processes_.size()) {
    processes_.resize(process + 1);
    process_end_.resize(process + 1, 0);
  }
  processes_[process] = info;
}

void JobTimelineRecorder::AddHostEvent(const HostEvent& e) {
  host_.push_back({e.process, e.tid, e.type, e.start, e.end, e.api_id, e.path_id, e.stack, e.bytes,
                   e.correlation, e.fd, e.device, e.nccl_op, e.copy_kind, e.host_mem, e.cpu_ns,
                   e.wait_ns, e.syscall});
  process_end_[e.process] = std::max(process_end_[e.process], e.end);
}

void JobTimelineRecorder::AddGpuRecord(const GpuRecord& r) {
  if (r.kind == GPU_SYNC || r.kind == GPU_OVERHEAD) return;  // the host side shows these
  gpu_.push_back({r.process, r.device, r.stream, r.kind, r.nccl, r.start, r.end, r.name_id, r.bytes,
                  r.correlation, r.grid, r.copy_kind});
  process_end_[r.process] = std::max(process_end_[r.process], r.end);
}

void JobTimelineRecorder::AddThreadName(uint32_t process, uint32_t tid, std::string_view name) {
  thread_names_[{process, tid}] = std::string(name);
}

void JobTimelineRecorder::EndProcess(uint32_t process, Ns end) {
  process_end_[process] = std::max(process_end_[process], end);
}

void JobTimelineRecorder::PutIdle(uint32_t device, Ns start, const Idle& idle) {
  if (device >= idle_.size()) idle_.resize(device + 1);
  std::map<Ns, Idle>& slices = idle_[device];
  // Cut out [start, idle.end) from what is there: a correction replaces what it corrects.
  auto it = slices.lower_bound(start);
  if (it != slices.begin()) {
    auto before = std::prev(it);
    if (before->second.end > start) {
      Idle tail = before->second;
      before->second.end = start;
      if (tail.end > idle.end) slices[idle.end] = tail;
    }
  }
  it = slices.lower_bound(start);
  while (it != slices.end() && it->first < idle.end) {
    if (it->second.end > idle.end) {
      Idle tail = it->second;
      slices.erase(it);
      slices[idle.end] = tail;
      break;
    }
    it = slices.erase(it);
  }
  slices[start] = idle;
}

void JobTimelineRecorder::OnSlice(const CreditedSlice& s) {
  if (s.when.length() <= 0) return;
  PutIdle(s.device, s.when.start, Idle{s.when.end, s.cause, s.evidence});
}

JobTimeline JobTimelineRecorder::Build(const SymbolSource& symbols,
                                       std::span<const std::string> device_ids) const {
  JobTimeline out;
  uint64_t next_uuid = 1;
  bool have_start = false;
  for (size_t p = 0; p < processes_.size(); ++p) {
    const ProcessInfo& info = processes_[p];
    out.start = have_start ? std::min(out.start, info.start) : info.start;
    have_start = true;
    out.end = std::max(out.end, process_end_[p]);
    if (!out.has_realtime && info.realtime_at_zero != 0) {
      out.realtime_at_zero = info.realtime_at_zero;
      out.has_realtime = true;
    }
  }

  // Processes: pids of different hosts may repeat, and a trace viewer merges processes by pid,
  // so a repeated pid is moved to a free number (the real one stays in the name).
  absl::flat_hash_set<int32_t> pids;
  std::vector<uint64_t> process_track(processes_.size());
  std::vector<int32_t> process_pid(processes_.size());
  for (size_t p = 0; p < processes_.size(); ++p) {
    const ProcessInfo& info = processes_[p];
    int32_t pid = static_cast<int32_t>(info.pid);
    while (!pids.insert(pid).second) pid += 10'000'000;
    process_pid[p] = pid;
    TimelineTrack t;
    t.uuid = process_track[p] = next_uuid++;
    t.kind = TimelineTrack::Kind::kProcess;
    t.pid = pid;
    std::string exe = Basename(info.exe);
    t.name = info.rank >= 0
                 ? Cat("rank ", info.rank, ": ", exe, " (pid ", info.pid, " on ", info.host, ")")
                 : Cat(exe, " (pid ", info.pid, " on ", info.host, ")");
    t.order = info.rank >= 0 ? info.rank : 1'000'000 + static_cast<int32_t>(p);
    out.tracks.push_back(std::move(t));
  }

  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint64_t> thread_track;
  auto thread = [&](uint32_t process, uint32_t tid) {
    auto [it, inserted] = thread_track.try_emplace({process, tid}, 0);
    if (inserted) {
      const ProcessInfo& info = processes_[process];
      uint32_t main = info.main_tid != 0 ? info.main_tid : info.pid;
      TimelineTrack t;
      t.uuid = it->second = next_uuid++;
      t.parent = process_track[process];
      t.kind = TimelineTrack::Kind::kThread;
      t.pid = process_pid[process];
      t.tid = tid;
      // Its recorded name first (what `top -H` and the program call it), then which thread.
      auto name = thread_names_.find({process, tid});
      const std::string which = tid == main ? Cat("main thread ", tid) : Cat("thread ", tid);
      t.name = name == thread_names_.end() || name->second.empty()
                   ? which
                   : Cat(name->second, " (", which, ")");
      t.order = tid == main ? 0 : 1 + static_cast<int32_t>(thread_track.size());
      out.tracks.push_back(std::move(t));
    }
    return it->second;
  };
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint8_t>, uint64_t> child_track;
  auto host_lane = [&](uint32_t process, uint32_t tid, HostLane lane) {
    uint64_t parent = thread(process, tid);
    if (lane == HostLane::kCuda) return parent;
    auto [it, inserted] =
        child_track.try_emplace({process, tid, static_cast<uint8_t>(lane)}, uint64_t{0});
    if (inserted) {
      TimelineTrack t;
      t.uuid = it->second = next_uuid++;
      t.parent = parent;
      t.name = std::string(kHostLaneName[static_cast<int>(lane)]);
      t.order = static_cast<int32_t>(lane);
      out.tracks.push_back(std::move(t));
    }
    return it->second;
  };
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint8_t>, uint64_t> gpu_track;
  auto gpu_lane = [&](uint32_t process, uint32_t device, GpuLane lane) {
    auto [it, inserted] =
        gpu_track.try_emplace({process, device, static_cast<uint8_t>(lane)}, uint64_t{0});
    if (inserted) {
      TimelineTrack t;
      t.uuid = it->second = next_uuid++;
      t.parent = process_track[process];
      t.name = Cat("GPU ", device, " ", kGpuLaneName[static_cast<int>(lane)]);
      t.order = -100 + static_cast<int32_t>(device * 4) + static_cast<int32_t>(lane);
      out.tracks.push_back(std::move(t));
    }
    return it->second;
  };

  // Flows: a CUDA call to the first GPU record with its correlation id, in its process.
  auto flow_id = [](uint32_t process, uint64_t correlation) {
    return (uint64_t{process} + 1) << 40 ^ correlation;
  };
  absl::flat_hash_map<uint64_t, size_t> first_gpu;  // flow id -> index into gpu_
  for (size_t i = 0; i < gpu_.size(); ++i) {
    const Gpu& g = gpu_[i];
    if (g.correlation == 0) continue;
    auto [it, inserted] = first_gpu.try_emplace(flow_id(g.process, g.correlation), i);
    if (!inserted && gpu_[it->second].start > g.start) it->second = i;
  }
  // The call's start per flow: a GPU record that starts before the call that caused it (the two
  // clocks disagree by some microseconds) gets no flow, since a flow may not go back in time.
  absl::flat_hash_map<uint64_t, Ns> host_flows;
  for (const Host& h : host_) {
    if (h.correlation != 0 && LaneOf(h.type) == HostLane::kCuda) {
      host_flows.try_emplace(flow_id(h.process, h.correlation), h.start);
    }
  }

  for (const Host& h : host_) {
    HostLane lane = LaneOf(h.type);
    TimelineSlice s;
    s.track = host_lane(h.process, h.tid, lane);
    s.start = h.start;
    s.end = std::max(h.end, h.start);
    s.category = std::string(kHostLaneCategory[static_cast<int>(lane)]);
    std::string api = h.api_id != 0 ? symbols.String(h.process, h.api_id) : "";
    s.name = !api.empty() ? api : Lower(EventType_Name(h.type));
    if (lane == HostLane::kSampled) {  // a run of the thread sampler: what the thread did
      HostEvent run;
      run.start = h.start;
      run.end = h.end;
      run.cpu_ns = h.cpu_ns;
      run.wait_ns = h.wait_ns;
      const SampledState state = SampledStateOf(run);
      s.name = state == SampledState::kOnCpu           ? "on a CPU"
               : state == SampledState::kWaitingForCpu ? "waiting for a CPU"
               : h.syscall == -1                       ? "blocked (no system call: a page fault)"
               : h.syscall >= 0 ? "blocked in system call " + std::to_string(h.syscall)
                                : "blocked";
      s.args.push_back(Number("cpu_us", static_cast<int64_t>(h.cpu_ns / 1000)));
      s.args.push_back(Number("runnable_waiting_us", static_cast<int64_t>(h.wait_ns / 1000)));
    }
    if (h.bytes > 0) s.args.push_back(Number("bytes", static_cast<int64_t>(h.bytes)));
    if (h.path_id != 0) {
      std::string path = symbols.String(h.process, h.path_id);
      if (!path.empty()) s.args.push_back(Text(lane == HostLane::kIo ? "path" : "what", path));
    }
    if (h.fd >= 0 && lane == HostLane::kIo) s.args.push_back(Number("fd", h.fd));
    if (h.nccl_op != NCCL_OP_UNSPECIFIED) s.args.push_back(Text("nccl_op", NcclOpName(h.nccl_op)));
    std::string copy = CopyKindName(h.copy_kind);
    if (!copy.empty()) s.args.push_back(Text("copy", copy));
    if (h.host_mem == MEM_PAGEABLE) s.args.push_back(Text("host_memory", "pageable"));
    if (h.host_mem == MEM_PINNED) s.args.push_back(Text("host_memory", "pinned"));
    if (h.device >= 0 && lane != HostLane::kIo) s.args.push_back(Number("device", h.device));
    if (h.correlation != 0) {
      s.args.push_back(Number("correlation", static_cast<int64_t>(h.correlation)));
      uint64_t id = flow_id(h.process, h.correlation);
      if (lane == HostLane::kCuda && first_gpu.contains(id)) s.flow_out = id;
    }
    std::string stack = StackText(symbols, h.process, h.stack);
    if (!stack.empty()) s.args.push_back(Text("stack", stack));
    out.slices.push_back(std::move(s));
  }

  for (size_t i = 0; i < gpu_.size(); ++i) {
    const Gpu& g = gpu_[i];
    GpuLane lane = g.kind == GPU_KERNEL ? (g.nccl ? GpuLane::kCommunication : GpuLane::kCompute)
                   : g.kind == GPU_MEMCPY || g.kind == GPU_MEMSET || g.kind == GPU_PEER_COPY
                       ? GpuLane::kTransfer
                       : GpuLane::kOther;
    TimelineSlice s;
    s.track = gpu_lane(g.process, g.device, lane);
    s.start = g.start;
    s.end = std::max(g.end, g.start);
    s.category = "gpu";
    if (g.kind == GPU_KERNEL) {
      std::string name = g.name_id != 0 ? symbols.String(g.process, g.name_id) : "";
      s.name = name.empty() ? "kernel" : name;
      if (g.grid > 0) s.args.push_back(Number("grid_blocks", static_cast<int64_t>(g.grid)));
    } else if (g.kind == GPU_MEMSET) {
      s.name = "memset";
    } else {
      std::string copy = CopyKindName(g.copy_kind);
      s.name = copy.empty() ? "memcpy" : Cat("memcpy ", copy);
    }
    s.args.push_back(Number("stream", g.stream));
    if (g.bytes > 0) s.args.push_back(Number("bytes", static_cast<int64_t>(g.bytes)));
    if (g.correlation != 0) {
      s.args.push_back(Number("correlation", static_cast<int64_t>(g.correlation)));
      uint64_t id = flow_id(g.process, g.correlation);
      auto first = first_gpu.find(id);
      auto call = host_flows.find(id);
      if (first != first_gpu.end() && first->second == i && call != host_flows.end()) {
        if (g.start >= call->second) {
          s.flow_in = id;
        } else {
          ++out.flows_before_their_call;
        }
      }
    }
    out.slices.push_back(std::move(s));
  }
  // A CUDA call whose GPU record got no flow keeps none either.
  absl::flat_hash_set<uint64_t> flows_in;
  for (const TimelineSlice& s : out.slices) {
    if (s.flow_in != 0) flows_in.insert(s.flow_in);
  }
  for (TimelineSlice& s : out.slices) {
    if (s.flow_out != 0 && !flows_in.contains(s.flow_out)) s.flow_out = 0;
  }

  // Idle time: a group of tracks, one per job device.
  if (!idle_.empty()) {
    TimelineTrack group;
    group.uuid = next_uuid++;
    group.name = "GPU idle by cause";
    group.order = -1;
    out.tracks.push_back(group);
    for (size_t d = 0; d < idle_.size(); ++d) {
      if (idle_[d].empty()) continue;
      TimelineTrack t;
      t.uuid = next_uuid++;
      t.parent = group.uuid;
      t.name = d < device_ids.size() ? device_ids[d] : Cat("device ", d);
      t.order = static_cast<int32_t>(d);
      out.tracks.push_back(t);
      auto same = [](const Idle& a, const Idle& b) {
        if (a.cause != b.cause || a.evidence.has_value() != b.evidence.has_value()) return false;
        if (!a.evidence) return true;
        const SliceEvidence& x = *a.evidence;
        const SliceEvidence& y = *b.evidence;
        return x.event_class == y.event_class && x.gpu_side == y.gpu_side &&
               x.process == y.process && x.tid == y.tid && x.object == y.object &&
               x.stack == y.stack;
      };
      for (auto it = idle_[d].begin(); it != idle_[d].end();) {
        // Neighbouring slices with the same cause and evidence are one slice.
        Ns start = it->first;
        Idle idle = it->second;
        for (++it; it != idle_[d].end() && it->first == idle.end && same(it->second, idle); ++it) {
          idle.end = it->second.end;
        }
        TimelineSlice s;
        s.track = t.uuid;
        s.start = start;
        s.end = idle.end;
        s.category = "idle";
        s.name = std::string(InfoOf(idle.cause).name);
        s.args.push_back(Text("cause", s.name));
        if (idle.evidence) {
          const SliceEvidence& e = *idle.evidence;
          std::string what = e.object != 0 ? symbols.String(e.process, e.object) : "";
          std::string event(EventClassName(e.event_class));
          s.args.push_back(Text("explained_by", what.empty() ? event : what));
          s.args.push_back(Text("event", event));
          if (e.bytes > 0) s.args.push_back(Number("bytes", static_cast<int64_t>(e.bytes)));
          if (e.gpu_side) {
            s.args.push_back(Text("side", "gpu"));
          } else if (e.process < processes_.size()) {
            s.args.push_back(Number("pid", processes_[e.process].pid));
            if (e.tid != 0) s.args.push_back(Number("tid", e.tid));
          }
          std::string stack = StackText(symbols, e.process, e.stack);
          if (!stack.empty()) s.args.push_back(Text("stack", stack));
        } else {
          s.args.push_back(Text("explained_by", "no traced event"));
        }
        out.slices.push_back(std::move(s));
      }
    }
  }
  AssignLanes(out.tracks, out.slices, &next_uuid);
  return out;
}

}  // namespace idlescope
