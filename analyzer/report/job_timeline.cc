#include "analyzer/report/job_timeline.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <tuple>
#include <utility>

#include "absl/algorithm/container.h"
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

GpuLane LaneOfGpu(GpuActivityKind kind, bool nccl) {
  if (kind == GPU_KERNEL) return nccl ? GpuLane::kCommunication : GpuLane::kCompute;
  if (kind == GPU_MEMCPY || kind == GPU_MEMSET || kind == GPU_PEER_COPY) return GpuLane::kTransfer;
  return GpuLane::kOther;
}

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
    case EventClass::kWorkerCpuWork:
      return "worker computing (sampled)";
    case EventClass::kWorkerCpuWait:
      return "worker waiting for a CPU (sampled)";
    case EventClass::kWorkerRead:
      return "worker reading a file (sampled)";
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

bool SameIdle(const Cause& ca, const std::optional<SliceEvidence>& a, const Cause& cb,
              const std::optional<SliceEvidence>& b) {
  if (ca != cb || a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->event_class == b->event_class && a->gpu_side == b->gpu_side &&
         a->process == b->process && a->tid == b->tid && a->object == b->object &&
         a->stack == b->stack;
}

// A process's rank, or its nearest ranked ancestor's on its host (a DataLoader worker goes with
// its rank); -1: none.
int32_t RankOf(std::span<const ProcessInfo> processes, size_t p) {
  for (size_t hops = 0; hops < processes.size(); ++hops) {
    if (processes[p].rank >= 0) return processes[p].rank;
    size_t parent = processes.size();
    for (size_t q = 0; q < processes.size(); ++q) {
      if (processes[q].pid == processes[p].ppid && processes[q].host == processes[p].host &&
          q != p) {
        parent = q;
        break;
      }
    }
    if (parent == processes.size()) return -1;
    p = parent;
  }
  return -1;
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
  process_end_[e.process] = std::max(process_end_[e.process], e.end);
}

void JobTimelineRecorder::AddGpuRecord(const GpuRecord& r) {
  if (r.kind == GPU_SYNC || r.kind == GPU_OVERHEAD) return;  // the host side shows these
  process_end_[r.process] = std::max(process_end_[r.process], r.end);
}

void JobTimelineRecorder::AddThreadName(uint32_t process, uint32_t tid, std::string_view name) {
  thread_names_[{process, tid}] = std::string(name);
}

void JobTimelineRecorder::EndProcess(uint32_t process, Ns end) {
  process_end_[process] = std::max(process_end_[process], end);
}

JobTimelineRecorder::~JobTimelineRecorder() {
  if (spill_ != nullptr) std::fclose(spill_);
}

void JobTimelineRecorder::PutIdle(IdleMap& slices, Ns start, const Idle& idle) {
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
  // Neighbours with the same cause and evidence are one slice (fewer slices to keep).
  auto [at, inserted] = slices.insert_or_assign(start, idle);
  if (at != slices.begin()) {
    auto before = std::prev(at);
    if (before->second.end == start &&
        SameIdle(before->second.cause, before->second.evidence, idle.cause, idle.evidence)) {
      before->second.end = idle.end;
      at = slices.erase(at);
      at = std::prev(at);
    }
  }
  auto after = std::next(at);
  if (after != slices.end() && after->first == at->second.end &&
      SameIdle(after->second.cause, after->second.evidence, at->second.cause,
               at->second.evidence)) {
    at->second.end = after->second.end;
    slices.erase(after);
  }
}

void JobTimelineRecorder::OnSlice(const CreditedSlice& s) {
  if (s.when.length() <= 0) return;
  const uint32_t d = s.device;
  if (d >= recent_.size()) {
    recent_.resize(d + 1);
    overlay_.resize(d + 1);
    flushed_.resize(d + 1, std::numeric_limits<Ns>::min());
    has_idle_.resize(d + 1, false);
  }
  has_idle_[d] = true;
  const Idle idle{s.when.end, s.cause, s.evidence};
  // What reaches back before the file's end goes over the file; the rest among the recent.
  if (s.when.start < flushed_[d]) {
    Idle before = idle;
    before.end = std::min(idle.end, flushed_[d]);
    PutIdle(overlay_[d], s.when.start, before);
  }
  if (idle.end > flushed_[d]) PutIdle(recent_[d], std::max(s.when.start, flushed_[d]), idle);
}

void JobTimelineRecorder::AdvanceTo(Ns t) {
  // Every second of the read, at most: the slices of more than kRecentIdle ago to the file.
  if (t - kRecentIdle > last_cut_ + 1'000'000'000) Spill(t - kRecentIdle);
}

void JobTimelineRecorder::Spill(Ns cut) {
  last_cut_ = cut;
  std::vector<Spilled> out;
  for (uint32_t d = 0; d < recent_.size(); ++d) {
    IdleMap& slices = recent_[d];
    auto it = slices.begin();
    for (; it != slices.end() && it->first < cut; ++it) {
      const Idle& idle = it->second;
      out.push_back({it->first, idle.end, d, static_cast<uint8_t>(idle.cause),
                     idle.evidence.has_value(), idle.evidence.value_or(SliceEvidence{})});
      flushed_[d] = std::max(flushed_[d], idle.end);
    }
    slices.erase(slices.begin(), it);
    flushed_[d] = std::max(flushed_[d], cut);
  }
  if (out.empty()) return;
  std::sort(out.begin(), out.end(), [](const Spilled& a, const Spilled& b) {
    return std::tie(a.start, a.device) < std::tie(b.start, b.device);
  });
  if (spill_ == nullptr) spill_ = std::tmpfile();
  // No temporary file (no writable TMPDIR): the slices stay in memory, over the file's.
  if (spill_ == nullptr ||
      std::fwrite(out.data(), sizeof(Spilled), out.size(), spill_) != out.size()) {
    for (const Spilled& x : out) {
      PutIdle(overlay_[x.device], x.start,
              Idle{x.end, static_cast<Cause>(x.cause),
                   x.has_evidence ? std::optional(x.evidence) : std::nullopt});
    }
    return;
  }
  spilled_ += out.size();
}

void JobTimelineRecorder::Seal() {
  Spill(std::numeric_limits<Ns>::max());
  if (spill_ != nullptr) std::rewind(spill_);
}

bool JobTimelineRecorder::ReadSpilled(Spilled* out) {
  return spill_ != nullptr && std::fread(out, sizeof(Spilled), 1, spill_) == 1;
}

TimelineClock JobTimelineRecorder::Clock() const {
  TimelineClock clock;
  for (size_t p = 0; p < processes_.size(); ++p) {
    const ProcessInfo& info = processes_[p];
    clock.start = p == 0 ? info.start : std::min(clock.start, info.start);
    if (!clock.has_realtime && info.realtime_at_zero != 0) {
      clock.realtime_at_zero = info.realtime_at_zero;
      clock.has_realtime = true;
    }
  }
  return clock;
}

TimelineStream::TimelineStream(JobTimelineRecorder& recorder, const SymbolSource& symbols,
                               std::span<const std::string> device_ids,
                               std::span<const int32_t> device_ranks,
                               const TimelineOptions& options, TimelineWriter& writer, Output& out)
    : recorder_(recorder), symbols_(symbols), options_(options), writer_(writer), out_(out) {
  clock_ = recorder.Clock();
  from_ = clock_.start + static_cast<Ns>(options.from_s * 1e9);
  to_ = options.to_s < 0 ? std::numeric_limits<Ns>::max()
                         : clock_.start + static_cast<Ns>(options.to_s * 1e9);
  const std::vector<ProcessInfo>& processes = recorder.processes_;
  selected_.assign(processes.size(), true);
  if (!options.ranks.empty()) {
    for (size_t p = 0; p < processes.size(); ++p) {
      selected_[p] = absl::c_linear_search(options.ranks, RankOf(processes, p));
    }
  }

  // Processes: pids of different hosts may repeat, and a trace viewer merges processes by pid,
  // so a repeated pid is moved to a free number (the real one stays in the name).
  absl::flat_hash_set<int32_t> pids;
  process_pid_.resize(processes.size());
  process_track_.resize(processes.size());
  for (size_t p = 0; p < processes.size(); ++p) {
    const ProcessInfo& info = processes[p];
    int32_t pid = static_cast<int32_t>(info.pid);
    while (!pids.insert(pid).second) pid += 10'000'000;
    process_pid_[p] = pid;
    if (!selected_[p]) continue;
    TimelineTrack t;
    t.kind = TimelineTrack::Kind::kProcess;
    t.pid = pid;
    std::string exe = Basename(info.exe);
    t.name = info.rank >= 0
                 ? Cat("rank ", info.rank, ": ", exe, " (pid ", info.pid, " on ", info.host, ")")
                 : Cat(exe, " (pid ", info.pid, " on ", info.host, ")");
    t.order = info.rank >= 0 ? info.rank : 1'000'000 + static_cast<int32_t>(p);
    process_track_[p] = NewTrack(std::move(t));
    always_.push_back(process_track_[p]);
  }

  // Idle time: a group of tracks, one per job device (of the selected ranks).
  idle_track_.assign(recorder.has_idle_.size(), 0);
  uint64_t group = 0;
  for (size_t d = 0; d < recorder.has_idle_.size(); ++d) {
    next_overlay_.push_back(recorder.overlay_[d].begin());
    if (!recorder.has_idle_[d]) continue;
    const int32_t rank = d < device_ranks.size() ? device_ranks[d] : -1;
    if (!options.ranks.empty() && !absl::c_linear_search(options.ranks, rank)) continue;
    if (group == 0) {
      TimelineTrack g;
      g.name = "GPU idle by cause";
      g.order = -1;
      group = NewTrack(std::move(g));
      always_.push_back(group);
    }
    TimelineTrack t;
    t.parent = group;
    t.name = d < device_ids.size() ? device_ids[d] : Cat("device ", d);
    t.order = static_cast<int32_t>(d);
    idle_track_[d] = NewTrack(std::move(t));
    always_.push_back(idle_track_[d]);
  }
  recorder.Seal();
  has_spilled_ = recorder.ReadSpilled(&next_spilled_);
  StartFile();
}

uint64_t TimelineStream::NewTrack(TimelineTrack track) {
  track.uuid = tracks_.size() + 1;
  tracks_.push_back(std::move(track));
  declared_.push_back(false);
  ++counts_.tracks;
  return tracks_.back().uuid;
}

void TimelineStream::Declare(uint64_t uuid) {
  if (declared_[uuid - 1]) return;
  const TimelineTrack& t = tracks_[uuid - 1];
  if (t.parent != 0) Declare(t.parent);
  writer_.DeclareTrack(t, out_);
  declared_[uuid - 1] = true;
}

void TimelineStream::StartFile() {
  out_.bytes_ = 0;
  declared_.assign(declared_.size(), false);
  writer_.BeginFile(clock_, out_);
  for (uint64_t uuid : always_) Declare(uuid);
  ++counts_.files;
  file_empty_ = true;
  closing_ = false;
}

uint64_t TimelineStream::ThreadTrack(uint32_t process, uint32_t tid) {
  auto [it, inserted] = thread_track_.try_emplace({process, tid}, 0);
  if (inserted) {
    const ProcessInfo& info = recorder_.processes_[process];
    uint32_t main = info.main_tid != 0 ? info.main_tid : info.pid;
    TimelineTrack t;
    t.parent = process_track_[process];
    t.kind = TimelineTrack::Kind::kThread;
    t.pid = process_pid_[process];
    t.tid = tid;
    // Its recorded name first (what `top -H` and the program call it), then which thread.
    auto name = recorder_.thread_names_.find({process, tid});
    const std::string which = tid == main ? Cat("main thread ", tid) : Cat("thread ", tid);
    t.name = name == recorder_.thread_names_.end() || name->second.empty()
                 ? which
                 : Cat(name->second, " (", which, ")");
    t.order = tid == main ? 0 : 1 + static_cast<int32_t>(thread_track_.size());
    it->second = NewTrack(std::move(t));
  }
  return it->second;
}

uint64_t TimelineStream::HostLaneTrack(uint32_t process, uint32_t tid, uint8_t lane) {
  uint64_t parent = ThreadTrack(process, tid);
  if (static_cast<HostLane>(lane) == HostLane::kCuda) return parent;
  auto [it, inserted] = host_lane_.try_emplace({process, tid, lane}, uint64_t{0});
  if (inserted) {
    TimelineTrack t;
    t.parent = parent;
    t.name = std::string(kHostLaneName[lane]);
    t.order = lane;
    it->second = NewTrack(std::move(t));
  }
  return it->second;
}

uint64_t TimelineStream::GpuLaneTrack(uint32_t process, uint32_t device, uint8_t lane) {
  auto [it, inserted] = gpu_lane_.try_emplace({process, device, lane}, uint64_t{0});
  if (inserted) {
    TimelineTrack t;
    t.parent = process_track_[process];
    t.name = Cat("GPU ", device, " ", kGpuLaneName[lane]);
    t.order = -100 + static_cast<int32_t>(device * 4) + static_cast<int32_t>(lane);
    it->second = NewTrack(std::move(t));
  }
  return it->second;
}

// Flows: a CUDA call to the first GPU record with its correlation id, in its process.
uint64_t TimelineStream::FlowId(uint32_t process, uint64_t correlation) const {
  return (uint64_t{process} + 1) << 40 ^ correlation;
}

bool TimelineStream::InWindow(Ns start, Ns end) const {
  return start < to_ && (end > from_ || start >= from_);
}

bool TimelineStream::Selected(uint32_t process, Ns start, Ns end) const {
  return process < selected_.size() && selected_[process] && InWindow(start, end);
}

TimelineStream::Pending TimelineStream::Next(Source source, Ns start, Ns end) {
  Pending p;
  p.start = start;
  p.end = std::max(end, start);
  p.seq = ++seq_;
  p.source = source;
  p.device = 0;
  return p;
}

void TimelineStream::Push(const Pending& p) {
  if (p.start < released_) ++counts_.late_records;
  pending_.push(p);
}

void TimelineStream::AddHostEvent(const HostEvent& e) {
  if (!Selected(e.process, e.start, std::max(e.end, e.start))) return;
  // A summary's host side: the NCCL calls (collectives and their set-up) only.
  if (options_.summary && LaneOf(e.type) != HostLane::kNccl) return;
  Pending p = Next(Source::kHost, e.start, e.end);
  p.host = {e.process,  e.tid,         e.type,    e.api_id, e.path_id, e.stack,
            e.bytes,    e.correlation, e.fd,      e.device, e.nccl_op, e.copy_kind,
            e.host_mem, e.cpu_ns,      e.wait_ns, e.syscall};
  if (e.correlation != 0 && LaneOf(e.type) == HostLane::kCuda) {
    Flow& f = flows_[FlowId(e.process, e.correlation)];
    if (f.host_seq == 0) {
      f.host_seq = p.seq;
      f.host_start = p.start;
    }
  }
  Push(p);
}

void TimelineStream::AddGpuRecord(const GpuRecord& r) {
  if (r.kind == GPU_SYNC || r.kind == GPU_OVERHEAD) return;  // the host side shows these
  if (!Selected(r.process, r.start, std::max(r.end, r.start))) return;
  Pending p = Next(Source::kGpu, r.start, r.end);
  p.gpu = {r.process, r.device, r.stream,      r.kind, r.nccl,
           r.name_id, r.bytes,  r.correlation, r.grid, r.copy_kind};
  if (r.correlation != 0 && !options_.summary) {  // a summary has no CUDA calls to flow from
    Flow& f = flows_[FlowId(r.process, r.correlation)];
    if (!f.committed && !f.gpu_written && (f.gpu_seq == 0 || r.start < f.gpu_start)) {
      f.gpu_seq = p.seq;
      f.gpu_start = r.start;
    }
  }
  Push(p);
}

void TimelineStream::PushIdle(uint32_t device, Ns start, const JobTimelineRecorder::Idle& idle) {
  if (idle_track_[device] == 0 || !InWindow(start, idle.end)) return;
  Pending p = Next(Source::kIdle, start, idle.end);
  p.device = device;
  idle_slices_.emplace(p.seq, IdleSlice(device, start, idle));
  Push(p);
}

// The idle slices that start before `t`: the file's, less what the overlay holds over them, and
// the overlay's.
void TimelineStream::PushIdleBefore(Ns t) {
  for (; has_spilled_ && next_spilled_.start < t;
       has_spilled_ = recorder_.ReadSpilled(&next_spilled_)) {
    const JobTimelineRecorder::Spilled& x = next_spilled_;
    const JobTimelineRecorder::IdleMap& over = recorder_.overlay_[x.device];
    JobTimelineRecorder::Idle idle{x.end, static_cast<Cause>(x.cause),
                                   x.has_evidence ? std::optional(x.evidence) : std::nullopt};
    Ns at = x.start;
    auto it = over.upper_bound(at);
    if (it != over.begin() && std::prev(it)->second.end > at) --it;
    for (; it != over.end() && it->first < x.end && at < x.end; ++it) {
      if (it->first > at) {
        idle.end = it->first;
        PushIdle(x.device, at, idle);
      }
      at = std::max(at, it->second.end);
    }
    if (at < x.end) {
      idle.end = x.end;
      PushIdle(x.device, at, idle);
    }
  }
  for (size_t d = 0; d < next_overlay_.size(); ++d) {
    auto& it = next_overlay_[d];
    for (; it != recorder_.overlay_[d].end() && it->first < t; ++it) {
      PushIdle(static_cast<uint32_t>(d), it->first, it->second);
    }
  }
}

void TimelineStream::AdvanceTo(Ns t) {
  if (t <= released_) return;
  PushIdleBefore(t);
  Release(t);
}

void TimelineStream::Finish() {
  PushIdleBefore(std::numeric_limits<Ns>::max());
  Release(std::numeric_limits<Ns>::max());
  for (auto& [key, c] : coarse_) {
    if (c.open) CloseCoarse(c);
  }
  while (!out_slices_.empty()) {
    Write(out_slices_.top().slice);
    out_slices_.pop();
  }
  writer_.EndFile(out_);
  counts_.bytes += out_.bytes_;
}

void TimelineStream::Release(Ns t) {
  while (!pending_.empty() && pending_.top().start < t) {
    const Pending p = pending_.top();
    pending_.pop();
    released_ = std::max(released_, p.start);
    if (p.start >= coarse_due_) CloseCoarseBefore(p.start);
    Place(p);
  }
  released_ = std::max(released_, t);
  if (released_ >= coarse_due_) CloseCoarseBefore(released_);
}

TimelineSlice TimelineStream::HostSlice(const Pending& p) {
  const Host& h = p.host;
  HostLane lane = LaneOf(h.type);
  TimelineSlice s;
  s.track = HostLaneTrack(h.process, h.tid, static_cast<uint8_t>(lane));
  s.start = p.start;
  s.end = p.end;
  s.category = std::string(kHostLaneCategory[static_cast<int>(lane)]);
  std::string api = h.api_id != 0 ? symbols_.String(h.process, h.api_id) : "";
  s.name = !api.empty() ? api : Lower(EventType_Name(h.type));
  if (lane == HostLane::kSampled) {  // a run of the thread sampler: what the thread did
    HostEvent run;
    run.start = p.start;
    run.end = p.end;
    run.cpu_ns = h.cpu_ns;
    run.wait_ns = h.wait_ns;
    run.syscall = h.syscall;
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
    std::string path = symbols_.String(h.process, h.path_id);
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
    if (lane == HostLane::kCuda) {
      const uint64_t id = FlowId(h.process, h.correlation);
      auto f = flows_.find(id);
      if (f != flows_.end() && f->second.host_seq == p.seq) {
        Flow& flow = f->second;
        // The GPU record that starts first, if the read has seen it and it is still to come.
        if (flow.gpu_seq != 0 && !flow.gpu_written && flow.gpu_start >= p.start && !closing_) {
          s.flow_out = id;
          flow.committed = true;
        } else {
          flows_.erase(f);
        }
      }
    }
  }
  std::string stack = StackText(symbols_, h.process, h.stack);
  if (!stack.empty()) s.args.push_back(Text("stack", stack));
  return s;
}

TimelineSlice TimelineStream::GpuSlice(const Pending& p) {
  const Gpu& g = p.gpu;
  const GpuLane lane = LaneOfGpu(g.kind, g.nccl);
  TimelineSlice s;
  s.track = GpuLaneTrack(g.process, g.device, static_cast<uint8_t>(lane));
  s.start = p.start;
  s.end = p.end;
  s.category = "gpu";
  if (g.kind == GPU_KERNEL) {
    std::string name = g.name_id != 0 ? symbols_.String(g.process, g.name_id) : "";
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
    const uint64_t id = FlowId(g.process, g.correlation);
    auto f = flows_.find(id);
    if (f != flows_.end() && f->second.gpu_seq == p.seq) {
      Flow& flow = f->second;
      if (flow.committed) {
        s.flow_in = id;
        flows_.erase(f);
      } else if (flow.host_seq == 0) {
        flows_.erase(f);  // no call: no flow
      } else {
        // Its call starts later (and is still to come): no flow back in time.
        if (flow.host_start > p.start) ++counts_.flows_before_their_call;
        flow.gpu_written = true;
      }
    }
  }
  return s;
}

TimelineSlice TimelineStream::IdleSlice(uint32_t device, Ns start,
                                        const JobTimelineRecorder::Idle& idle) const {
  // Neighbouring slices with the same cause and evidence were joined as they were recorded.
  TimelineSlice s;
  s.track = idle_track_[device];
  s.start = start;
  s.end = idle.end;
  s.category = "idle";
  s.name = std::string(InfoOf(idle.cause).name);
  s.args.push_back(Text("cause", s.name));
  if (idle.evidence) {
    const SliceEvidence& e = *idle.evidence;
    std::string what = e.object != 0 ? symbols_.String(e.process, e.object) : "";
    std::string event(EventClassName(e.event_class));
    s.args.push_back(Text("explained_by", what.empty() ? event : what));
    s.args.push_back(Text("event", event));
    if (e.bytes > 0) s.args.push_back(Number("bytes", static_cast<int64_t>(e.bytes)));
    if (e.gpu_side) {
      s.args.push_back(Text("side", "gpu"));
    } else if (e.process < recorder_.processes_.size()) {
      s.args.push_back(Number("pid", recorder_.processes_[e.process].pid));
      if (e.tid != 0) s.args.push_back(Number("tid", e.tid));
    }
    std::string stack = StackText(symbols_, e.process, e.stack);
    if (!stack.empty()) s.args.push_back(Text("stack", stack));
  } else {
    s.args.push_back(Text("explained_by", "no traced event"));
  }
  return s;
}

// A released record becomes a slice on a lane of its track, such that a lane's slices nest
// ("CUDA #2" beside "CUDA"); slices come here by start, longer first.
void TimelineStream::Place(const Pending& p) {
  TimelineSlice s;
  if (p.source == Source::kHost) {
    s = HostSlice(p);
  } else if (p.source == Source::kGpu) {
    if (options_.summary) return Coarsen(p);
    s = GpuSlice(p);
  } else {
    auto it = idle_slices_.find(p.seq);
    s = std::move(it->second);
    idle_slices_.erase(it);
  }
  Lay(std::move(s), p.seq);
}

// A summary's GPU records: per process, device and lane, a "busy" slice per second of the job
// (kCoarseNs) from its first record's start to its last record's end.
void TimelineStream::Coarsen(const Pending& p) {
  const Gpu& g = p.gpu;
  const GpuLane lane = LaneOfGpu(g.kind, g.nccl);
  Coarse& c = coarse_[{g.process, g.device, static_cast<uint8_t>(lane)}];
  if (c.open && p.start < c.bucket_end) {
    c.slice.end = std::max(c.slice.end, p.end);
    ++c.records;
    c.busy += p.end - p.start;
    return;
  }
  if (c.open) CloseCoarse(c);
  c.open = true;
  c.slice = TimelineSlice();
  c.slice.track = GpuLaneTrack(g.process, g.device, static_cast<uint8_t>(lane));
  c.slice.start = std::max(p.start, c.last_end);  // after the last: a track's slices nest
  c.slice.end = std::max(p.end, c.slice.start);
  c.slice.category = "gpu";
  c.slice.name = "busy";
  c.bucket_end = clock_.start + ((p.start - clock_.start) / kCoarseNs + 1) * kCoarseNs;
  c.records = 1;
  c.busy = p.end - p.start;
  c.seq = p.seq;
  coarse_min_ = std::min(coarse_min_, c.slice.start);
  coarse_due_ = std::min(coarse_due_, c.bucket_end);
}

void TimelineStream::CloseCoarse(Coarse& c) {
  c.open = false;
  c.last_end = c.slice.end;
  c.slice.args.push_back(Number("records", static_cast<int64_t>(c.records)));
  c.slice.args.push_back(Number("busy_us", c.busy / 1000));
  coarse_min_ = coarse_due_ = std::numeric_limits<Ns>::max();
  for (const auto& [key, open] : coarse_) {
    if (!open.open) continue;
    coarse_min_ = std::min(coarse_min_, open.slice.start);
    coarse_due_ = std::min(coarse_due_, open.bucket_end);
  }
  Lay(std::move(c.slice), c.seq);
}

// The busy slices whose second ended before `t`: no record still to come belongs to them.
void TimelineStream::CloseCoarseBefore(Ns t) {
  for (auto& [key, c] : coarse_) {
    if (c.open && c.bucket_end <= t) CloseCoarse(c);
  }
}

void TimelineStream::Lay(TimelineSlice s, uint64_t seq) {
  // Slices whose start has been passed are written (none of what is still to come starts
  // before them, nor a summary's busy slice still open).
  const Ns written = std::min(s.start, coarse_min_);
  while (!out_slices_.empty() && out_slices_.top().slice.start < written) {
    Write(out_slices_.top().slice);
    out_slices_.pop();
  }
  const TimelineTrack& base = tracks_[s.track - 1];
  std::vector<Lanes::Lane>& lanes = lanes_[s.track].lanes;
  if (lanes.empty()) lanes.push_back({s.track, {}});
  if (base.kind == TimelineTrack::Kind::kThread) {
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
    TimelineTrack t;
    // A thread's or process's own lanes become its children; a plain track's, its siblings.
    t.parent = base.kind == TimelineTrack::Kind::kPlain ? base.parent : base.uuid;
    t.name = Cat(base.kind == TimelineTrack::Kind::kThread ? "CUDA" : base.name, " #", lane + 1);
    t.order = base.order;
    const uint64_t uuid = NewTrack(std::move(t));
    lanes_[s.track].lanes.push_back({uuid, {}});
  }
  std::vector<Lanes::Lane>& placed = lanes_[s.track].lanes;
  placed[lane].open.push_back(s.end);
  s.track = placed[lane].uuid;
  out_slices_.push({std::move(s), seq});
}

// Writes a slice to the current file, or first ends it and begins the next (options.max_bytes).
void TimelineStream::Write(const TimelineSlice& slice) {
  if (options_.max_bytes > 0 && !file_empty_) {
    // The tracks this slice would declare, at most.
    uint64_t tracks = 0;
    for (uint64_t t = slice.track; t != 0 && !declared_[t - 1]; t = tracks_[t - 1].parent) {
      tracks += tracks_[t - 1].name.size() + 64;
    }
    const uint64_t bound = out_.bytes_ + tracks + writer_.Bound(slice);
    if (out_.bytes_ + options_.max_bytes / 8 + tracks + writer_.Bound(slice) > options_.max_bytes) {
      closing_ = true;  // no flow begins any more in this file
    }
    if (bound > options_.max_bytes || (closing_ && open_flows_.empty())) {
      writer_.EndFile(out_);
      counts_.bytes += out_.bytes_;
      // A flow still open stays open: its GPU record, in the next file, gets no flow.
      for (uint64_t id : open_flows_) cut_flows_.insert(id);
      open_flows_.clear();
      out_.NextPart();
      StartFile();
    }
  }
  Declare(slice.track);
  if (slice.flow_in != 0 && cut_flows_.erase(slice.flow_in) > 0) {
    TimelineSlice without = slice;
    without.flow_in = 0;
    writer_.AddSlice(without, out_);
  } else {
    if (slice.flow_out != 0) open_flows_.insert(slice.flow_out);
    if (slice.flow_in != 0) open_flows_.erase(slice.flow_in);
    writer_.AddSlice(slice, out_);
  }
  ++counts_.slices;
  file_empty_ = false;
}

}  // namespace idlescope
