#include "analyzer/analysis/job_analysis.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "analyzer/analysis/event_classes.h"

namespace idlescope {
namespace {

// A host call that blocks its thread until the device's work is done: a sync, or a
// device-to-host copy (synchronous; a snapshot for a checkpoint is the checkpoint's).
bool IsBlockingCall(const Candidate& c) {
  return WaitsForTheDevice(c) &&
         c.cause == (c.event_class == EventClass::kSync ? Cause::kSynchronization
                                                        : Cause::kHostGpuTransfer);
}

// Host work of a launching thread that is not the launch path itself: in a gap shorter than
// min_gap, the time it blocks the thread is its cause's, not the launch gaps' (a per-step
// pageable copy of 0.1 ms, a small read or write). Syncs and pinned copies wait for the device,
// which is idle in the gap: their part of it is the return to the host, launch latency.
bool IsBlockingHostWork(EventClass c) {
  switch (c) {
    case EventClass::kCopyPageable:
    case EventClass::kCheckpointWrite:
    case EventClass::kUploadWrite:
    case EventClass::kReadLocal:
    case EventClass::kReadRemote:
    case EventClass::kReadWorkerQueue:
    case EventClass::kDownload:
    case EventClass::kTerminalRead:
    case EventClass::kPeerRecv:
    case EventClass::kStdinPipe:
    case EventClass::kChildWait:
    case EventClass::kSignalHandler:
      return true;
    default:
      return false;
  }
}

// Calls of a thread that name the device it feeds: its launching threads.
bool IsLaunchEvent(EventType type) {
  switch (type) {
    case CUDA_MEMCPY:
    case CUDA_MEMSET:
    case CUDA_SYNC:
    case CUDA_LAUNCH:
    case CUDA_GRAPH_LAUNCH:
    case CUDA_LAUNCH_SUMMARY:
    case NCCL_COLLECTIVE:
      return true;
    default:
      return false;
  }
}

}  // namespace

JobAnalysis::JobAnalysis(AnalysisOptions options)
    : options_(options),
      devices_(std::max<Ns>(options.min_gap, 1)),
      crediting_(options.top_gaps),
      host_activity_(options.top_evidence) {
  if (options_.min_gap < 1) options_.min_gap = 1;
}

void JobAnalysis::AddProcess(uint32_t process, const ProcessInfo& info) {
  // The reader numbers processes in the order it adds them.
  if (process != processes_.size()) return;
  processes_.Add(info);
  model_files_.AddProcess(process, info);
  peers_.AddProcess(process, info);
  devices_.AddProcess(process, info);
  startup_.AddProcess(process, info);
  step_finders_.emplace_back();
  // Normally every process comes before the first record; a late one joins the families.
  if (started_) BuildFamilies();
}

void JobAnalysis::AddWarning(const ReportWarning& warning) {
  (warning.kind == WarningKind::kSkippedFile ? skipped_ : warnings_).push_back(warning);
}

void JobAnalysis::AddFile(const FileReport& file) { files_.push_back(file); }

void JobAnalysis::Start() {
  if (started_) return;
  started_ = true;
  job_start_ = processes_.JobStart();
  last_step_ = job_start_;
  devices_.Start(job_start_);
  BuildFamilies();
}

void JobAnalysis::BuildFamilies() {
  processes_.BuildFamilies();
  // Devices already linked (a process added after the first records) link the new families.
  for (const auto& [process, device] : devices_.Unlink()) {
    if (devices_.Link(device, process)) processes_.NoteDeviceUse(process, device);
  }
}

void JobAnalysis::EndProcess(uint32_t process, Ns end) { processes_.End(process, end); }

uint32_t JobAnalysis::Device(uint32_t process, uint32_t ordinal) {
  bool linked = false;
  uint32_t device = devices_.DeviceFor(process, ordinal, &linked);
  if (__builtin_expect(linked, 0)) {
    while (crediting_.devices() < devices_.size()) crediting_.AddDevice();
    processes_.NoteDeviceUse(process, device);
  }
  return device;
}

void JobAnalysis::AddDeviceInfo(uint32_t process, const DeviceProps& props) {
  Start();
  devices_.AddDeviceInfo(process, props);
}

void JobAnalysis::AddHostEvent(const HostEvent& e) {
  Start();
  const bool owned = Owned(e.process);
  host_events_ += owned;
  processes_.Seen(e.process, e.end);
  if (e.type == THREAD_SAMPLE) {
    AddSample(e);
    return;
  }
  if (e.stack != 0) last_stacks_.Note(ThreadKey(e.process, e.tid), e.stack);
  if (e.type == NVTX_RANGE && owned && e.process < step_finders_.size()) {
    step_finders_[e.process].AddRange(e);
  }
  const JobProcess& p = processes_[e.process];
  if (__builtin_expect(!startup_.launched(e.process), 0) && owned) startup_.Note(e);
  if (e.device >= 0 && IsLaunchEvent(e.type)) {
    uint32_t ordinal = static_cast<uint32_t>(e.device);
    if (devices_.NewLauncher(e.process, e.tid, ordinal)) {
      devices_[Device(e.process, ordinal)].launcher_threads.insert(ThreadKey(e.process, e.tid));
    }
  }
  switch (e.type) {
    case CUDA_LAUNCH:
    case CUDA_LAUNCH_SUMMARY:
    case CUDA_GRAPH_LAUNCH:
      // A launch ends the thread's run of copies: what follows is training, not a snapshot.
      if (snapshots_.EndRun(e.process, e.tid, &snapshot_copies_)) {
        for (const Interval& copy : snapshot_copies_) ReclassifySnapshot(e.process, e.tid, copy);
      }
      if (e.device >= 0) {
        devices_[Device(e.process, static_cast<uint32_t>(e.device))].launches +=
            e.type == CUDA_LAUNCH_SUMMARY ? std::max<uint64_t>(e.count, 1) : 1;
      }
      return;  // the hot path: launches explain no idle time
    case CUDA_MALLOC:
      if (e.device >= 0 && e.bytes > 0) {
        devices_.Allocate(e.process, Device(e.process, static_cast<uint32_t>(e.device)), e.ptr,
                          e.bytes);
      }
      return;
    case CUDA_FREE:
      devices_.Free(e.process, e.ptr);
      return;
    case NCCL_COLLECTIVE:
      if (owned) {
        cross_->Arrival({.comm = e.comm,
                         .seq = e.seq,
                         .nranks = e.nranks,
                         .nccl_rank = e.rank,
                         .job_rank = p.info.rank,
                         .arrival = e.start,
                         .process = e.process,
                         .tid = e.tid,
                         .op = e.nccl_op,
                         .bytes = e.bytes,
                         .grouped = e.group_depth > 0});
      }
      break;
    case PROC_FORK:
    case PROC_EXEC:
    case PROC_SPAWN:
      processes_.NoteLaunch(e);
      break;
    default:
      break;
  }
  EventClassification c = ClassifyHostEvent(e);
  uint64_t object = e.path_id;
  c = Identify(e, c, &object);
  if (owned) host_activity_.Note(e, c.event_class, e.tid == p.main_tid());
  if (e.end <= e.start) return;
  // Whatever a package installer does (downloads, writes to site-packages) is installation.
  if (p.in_installer) {
    c = {EventClass::kInstaller, Cause::kLibraryInstallation};
  } else if (c.event_class == EventClass::kIpcWrite) {
    // A write into a pipe or local socket blocks until the reader drains it. The process that
    // feeds its workers (DataLoader index queues) waits on data loading; a worker blocked on its
    // result queue, or a process writing to any other reader (a logger, a child), says only
    // "another process is slow": no cause (docs/attribution.md, "Pipes and sockets").
    if (!p.has_workers) return;
    c = {EventClass::kReadWorkerQueue, Cause::kDataLoading};
  }
  if (c.event_class == EventClass::kNone) return;
  // Reading code is importing (Python modules, lazily loaded libraries), reading /proc or /sys is
  // polling state: CPU work of the process, not data loading. It explains nothing (before the
  // first kernel it is startup).
  const bool file_read =
      c.event_class == EventClass::kReadLocal || c.event_class == EventClass::kReadRemote;
  if (file_read && (IsCodeFilePath(e.path) || IsSystemPath(e.path))) return;
  Candidate candidate;
  candidate.when = {e.start, e.end};
  candidate.cause = c.cause;
  candidate.event_class = c.event_class;
  candidate.pageable = c.event_class == EventClass::kCopyPageable;
  candidate.d2h = e.type == CUDA_MEMCPY && e.copy_kind == COPY_D2H;
  candidate.nccl_op = e.nccl_op;
  candidate.process = e.process;
  candidate.tid = e.tid;
  candidate.stack = e.stack;
  candidate.object = object;
  candidate.bytes = e.bytes;
  candidate.directory = directories_.Of(e);
  // Code and system paths returned above: what is left is data unless it is a model file.
  candidate.data_read =
      file_read && !e.path.empty() && !model_files_.IsModelFile(e.process, e.path);
  uint32_t copy_tid = 0;
  if (snapshots_.Note(candidate, &snapshot_copies_, &copy_tid)) {
    for (const Interval& copy : snapshot_copies_) ReclassifySnapshot(e.process, copy_tid, copy);
  }
  if (owned && RankBlame::Wants(p.info.rank, candidate)) {
    cross_->Activity(RankBlame::ActivityOf(p.info.rank, candidate));
  }
  AddCandidate(candidate);
}

void JobAnalysis::AddSample(const HostEvent& e) {
  if (e.end <= e.start) return;
  // The CPU time of the threads that feed each device (the launch loop's cost per kernel).
  for (uint32_t d : processes_[e.process].devices) {
    if (devices_[d].launcher_threads.contains(ThreadKey(e.process, e.tid))) {
      devices_[d].launcher_cpu_ns += static_cast<Ns>(e.cpu_ns);
    }
  }
  uint64_t object = 0;
  EventClassification c =
      processes_[e.process].worker ? ClassifyWorkerSample(e, &object) : ClassifySample(e);
  if (c.event_class == EventClass::kNone && e.syscall == -1 && !processes_[e.process].worker) {
    // Blocked outside every system call: a page fault. In a process that maps data files, a read
    // of the largest (identities.h, MappedFiles).
    const MappedFiles::Mapping* mapping = mapped_.LargestAt(e.process, {e.start, e.end});
    if (mapping == nullptr) return;
    c = {EventClass::kMappedRead, Cause::kDataLoading};
    object = mapping->path_id;
  }
  if (c.event_class == EventClass::kNone) return;
  Candidate candidate;
  candidate.when = {e.start, e.end};
  candidate.cause = c.cause;
  candidate.event_class = c.event_class;
  candidate.process = e.process;
  candidate.tid = e.tid;
  // Its evidence: CPU work's own Python stack when the sampler read one (the line that computed),
  // else where the thread last called something traced.
  candidate.stack =
      (c.event_class == EventClass::kCpuWork || c.event_class == EventClass::kWorkerCpuWork) &&
              e.stack != 0
          ? e.stack
          : last_stacks_.Of(ThreadKey(e.process, e.tid));
  candidate.object = object;
  candidate.data_read = c.event_class == EventClass::kMappedRead;
  candidate.wait_ns =
      static_cast<uint32_t>(std::min<uint64_t>(e.wait_ns, UINT32_MAX));  // <= 250 ms
  AddCandidate(candidate);
}

EventClassification JobAnalysis::ClassifyWorkerSample(const HostEvent& e, uint64_t* object) const {
  switch (SampledStateOf(e)) {
    case SampledState::kOnCpu:
      return {EventClass::kWorkerCpuWork, Cause::kDataLoading};
    case SampledState::kWaitingForCpu:
      return {EventClass::kWorkerCpuWait, Cause::kCpuStarvation};
    case SampledState::kBlocked:
      break;
  }
  if (e.syscall == -1) {
    // Page faults: of the largest data file the worker maps (a memory-mapped dataset).
    const MappedFiles::Mapping* mapping = mapped_.LargestAt(e.process, {e.start, e.end});
    if (mapping == nullptr) return {};
    *object = mapping->path_id;
    return {EventClass::kWorkerRead, Cause::kDataLoading};
  }
  // Blocked on a descriptor: a data file's (not a pipe or socket, "pipe:[N]": a worker waiting
  // for its next index; not code, system state or a model file).
  if (e.fd < 0 || e.path.empty() || e.path[0] != '/' || IsCodeFilePath(e.path) ||
      IsSystemPath(e.path) || model_files_.IsModelFile(e.process, e.path)) {
    return {};
  }
  *object = e.path_id;
  return {EventClass::kWorkerRead, Cause::kDataLoading};
}

EventClassification JobAnalysis::Identify(const HostEvent& e, EventClassification c,
                                          uint64_t* object) {
  switch (e.type) {
    case NET_SOCKET:
      peers_.NoteSocket(e);
      return c;
    case FILE_MUNMAP:
      mapped_.Unmap(e);
      return c;
    case FILE_MMAP:
      mapped_.Map(e);
      [[fallthrough]];
    case FILE_READ:
      made_model_.clear();
      model_files_.NoteRead(e.process, e.path, e.bytes, !startup_.launched(e.process),
                            &made_model_);
      if (!made_model_.empty()) ReclassifyWrites(made_model_);
      break;
    case FILE_RENAME: {
      made_model_.clear();
      model_files_.NoteRename(e.process, e.source, e.path, &made_model_);
      if (!made_model_.empty()) {
        ReclassifyWrites(made_model_);
        if (c.event_class == EventClass::kUploadWrite) {
          c = {EventClass::kCheckpointWrite, Cause::kCheckpointing};
        }
      }
      break;
    }
    case PROC_WAIT:
    case PROC_SPAWN:
      if (c.event_class == EventClass::kChildWait) {
        // The child it waited for: by pid, or (system(), no pid) the shell started during it.
        int64_t child = e.type == PROC_WAIT
                            ? WaitedChild(e.process, e.child_pid, processes_)
                            : WaitedChild(e.process, processes_.ShellChildOf(e), processes_);
        if (child >= 0) {
          c.cause = ChildCause(static_cast<uint32_t>(child), processes_);
          *object = CommandEvidence(static_cast<uint32_t>(child));
        }
      }
      return c;
    default:
      break;
  }
  // A file written that a rename, or a read back at start, showed to be a model file; otherwise
  // remembered, for a rename to come.
  const bool file_write = e.fs_type != FS_SOCKET && e.fs_type != FS_PIPE && e.type != FILE_RENAME;
  if (c.event_class == EventClass::kUploadWrite && file_write) {
    if (model_files_.IsModelFile(e.process, e.path)) {
      c = {EventClass::kCheckpointWrite, Cause::kCheckpointing};
    } else {
      model_files_.NoteWrite(e.process, e.path, e.path_id);
    }
  } else if (c.event_class == EventClass::kCheckpointWrite && file_write) {
    // Known by its name: a directory renamed with it inside is a checkpoint's.
    model_files_.NoteModelWrite(e.process, e.path);
  }
  // A socket by who is at the other end (docs/attribution.md, "Who is at the other end").
  const bool on_socket =
      e.type == NET_RECV || e.type == NET_SEND || e.type == NET_CONNECT ||
      ((e.type == FILE_READ || e.type == FILE_WRITE || e.type == WAIT || e.type == FILE_COPY) &&
       e.fs_type == FS_SOCKET && !e.path.empty());
  if (!on_socket || c.event_class == EventClass::kIdleWait ||
      (c.event_class == EventClass::kNone && e.type != NET_CONNECT)) {
    return c;
  }
  const bool receives = e.type == NET_RECV || e.type == FILE_READ || e.type == WAIT;
  const bool sends = e.type == NET_SEND || e.type == FILE_WRITE || e.type == FILE_COPY;
  switch (peers_.RoleOf(e, processes_)) {
    case PeerRole::kUnknown:
      return c;
    case PeerRole::kSelf:
    case PeerRole::kWorker:
      if (receives) return {EventClass::kReadWorkerQueue, Cause::kDataLoading};
      if (sends) return {EventClass::kIpcWrite, Cause::kUnknown};
      return {};
    case PeerRole::kJobProcess:
      if (receives) return {EventClass::kPeerRecv, Cause::kCommunication};
      if (sends) return {EventClass::kPeerSend, Cause::kCommunication};
      return {};
    case PeerRole::kOutside:
      if (sends) return {EventClass::kUploadWrite, Cause::kIntermediateUpload};
      return {EventClass::kDownload, Cause::kExternalDownload};
  }
  return c;
}

void JobAnalysis::ReclassifyWrites(const std::vector<EvidenceKey>& writes) {
  window_.MarkCheckpointWrites(writes);
  host_activity_.MoveToCheckpointWrites(writes);
  for (uint32_t d = 0; d < devices_.size(); ++d) crediting_.ReclassifyWrites(d, writes);
}

void JobAnalysis::AddGpuRecord(const GpuRecord& r) {
  Start();
  const bool owned = Owned(r.process);
  gpu_records_ += owned;
  processes_.Seen(r.process, r.end);
  uint32_t device = Device(r.process, r.device);
  devices_[device].timeline.AddActivity(r);
  if (owned && r.process < step_finders_.size()) step_finders_[r.process].AddActivity(r);
  if (r.end <= r.start) return;
  if (owned) copy_rates_.Add(r);
  Candidate candidate;
  candidate.when = {r.start, r.end};
  candidate.gpu_side = true;
  candidate.process = r.process;
  candidate.device = device;
  candidate.object = r.name_id;
  candidate.bytes = r.bytes;
  if (r.kind == GPU_KERNEL && r.nccl) {
    candidate.cause = Cause::kCommunication;
    candidate.event_class = EventClass::kNccl;
    const int32_t rank = processes_[r.process].info.rank;
    if (owned && rank >= 0) cross_->NcclKernel(rank, candidate.when);
  } else if (r.kind == GPU_MEMCPY || r.kind == GPU_MEMSET || r.kind == GPU_PEER_COPY) {
    candidate.cause = Cause::kHostGpuTransfer;
    candidate.pageable = r.src_kind == MEM_PAGEABLE || r.dst_kind == MEM_PAGEABLE;
    candidate.event_class =
        candidate.pageable ? EventClass::kCopyPageable : EventClass::kCopyPinned;
  } else {
    return;
  }
  AddCandidate(candidate);
}

void JobAnalysis::AddCandidate(const Candidate& c) {
  // A candidate for time already attributed takes back the residual time it covers, on the
  // devices it can explain (TierFor): its own device, its family's devices, or every device for
  // an installer.
  auto reclaim = [&](uint32_t device) {
    // A worker's sampled run explains only a wait for the workers, never residual time.
    if (IsWorkerSampleClass(c.event_class)) return;
    Ns until = devices_[device].timeline.attributed_until();
    Tier tier;
    if (c.when.start >= until || !TierFor(c, device, &tier)) return;
    if (c.event_class == EventClass::kCpuWork) {
      crediting_.ReclaimCpuWork(device, c, until);
    } else {
      crediting_.Reclaim(device, c, until, snapshots_.MayBecomeSnapshot(c));
    }
  };
  if (c.gpu_side) {
    reclaim(c.device);
  } else if (JobWide(c)) {
    for (uint32_t d = 0; d < devices_.size(); ++d) reclaim(d);
  } else {
    for (uint32_t d : processes_[c.process].devices) reclaim(d);
  }
  if (!c.gpu_side && IsBlockingHostWork(c.event_class)) {
    for (uint32_t d : processes_[c.process].devices) {
      if (!devices_[d].launcher_threads.contains(ThreadKey(c.process, c.tid))) continue;
      std::deque<Interval>& q = devices_[d].blocking_host_work;
      const Ns done = devices_[d].timeline.attributed_until();
      while (!q.empty() && q.front().end <= done) q.pop_front();
      // Kept by start (host events come nearly in time order: from the back).
      auto at = q.end();
      while (at != q.begin() && std::prev(at)->start > c.when.start) --at;
      q.insert(at, c.when);
    }
  }
  size_t slot = CandidateWindows::kShared;
  if (!JobWide(c)) {
    int64_t owner = processes_[c.process].window_owner;
    if (owner >= 0) slot = CandidateWindows::SlotOf(static_cast<uint32_t>(owner));
  }
  window_.Add(slot, c);
}

void JobAnalysis::ReclassifySnapshot(uint32_t process, uint32_t tid, Interval copy) {
  // Its time not yet attributed: the candidate itself is still held. Its time already
  // attributed: the credited slices move (the late-events mechanism for credited time).
  window_.MarkSnapshot(process, tid, copy);
  const int32_t rank = processes_[process].info.rank;
  if (Owned(process) && rank >= 0) cross_->Snapshot(rank, process, tid, copy);
  for (uint32_t device : processes_[process].devices) {
    crediting_.ReclassifySnapshot(device, process, tid, copy);
  }
}

void JobAnalysis::AdvanceTo(Ns t) {
  if (!started_) Start();
  if (t < last_step_ + options_.advance_quantum) return;
  Step(t);
}

void JobAnalysis::Step(Ns t) {
  last_step_ = t;
  window_.Merge();
  for (uint32_t d = 0; d < devices_.size(); ++d) devices_[d].timeline.Advance(t, &gap_events_);
  HandleGapEvents();
  if (window_.WantsPrune()) Prune();
  cross_->AdvanceTo(t);
}

void JobAnalysis::HandleGapEvents() {
  for (const GapEvent& event : gap_events_) {
    if (event.type == GapEvent::kPiece) {
      Attribute(event.device, event.piece);
    } else if (event.type == GapEvent::kShort) {
      AttributeShort(event.device, event.gap);
    } else {
      crediting_.CloseGap(event.device, event.gap, event.kind);
    }
  }
  gap_events_.clear();
}

bool JobAnalysis::TierFor(const Candidate& c, uint32_t device, Tier* tier) const {
  if (c.cause == Cause::kRankDied) {  // the death span: every device
    *tier = Tier::kAfterDeath;
    return true;
  }
  if (c.gpu_side) {
    *tier = Tier::kGpu;
    return c.device == device;
  }
  if (devices_[device].launcher_threads.contains(ThreadKey(c.process, c.tid))) {
    *tier = Tier::kLaunchingThread;
    return true;
  }
  // A sampled run says something only of the device its thread feeds.
  if (IsSampledClass(c.event_class)) return false;
  const std::vector<uint32_t>& devices = processes_[c.process].devices;
  *tier = Tier::kJobProcess;
  return JobWide(c) || std::find(devices.begin(), devices.end(), device) != devices.end();
}

void JobAnalysis::Attribute(uint32_t device, Interval piece) {
  ranked_.clear();
  auto consider = [&](const Candidate& c) {
    if (c.when.end <= piece.start || c.when.start >= piece.end) return;
    Tier tier;
    if (!TierFor(c, device, &tier)) return;
    if (c.data_read && tier == Tier::kLaunchingThread) crediting_.NoteLauncherRead(device);
    ranked_.push_back({&c, tier});
  };
  // Only the processes that drive the device, and the shared window, hold candidates for it.
  slots_.assign(1, CandidateWindows::kShared);
  for (uint32_t process : devices_[device].processes) {
    slots_.push_back(CandidateWindows::SlotOf(process));
  }
  window_.ForEachReaching(slots_, piece, consider);
  for (Candidate& span : processes_.installer_spans()) {
    // Until its footer or the end of its file is read, the installer may still be running (a
    // quiet one writes nothing for a while): only then is its end known, whatever the window has
    // read of it.
    const JobProcess& installer = processes_[span.process];
    span.when.end = installer.read || installer.ended ? installer.End() : kForever;
    // Its evidence is how it was started (resolved with the report): its command line, and the
    // stack of the call that started it when that call was seen (the report leaves the stack out
    // when it was not: the call may be in a file another shard of the job reads).
    span.object = kLaunchEvidence;
    span.stack = kLaunchEvidence;
    consider(span);
  }
  if (const Candidate* death = processes_.death_span()) consider(*death);
  for (const Slice& slice : ResolveSlices(piece, ranked_)) {
    const Candidate* winner = slice.winner >= 0 ? ranked_[slice.winner].candidate : nullptr;
    if (winner != nullptr && ranked_[slice.winner].tier == Tier::kLaunchingThread) {
      if (IsBlockingCall(*winner)) crediting_.NoteLauncherBlocked(device, *winner);
      // A call that the thread's wait for a CPU took the slice from (attribution.h) still
      // blocked it there.
      if (winner->event_class == EventClass::kCpuWait) {
        for (const RankedCandidate& r : ranked_) {
          const Candidate& c = *r.candidate;
          if (r.tier == Tier::kLaunchingThread && IsBlockingCall(c) && c.tid == winner->tid &&
              c.process == winner->process && c.when.start <= slice.when.start &&
              c.when.end >= slice.when.end) {
            crediting_.NoteLauncherBlocked(device, c);
            break;
          }
        }
      }
    }
    if (winner != nullptr && winner->event_class == EventClass::kCpuWork) {
      crediting_.CreditCpuWork(device, *winner, slice.when);
      continue;
    }
    crediting_.Credit(device, winner, slice.when,
                      winner != nullptr && snapshots_.MayBecomeSnapshot(*winner));
  }
}

void JobAnalysis::AttributeShort(uint32_t device, Interval gap) {
  crediting_.ObserveShortGap(device, gap);
  // Short gaps come in time order: what ended before this one is of no use to the next ones.
  std::deque<Interval>& blocking = devices_[device].blocking_host_work;
  while (!blocking.empty() && blocking.front().end <= gap.start) blocking.pop_front();
  bool overlaps = false;
  for (const Interval& b : blocking) {  // by start: host events run ahead of the GPU's
    if (b.start >= gap.end) break;
    if (b.end > gap.start) {
      overlaps = true;
      break;
    }
  }
  if (!overlaps) return;
  ranked_.clear();
  auto consider = [&](const Candidate& c) {
    if (c.gpu_side || !IsBlockingHostWork(c.event_class)) return;
    if (c.when.end <= gap.start || c.when.start >= gap.end) return;
    if (!devices_[device].launcher_threads.contains(ThreadKey(c.process, c.tid))) return;
    ranked_.push_back({&c, Tier::kLaunchingThread});
  };
  slots_.clear();
  for (uint32_t process : devices_[device].processes) {
    slots_.push_back(CandidateWindows::SlotOf(process));
  }
  window_.ForEachReaching(slots_, gap, consider);
  if (ranked_.empty()) return;
  Ns explained = 0;
  for (const Slice& slice : ResolveSlices(gap, ranked_)) {
    if (slice.winner < 0) continue;
    const Candidate& winner = *ranked_[slice.winner].candidate;
    crediting_.CreditShortGap(device, winner, slice.when, snapshots_.MayBecomeSnapshot(winner));
    explained += slice.when.length();
  }
  devices_[device].timeline.ExplainShortGapTime(explained);
}

void JobAnalysis::Prune() {
  // A host candidate can be forgotten once every device its process's family launches on has
  // been attributed past its end; a device-side one once its device has.
  Ns all_devices = devices_.size() == 0 ? IntervalUnion::kNever : kForever;
  for (uint32_t d = 0; d < devices_.size(); ++d) {
    all_devices = std::min(all_devices, devices_[d].timeline.attributed_until());
  }
  std::vector<Ns> process_horizon(processes_.size(), IntervalUnion::kNever);
  for (uint32_t i = 0; i < processes_.size(); ++i) {
    const std::vector<uint32_t>& devices = processes_[i].devices;
    if (devices.empty()) continue;  // may still explain a device not seen yet
    Ns horizon = kForever;
    for (uint32_t d : devices) horizon = std::min(horizon, devices_[d].timeline.attributed_until());
    process_horizon[i] = horizon;
  }
  window_.Prune([&](const Candidate& c) {
    if (c.gpu_side) return c.when.end <= devices_[c.device].timeline.attributed_until();
    if (JobWide(c)) return c.when.end <= all_devices;
    return c.when.end <= process_horizon[c.process];
  });
}

std::vector<std::string> JobAnalysis::DeviceIds() const {
  std::vector<std::string> ids;
  ids.reserve(devices_.size());
  for (uint32_t d = 0; d < devices_.size(); ++d) ids.push_back(devices_[d].id);
  return ids;
}

Ns JobAnalysis::End() const {
  Ns end = job_start_;
  for (uint32_t i = 0; i < processes_.size(); ++i) {
    if (i >= roles_.size() || roles_[i] != ProcessRole::kAbsent)
      end = std::max(end, processes_[i].End());
  }
  return end;
}

void JobAnalysis::Finish(Ns job_end) {
  Start();
  if (finished_) return;
  finished_ = true;
  finished_at_ = job_end;
  window_.Merge();
  // Device by device: a device's last seal may close every gap still in the reorder window.
  for (uint32_t d = 0; d < devices_.size(); ++d) {
    devices_[d].timeline.Finish(job_end, &gap_events_);
    HandleGapEvents();
  }
}

PartResults JobAnalysis::TakeResults() {
  PartResults part(options_.top_evidence);
  part.end = End();
  part.finished_at = finished_at_;
  for (uint32_t i = 0; i < processes_.size(); ++i) {
    if (!Owned(i)) continue;
    const JobProcess& p = processes_[i];
    part.processes.push_back({.process = i,
                              .last_seen = p.last_seen,
                              .end = p.end,
                              .ended = p.ended,
                              .visible_devices = devices_.VisibleDevices(i),
                              .startup = startup_.process(i)});
    ProcessSteps steps = step_finders_[i].Take(i, options_.step_marker);
    if (steps.activities != 0 || !steps.marker_starts.empty()) {
      for (uint32_t d : p.own_devices) steps.devices.push_back(devices_[d].id);
      part.steps.push_back(std::move(steps));
    }
  }
  for (const auto& [key, launch] : processes_.launches()) {
    part.launches.push_back({.host = key.first, .pid = key.second, .launch = launch});
  }
  // In (host, pid) order: the same analysis gives the same part, byte for byte in a summary.
  std::sort(part.launches.begin(), part.launches.end(), [](const auto& a, const auto& b) {
    return std::tie(a.host, a.pid) < std::tie(b.host, b.pid);
  });
  part.devices.reserve(devices_.size());
  for (uint32_t i = 0; i < devices_.size(); ++i) {
    const JobDevice& d = devices_[i];
    const DeviceTimeline& t = d.timeline;
    DeviceResult r;
    r.id = d.id;
    r.host = d.host;
    r.props = d.props;
    r.rank = d.rank;
    for (uint32_t p : d.processes) {
      const int32_t rank = processes_[p].info.rank;
      if (rank >= 0) r.ranks.push_back(rank);
    }
    std::sort(r.ranks.begin(), r.ranks.end());
    r.ranks.erase(std::unique(r.ranks.begin(), r.ranks.end()), r.ranks.end());
    r.processes = static_cast<uint32_t>(d.processes.size());
    r.compute_ns = t.compute_ns();
    r.comm_ns = t.comm_ns();
    r.transfer_ns = t.transfer_ns();
    r.any_kernel_ns = t.any_kernel_ns();
    r.kernels = t.kernel_stats();
    r.long_gaps = t.long_gaps();
    r.short_gaps = t.short_gaps();
    r.short_gap_ns = t.short_gap_ns();
    r.short_explained_ns = t.short_explained_ns();
    r.peak_memory = t.peak_memory();
    r.first_kernel = t.first_kernel();
    r.last_kernel_end = t.last_kernel_end();
    r.late_records = t.late_records();
    r.late_ns = t.late_ns();
    r.launches = d.launches;
    r.launcher_cpu_ns = d.launcher_cpu_ns;
    r.stretched_gaps = crediting_.stretched_gaps(i);
    r.stretched_ns = crediting_.stretched_ns(i);
    crediting_.CountOutlastingWrites(i, t.ran_kernels() ? t.last_kernel_end() : 0);
    r.causes = crediting_.totals(i);
    r.finished_at = finished_at_;
    if (const ClosedGap* last = crediting_.last_gap(i)) {
      r.has_last_gap = last->kind == GapKind::kTail || last->kind == GapKind::kWhole;
      r.last_gap = *last;
    }
    part.devices.push_back(std::move(r));
  }
  part.top_gaps = crediting_.top_gaps();
  part.host_activity = std::move(host_activity_);
  part.copy_rates = copy_rates_;
  part.directories = std::move(directories_);
  part.host_events = host_events_;
  part.gpu_records = gpu_records_;
  part.forgotten_candidates = window_.forgotten();
  part.late_candidates = crediting_.late_candidates();
  // The reader's warnings and figures of the owned files (a guest's are its owner's).
  absl::flat_hash_map<std::string_view, uint32_t> owned_file;
  for (uint32_t i = 0; i < processes_.size(); ++i) {
    if (Owned(i)) owned_file.emplace(processes_[i].info.file, i);
  }
  for (ReportWarning& w : warnings_) {
    auto it = owned_file.find(w.subject);
    if (it != owned_file.end()) part.warnings.push_back({it->second, std::move(w)});
  }
  for (FileReport& f : files_) {
    auto it = owned_file.find(f.path);
    if (it != owned_file.end()) part.files.push_back({it->second, std::move(f)});
  }
  warnings_.clear();
  files_.clear();
  return part;
}

JobInputs JobAnalysis::Inputs() const {
  JobInputs inputs;
  inputs.processes.reserve(processes_.size());
  for (uint32_t i = 0; i < processes_.size(); ++i) inputs.processes.push_back(processes_[i].info);
  inputs.skipped = skipped_;
  inputs.clocks = clocks_;
  return inputs;
}

JobReport JobAnalysis::BuildReport(const SymbolSource& symbols) {
  Start();
  Finish(End());
  cross_rank_.Finish();
  JobMerge merge(options_, Inputs());
  merge.Add(TakeResults());
  return merge.Build(cross_rank_, symbols);
}

}  // namespace idlescope
