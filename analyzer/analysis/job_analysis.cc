#include "analyzer/analysis/job_analysis.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analyzer/model/labels.h"

namespace idlescope {
namespace {

constexpr Ns kForever = std::numeric_limits<Ns>::max();
// Pinned host<->device bandwidth assumed when the trace has no large pinned copy to measure
// (PCIe 4 x16 in practice).
constexpr double kDefaultPinnedBytesPerNs = 12.0;  // 12 GB/s
// Copies smaller than this measure latency, not bandwidth (a 4-byte loss read-back into pinned
// memory takes ~2 us on an H200: 0.002 GB/s), and are left out of the measured rates.
constexpr uint64_t kMinRateBytes = 1 << 20;
// Idle slices no event explained are kept this long, for events that arrive late (a blocking
// call is recorded when it returns: a long one arrives long after it began).
constexpr Ns kResidualHorizon = 600'000'000'000;  // 10 min
// At most this many candidate events are held (about 100 MB); see Prune().
constexpr size_t kMaxPendingCandidates = 1 << 20;
// Candidate.stack / Candidate.object of an installer process's span: not an id of its trace file
// but "how this process was launched" (JobAnalysis::Launch), resolved when the report is built.
// Real ids are small counters, never this.
constexpr uint64_t kLaunchEvidence = ~uint64_t{0};
// Credits of device-to-host copies remembered per device, for snapshots found later.
constexpr size_t kMaxCopyCredits = 1024;

uint64_t ThreadKey(uint32_t process, uint32_t tid) { return (uint64_t{process} << 32) | tid; }

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

Cause ResidualCause(GapKind kind) {
  switch (kind) {
    case GapKind::kStartup:
      return Cause::kStartup;
    case GapKind::kTail:
      return Cause::kTail;
    default:
      return Cause::kUnknown;
  }
}

// Host activity items kept per kind before the lighter half is forgotten (as TopEvidence).
constexpr size_t kActivityCapacity = 1024;
// Longest command line kept for a program item.
constexpr size_t kProgramLabelMax = 200;

// "program arg1 arg2" from a NUL-separated argv (the program path when argv is empty), as the
// traced process's Header.cmdline is joined, so both name the same program the same way.
std::string ProgramLabel(std::string_view program, std::string_view argv) {
  std::string label;
  size_t pos = 0;
  while (pos < argv.size() && label.size() < kProgramLabelMax) {
    size_t stop = argv.find('\0', pos);
    if (stop == std::string_view::npos) stop = argv.size();
    if (stop > pos) {
      if (!label.empty()) label += ' ';
      label.append(argv.substr(pos, stop - pos));
    }
    pos = stop + 1;
  }
  if (label.empty()) label = std::string(program);
  // The program by its name (argv[0] is "python3" or "/usr/bin/python3" depending on the caller).
  size_t space = label.find(' ');
  size_t slash = label.rfind('/', space == std::string::npos ? label.size() : space);
  if (slash != std::string::npos && slash + 1 < label.size()) label.erase(0, slash + 1);
  if (label.size() > kProgramLabelMax) label.resize(kProgramLabelMax);
  return label;
}

}  // namespace

// The blocked calls of one host activity kind: exact totals, and per (process, path) item the
// figures of the heaviest items in bounded memory (the lighter half is forgotten when full).
struct JobAnalysis::ActivityTable {
  struct Weight {
    Ns ns = 0;
    uint64_t bytes = 0;
    uint64_t count = 0;
    Ns main_ns = 0;
    Ns longest = -1;  // the longest call, and its thread and stack
    uint32_t tid = 0;
    bool main_thread = false;
    uint64_t stack = 0;
    FsType fs = FS_UNSPECIFIED;
    std::string label;  // programs: the command line
    bool installer = false;
  };
  Ns ns = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  Ns main_ns = 0;
  bool evicted = false;
  absl::flat_hash_map<EvidenceKey, Weight> items;

  Weight& Item(EvidenceKey key) {
    if (items.size() >= kActivityCapacity && !items.contains(key)) Shrink();
    return items[key];
  }
  void Shrink() {
    std::vector<Ns> times;
    times.reserve(items.size());
    for (const auto& [key, w] : items) times.push_back(w.ns);
    auto middle = times.begin() + static_cast<ptrdiff_t>(times.size() / 2);
    std::nth_element(times.begin(), middle, times.end());
    Ns cut = *middle;
    absl::erase_if(items, [cut](const auto& kv) { return kv.second.ns < cut; });
    if (items.size() >= kActivityCapacity) {  // all equal: drop an arbitrary half
      size_t drop = items.size() / 2;
      for (auto it = items.begin(); it != items.end() && drop > 0; --drop) items.erase(it++);
    }
    evicted = true;
  }
};

struct JobAnalysis::CauseAccumulator {
  Ns ns = 0;
  Ns pageable_ns = 0;         // host_gpu_transfer: in pageable copies
  double pageable_bytes = 0;  // host_gpu_transfer: bytes of pageable copies, as `bytes` below
  Ns remote_ns = 0;           // data_loading: reading remote filesystems
  Ns worker_wait_ns = 0;      // data_loading: waiting on worker pipes/sockets
  Ns gpu_side_ns = 0;         // explained by the device's own activity only
  Ns snapshot_ns = 0;         // checkpointing: device-to-host snapshot copies before the write
  Ns preprocess_ns = 0;       // data_loading: launching-thread CPU time in gaps with its data reads
  double bytes = 0;           // bytes of the credited events, in proportion to the time credited
  std::array<Ns, 11> nccl_op_ns{};
  TopEvidence stacks;
  TopEvidence objects;
  TopEvidence directories;  // key id: hash of the directory (directory_names_)
};

struct JobAnalysis::OpenGap {
  std::array<Ns, kCauseCount> cause_ns{};
  Ns residual = 0;
  Candidate main;
  Ns main_ns = 0;
  bool has_main = false;
  bool launcher_read = false;  // a launching thread of the device read a data file in this gap
};

struct JobAnalysis::DeviceState {
  std::string id;
  std::string host;
  DeviceProps props;
  bool has_props = false;
  int32_t rank = -1;
  DeviceTimeline timeline;
  absl::flat_hash_set<uint64_t> launcher_threads;
  uint64_t launches = 0;  // kernel launches seen on the host side
  absl::flat_hash_set<uint32_t> processes;
  std::array<CauseAccumulator, kCauseCount> causes;
  OpenGap open_gap;
  // Recent idle slices no event explained, in time order: an event that arrives after its time
  // was attributed (a long blocking call is recorded when it returns) takes them back.
  struct ResidualSlice {
    Interval when;
    bool open;    // in the gap still open: its cause is decided when the gap closes
    Cause cause;  // when closed: the residual cause it was given
  };
  std::deque<ResidualSlice> residual_log;
  // Recent slices credited to device-to-host copies (and syncs of a copy run) of host threads:
  // a checkpoint write that follows moves them to checkpointing (ReclassifySnapshot).
  struct CopyCredit {
    Candidate candidate;
    Ns length;
    uint64_t gap_serial;  // the gap it was credited in (open_gap while equal to gap_serial)
  };
  std::deque<CopyCredit> copy_credits;
  uint64_t gap_serial = 0;

  DeviceState(uint32_t index, Ns job_start, Ns min_gap) : timeline(index, job_start, min_gap) {}
};

struct JobAnalysis::ProcessState {
  ProcessInfo info;
  Ns last_seen = 0;
  Ns end = 0;
  bool ended = false;
  bool installer = false;         // a package installer (its own command line)
  bool in_installer = false;      // the installer or one of its descendants
  bool worker = false;            // fork()ed from its parent, no exec: a DataLoader-style worker
  bool has_workers = false;       // the parent of workers
  std::vector<uint32_t> family;   // itself, its ancestors and descendants (same host)
  std::vector<uint32_t> devices;  // devices launched on by a process of the family
  absl::flat_hash_map<uint32_t, uint32_t> device_by_ordinal;
  absl::flat_hash_map<uint32_t, DeviceProps> props_by_ordinal;
  absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint64_t>> allocations;  // ptr -> dev, bytes
  std::vector<std::string> visible_tokens;  // CUDA_VISIBLE_DEVICES entries
  uint32_t visible_devices = 0;
  // Cache of the last launching thread seen: most events come from one thread.
  uint32_t cached_ordinal = ~uint32_t{0};  // the last ordinal looked up, and its device
  uint32_t cached_device = 0;
  uint64_t last_launcher = ~uint64_t{0};
  uint32_t last_launcher_device = 0;
  // File reads (not pipes or sockets), for the worker processes of the host activity report.
  uint64_t reads = 0;
  uint64_t read_bytes = 0;
  Ns read_ns = 0;
};

struct JobAnalysis::GapRecord {
  uint32_t device = 0;
  Interval gap;
  GapKind kind = GapKind::kMiddle;
  std::array<Ns, kCauseCount> cause_ns{};
  Candidate main;
  bool has_main = false;
  Cause main_cause = Cause::kUnknown;
};

JobAnalysis::JobAnalysis(AnalysisOptions options)
    : options_(options), activity_(kHostActivityKindCount) {
  if (options_.min_gap < 1) options_.min_gap = 1;
}

JobAnalysis::~JobAnalysis() = default;

void JobAnalysis::AddProcess(uint32_t index, const ProcessInfo& info) {
  // The reader numbers processes in the order it adds them.
  if (index != processes_.size()) return;
  auto process = std::make_unique<ProcessState>();
  process->info = info;
  process->last_seen = process->info.start;
  for (absl::string_view token :
       absl::StrSplit(process->info.cuda_visible_devices, ',', absl::SkipWhitespace())) {
    process->visible_tokens.emplace_back(token);
  }
  processes_.push_back(std::move(process));
  startup_.AddProcess(index, info);
  // Normally every process comes before the first record; a late one joins the families.
  if (started_) BuildFamilies();
}

void JobAnalysis::AddWarning(const ReportWarning& warning) { warnings_.push_back(warning); }

void JobAnalysis::AddFile(const FileReport& file) { files_.push_back(file); }

void JobAnalysis::Start() {
  if (started_) return;
  started_ = true;
  job_start_ = kForever;
  for (const auto& p : processes_) job_start_ = std::min(job_start_, p->info.start);
  if (job_start_ == kForever) job_start_ = 0;
  last_step_ = job_start_;
  BuildFamilies();
}

void JobAnalysis::BuildFamilies() {
  // Families: a process, its ancestors and its descendants on the same host. Their threads are
  // the "other threads and processes" whose activity can explain a device's idle time.
  auto parent_of = [&](uint32_t i) -> int64_t {
    const ProcessInfo& info = processes_[i]->info;
    for (uint32_t j = 0; j < processes_.size(); ++j) {
      if (j != i && processes_[j]->info.pid == info.ppid && processes_[j]->info.host == info.host) {
        return j;
      }
    }
    return -1;
  };
  std::vector<int64_t> parent(processes_.size());
  for (uint32_t i = 0; i < processes_.size(); ++i) parent[i] = parent_of(i);
  auto is_ancestor = [&](uint32_t ancestor, uint32_t of) {
    int64_t at = parent[of];
    for (size_t hops = 0; hops < processes_.size() && at >= 0; ++hops) {
      if (at == ancestor) return true;
      at = parent[at];
    }
    return false;
  };
  installer_spans_.clear();
  installer_pids_.clear();
  for (uint32_t i = 0; i < processes_.size(); ++i) {
    ProcessState& p = *processes_[i];
    p.installer = IsInstallerCommand(p.info.exe, p.info.cmdline);
    if (p.installer) installer_pids_.emplace(p.info.host, p.info.pid);
    p.has_workers = false;
  }
  for (uint32_t i = 0; i < processes_.size(); ++i) {
    ProcessState& p = *processes_[i];
    p.family.clear();
    p.devices.clear();
    bool installer_ancestor = false;
    for (uint32_t j = 0; j < processes_.size(); ++j) {
      if (i == j || is_ancestor(j, i) || is_ancestor(i, j)) p.family.push_back(j);
      if (j != i && is_ancestor(j, i) && processes_[j]->installer) installer_ancestor = true;
    }
    // What an installer's children do (a build backend, a compiler, a download helper) is part
    // of the installation.
    p.in_installer = p.installer || installer_ancestor;
    // A worker runs its parent's program: forked and not exec'd since. An exec'd child starts a
    // trace of its own with its new command line and the same pid, so a forked file with such a
    // twin is only the moment between fork() and exec() (subprocess.run, os.system).
    p.worker = false;
    if (parent[i] >= 0 && p.info.forked) {
      ProcessState& q = *processes_[parent[i]];
      bool execd = false;
      for (uint32_t j = 0; j < processes_.size(); ++j) {
        const ProcessInfo& other = processes_[j]->info;
        if (j != i && !other.forked && other.pid == p.info.pid && other.host == p.info.host) {
          execd = true;
        }
      }
      if (!execd && p.info.exe == q.info.exe && p.info.cmdline == q.info.cmdline) {
        p.worker = true;
        q.has_workers = true;
      }
    }
    // Only the outermost installer gets a span: its descendants' lifetimes lie within it.
    if (p.installer && !installer_ancestor) {
      Candidate span;
      span.when = {p.info.start, kForever};
      span.cause = Cause::kLibraryInstallation;
      span.event_class = EventClass::kInstaller;
      span.process = i;
      installer_spans_.push_back(span);
    }
  }
  // Devices already linked (a process added after the first records).
  for (uint32_t d = 0; d < devices_.size(); ++d) {
    std::vector<uint32_t> linked(devices_[d]->processes.begin(), devices_[d]->processes.end());
    devices_[d]->processes.clear();
    for (uint32_t process : linked) LinkProcess(process, d);
  }
}

void JobAnalysis::EndProcess(uint32_t process, Ns end) {
  ProcessState& p = *processes_[process];
  p.ended = true;
  p.end = std::max(end, p.info.start);
}

Ns JobAnalysis::ProcessEnd(const ProcessState& p) const {
  return p.ended ? std::max(p.end, p.last_seen) : p.last_seen;
}

uint32_t JobAnalysis::DeviceFor(uint32_t process, uint32_t ordinal) {
  ProcessState& p = *processes_[process];
  if (ordinal == p.cached_ordinal) return p.cached_device;
  auto it = p.device_by_ordinal.find(ordinal);
  if (it != p.device_by_ordinal.end()) {
    p.cached_ordinal = ordinal;
    p.cached_device = it->second;
    return it->second;
  }
  // Identity: the uuid when the process told it; else the host and the physical device named
  // by CUDA_VISIBLE_DEVICES (or the ordinal when that is unset).
  std::string key;
  auto props = p.props_by_ordinal.find(ordinal);
  if (props != p.props_by_ordinal.end() && !props->second.uuid.empty()) {
    key = absl::StrCat(p.info.host, "/", props->second.uuid);
  } else if (ordinal < p.visible_tokens.size()) {
    key = absl::StrCat(p.info.host, "/", p.visible_tokens[ordinal]);
  } else {
    key = absl::StrCat(p.info.host, "/", ordinal);
  }
  auto [slot, inserted] = device_by_key_.try_emplace(key, devices_.size());
  if (inserted) {
    auto device = std::make_unique<DeviceState>(static_cast<uint32_t>(devices_.size()), job_start_,
                                                options_.min_gap);
    device->id = key;
    device->host = p.info.host;
    device->rank = p.info.rank;
    devices_.push_back(std::move(device));
  }
  uint32_t index = slot->second;
  if (props != p.props_by_ordinal.end() && !devices_[index]->has_props) {
    devices_[index]->props = props->second;
    devices_[index]->has_props = true;
    devices_[index]->timeline.SetSmCount(props->second.sm_count);
  }
  p.device_by_ordinal[ordinal] = index;
  LinkProcess(process, index);
  return index;
}

void JobAnalysis::LinkProcess(uint32_t process, uint32_t device) {
  DeviceState& d = *devices_[device];
  if (!d.processes.insert(process).second) return;
  if (d.rank < 0) d.rank = processes_[process]->info.rank;
  for (uint32_t member : processes_[process]->family) {
    std::vector<uint32_t>& devices = processes_[member]->devices;
    if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
      devices.push_back(device);
    }
  }
}

void JobAnalysis::AddDeviceInfo(uint32_t process, const DeviceProps& props) {
  Start();
  ProcessState& p = *processes_[process];
  p.props_by_ordinal[props.ordinal] = props;
  p.visible_devices = std::max(p.visible_devices, props.visible_devices);
  auto it = p.device_by_ordinal.find(props.ordinal);
  if (it != p.device_by_ordinal.end() && !devices_[it->second]->has_props) {
    DeviceState& d = *devices_[it->second];
    d.props = props;
    d.has_props = true;
    d.timeline.SetSmCount(props.sm_count);
  }
}

void JobAnalysis::AddCandidate(const Candidate& candidate) {
  ReclaimResidual(candidate);
  incoming_.push_back(candidate);
  peak_pending_ = std::max(peak_pending_, pending_.size() + incoming_.size());
}

void JobAnalysis::AddHostEvent(const HostEvent& e) {
  Start();
  ++host_events_;
  ProcessState& p = *processes_[e.process];
  p.last_seen = std::max(p.last_seen, e.end);
  if (__builtin_expect(!startup_.launched(e.process), 0)) startup_.Note(e);
  if (e.device >= 0 && IsLaunchEvent(e.type)) {
    uint64_t thread = ThreadKey(e.process, e.tid);
    uint32_t ordinal = static_cast<uint32_t>(e.device);
    if (thread != p.last_launcher || ordinal != p.last_launcher_device) {
      devices_[DeviceFor(e.process, ordinal)]->launcher_threads.insert(thread);
      p.last_launcher = thread;
      p.last_launcher_device = ordinal;
    }
  }
  switch (e.type) {
    case CUDA_LAUNCH:
    case CUDA_LAUNCH_SUMMARY:
    case CUDA_GRAPH_LAUNCH:
      // A launch ends the thread's run of copies: what follows is training, not a snapshot.
      snapshots_.EndRun(e.process, e.tid);
      if (e.device >= 0) {
        devices_[DeviceFor(e.process, static_cast<uint32_t>(e.device))]->launches +=
            e.type == CUDA_LAUNCH_SUMMARY ? std::max<uint64_t>(e.count, 1) : 1;
      }
      return;  // the hot path: launches explain no idle time
    case CUDA_MALLOC:
      if (e.device >= 0 && e.bytes > 0) {
        uint32_t device = DeviceFor(e.process, static_cast<uint32_t>(e.device));
        devices_[device]->timeline.AddAllocation(static_cast<int64_t>(e.bytes));
        p.allocations[e.ptr] = {device, e.bytes};
      }
      return;
    case CUDA_FREE: {
      auto it = p.allocations.find(e.ptr);
      if (it != p.allocations.end()) {
        devices_[it->second.first]->timeline.AddAllocation(
            -static_cast<int64_t>(it->second.second));
        p.allocations.erase(it);
      }
      return;
    }
    case NCCL_COLLECTIVE:
      collectives_.Note(e.comm, e.seq, e.nranks, e.rank, p.info.rank, e.start);
      break;
    case PROC_FORK:
    case PROC_EXEC:
    case PROC_SPAWN:
      NoteLaunch(e);
      break;
    default:
      break;
  }
  EventClassification c = ClassifyHostEvent(e);
  NoteHostActivity(e, c.event_class);
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
  candidate.object = e.path_id;
  candidate.bytes = e.bytes;
  candidate.directory = DirectoryOf(e);
  // Code and system paths returned above: what is left is data unless it is a model file.
  candidate.data_read = file_read && !e.path.empty() && !IsModelCheckpointPath(e.path);
  if (snapshots_.Note(candidate, &snapshot_copies_)) {
    for (const Interval& copy : snapshot_copies_) ReclassifySnapshot(e.process, e.tid, copy);
  }
  AddCandidate(candidate);
}

void JobAnalysis::ReclassifySnapshot(uint32_t process, uint32_t tid, Interval copy) {
  auto is_copy = [&](const Candidate& c) { return IsSnapshotCopy(c, process, tid, copy); };
  auto to_snapshot = [](Candidate& c) { MakeSnapshot(c); };
  // Its time not yet attributed: the candidate itself is still held.
  auto first = std::lower_bound(pending_.begin(), pending_.end(), copy.start,
                                [](const Candidate& c, Ns t) { return c.when.start < t; });
  for (auto it = first; it != pending_.end() && it->when.start == copy.start; ++it) {
    if (is_copy(*it)) to_snapshot(*it);
  }
  for (Candidate& c : incoming_) {
    if (is_copy(c)) to_snapshot(c);
  }
  // Its time already attributed: move the credited slices (the late-events mechanism for
  // credited rather than residual time).
  for (uint32_t index : processes_[process]->devices) {
    DeviceState& d = *devices_[index];
    std::erase_if(d.copy_credits, [&](DeviceState::CopyCredit& credit) {
      if (!is_copy(credit.candidate)) return false;
      const Candidate& old = credit.candidate;
      CauseAccumulator& from = d.causes[Index(old.cause)];
      Ns event_length = std::max<Ns>(old.when.length(), 1);
      double bytes = static_cast<double>(old.bytes) * static_cast<double>(credit.length) /
                     static_cast<double>(event_length);
      uint64_t whole_bytes = static_cast<uint64_t>(bytes + 0.5);
      from.ns -= credit.length;
      from.bytes -= bytes;
      if (old.pageable) from.pageable_ns -= credit.length;
      if (old.stack != 0) from.stacks.Remove({old.process, old.stack}, credit.length, whole_bytes);
      if (old.object != 0) {
        from.objects.Remove({old.process, old.object}, credit.length, whole_bytes);
      }
      bool open = credit.gap_serial == d.gap_serial;
      if (open) {
        d.open_gap.cause_ns[Index(old.cause)] -= credit.length;
        d.open_gap.cause_ns[Index(Cause::kCheckpointing)] += credit.length;
        if (d.open_gap.has_main && is_copy(d.open_gap.main)) to_snapshot(d.open_gap.main);
      }
      Candidate snapshot = old;
      to_snapshot(snapshot);
      CreditCause(d, snapshot, credit.length, open);
      return true;
    });
  }
}

void JobAnalysis::NoteHostActivity(const HostEvent& e, EventClass event_class) {
  HostActivityKind kind;
  switch (e.type) {
    case PROC_EXEC:
    case PROC_SPAWN:
      kind = HostActivityKind::kPrograms;
      break;
    case FILE_WRITE:
    case FILE_SYNC:
    case FILE_RENAME:
    case FILE_CLOSE:
      if (event_class == EventClass::kCheckpointWrite) {
        kind = HostActivityKind::kCheckpointWrites;
      } else if (e.type == FILE_CLOSE && !IsRemoteFs(e.fs_type)) {
        return;  // closing a local file does not block (see ClassifyHostEvent)
      } else if (e.fs_type == FS_SOCKET &&
                 (e.net_scope == NET_PRIVATE || e.net_scope == NET_PUBLIC)) {
        kind = HostActivityKind::kNetwork;
      } else if (e.fs_type == FS_PIPE || e.fs_type == FS_SOCKET) {
        kind = HostActivityKind::kIpc;
      } else {
        kind = HostActivityKind::kWrites;
      }
      break;
    case FILE_READ:
      if (event_class == EventClass::kTerminalRead) {
        kind = HostActivityKind::kTerminal;
      } else if (event_class == EventClass::kReadWorkerQueue) {
        kind = HostActivityKind::kIpc;
      } else {
        kind = HostActivityKind::kReads;
      }
      break;
    case NET_CONNECT:
    case NET_RECV:
    case NET_SEND:
      kind = e.net_scope == NET_PRIVATE || e.net_scope == NET_PUBLIC ? HostActivityKind::kNetwork
                                                                     : HostActivityKind::kIpc;
      break;
    default:
      return;
  }
  ProcessState& p = *processes_[e.process];
  Ns ns = std::max<Ns>(e.end - e.start, 0);
  uint64_t calls = std::max<uint64_t>(e.count, 1);
  uint32_t main_tid = p.info.main_tid != 0 ? p.info.main_tid : p.info.pid;
  bool main_thread = e.tid == main_tid;
  if (kind == HostActivityKind::kReads) {
    p.reads += calls;
    p.read_bytes += e.bytes;
    p.read_ns += ns;
  }
  ActivityTable& table = activity_[static_cast<size_t>(kind)];
  table.ns += ns;
  table.bytes += e.bytes;
  table.count += calls;
  if (main_thread) table.main_ns += ns;
  ActivityTable::Weight& w = table.Item({e.process, e.path_id});
  w.ns += ns;
  w.bytes += e.bytes;
  w.count += calls;
  if (main_thread) w.main_ns += ns;
  if (ns > w.longest) {
    w.longest = ns;
    w.tid = e.tid;
    w.main_thread = main_thread;
    if (e.stack != 0) w.stack = e.stack;
    w.fs = e.fs_type;
  }
  if (kind == HostActivityKind::kPrograms && w.label.empty()) {
    w.label = ProgramLabel(e.path, e.argv);
    w.installer = event_class == EventClass::kInstaller;
  }
}

void JobAnalysis::NoteLaunch(const HostEvent& e) {
  // exec keeps the pid (the installer is the caller itself); fork and posix_spawn name the child.
  const ProcessState& p = *processes_[e.process];
  uint32_t pid = e.type == PROC_EXEC ? p.info.pid : e.child_pid;
  if (pid == 0) return;
  bool names_installer = e.type != PROC_FORK && IsInstallerCommand(e.path, e.argv);
  auto key = std::make_pair(p.info.host, pid);
  auto it = launches_.find(key);
  if (it == launches_.end()) {
    // Only installers are kept: a job forks and execs many programs. (An installer's own exec of
    // itself is no launch of it: its first launch came before.)
    bool installer = names_installer || (installer_pids_.contains(key) && !p.installer);
    if (!installer) return;
    it = launches_.emplace(key, Launch{}).first;
  }
  Launch& launch = it->second;
  bool exec_like = e.type != PROC_FORK;
  // The first exec/spawn names the command (a later one is the installer re-exec'ing itself).
  if (exec_like && launch.command.empty()) launch.command = ProgramLabel(e.path, e.argv);
  if (e.stack != 0 && (launch.stack == 0 || (exec_like && !launch.exec_stack))) {
    launch.stack_process = e.process;
    launch.stack = e.stack;
    launch.exec_stack = exec_like;
  }
}

const JobAnalysis::Launch* JobAnalysis::LaunchOf(uint32_t process) const {
  const ProcessInfo& info = processes_[process]->info;
  auto it = launches_.find(std::make_pair(info.host, info.pid));
  return it == launches_.end() ? nullptr : &it->second;
}

std::string JobAnalysis::InstallerCommand(uint32_t process) const {
  const Launch* launch = LaunchOf(process);
  if (launch != nullptr && !launch->command.empty()) return launch->command;
  // Not seen started (its parent untraced): its own command line.
  const ProcessInfo& info = processes_[process]->info;
  std::string argv = info.cmdline;  // joined by spaces: as a NUL-separated argv, in effect
  std::replace(argv.begin(), argv.end(), ' ', '\0');
  return ProgramLabel(info.exe, argv);
}

uint64_t JobAnalysis::DirectoryOf(const HostEvent& e) {
  if (e.type < FILE_OPEN || e.type > FILE_CLOSE) return 0;
  size_t slash = e.path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return 0;
  std::string_view directory = e.path.substr(0, slash);
  uint64_t hash = absl::HashOf(directory) | 1;
  // Directories are few (files are many); stop naming new ones past a bound.
  if (!directory_names_.contains(hash) && directory_names_.size() < 65536) {
    directory_names_.emplace(hash, std::string(directory));
  }
  return hash;
}

void JobAnalysis::AddGpuRecord(const GpuRecord& r) {
  Start();
  ++gpu_records_;
  ProcessState& p = *processes_[r.process];
  p.last_seen = std::max(p.last_seen, r.end);
  uint32_t device = DeviceFor(r.process, r.device);
  DeviceState& d = *devices_[device];
  d.timeline.AddActivity(r);
  if (r.end <= r.start) return;
  if (r.kind == GPU_MEMCPY && r.bytes >= kMinRateBytes &&
      (r.copy_kind == COPY_H2D || r.copy_kind == COPY_D2H)) {
    MemKind host = r.copy_kind == COPY_H2D ? r.src_kind : r.dst_kind;
    auto add = [&](CopyRate& rate) {
      rate.bytes += r.bytes;
      rate.ns += r.end - r.start;
    };
    if (host == MEM_PINNED) add(pinned_copies_);
    if (r.copy_kind == COPY_D2H) {
      add(d2h_copies_);
      if (host == MEM_PINNED) add(d2h_pinned_copies_);
    }
  }
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

void JobAnalysis::AdvanceTo(Ns t) {
  if (!started_) Start();
  if (t < last_step_ + options_.advance_quantum) return;
  Step(t);
}

void JobAnalysis::Step(Ns t) {
  last_step_ = t;
  MergeIncoming();
  for (auto& d : devices_) d->timeline.Advance(t, &gap_events_);
  HandleGapEvents();
  if (pending_.size() > 2 * pending_after_prune_ + 1024) Prune();
  collectives_.Expire(t);
}

void JobAnalysis::MergeIncoming() {
  if (incoming_.empty()) return;
  auto by_start = [](const Candidate& a, const Candidate& b) {
    return a.when.start < b.when.start;
  };
  std::stable_sort(incoming_.begin(), incoming_.end(), by_start);
  for (const Candidate& c : incoming_)
    longest_pending_ = std::max(longest_pending_, c.when.length());
  size_t old_size = pending_.size();
  pending_.insert(pending_.end(), incoming_.begin(), incoming_.end());
  std::inplace_merge(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(old_size),
                     pending_.end(), by_start);
  incoming_.clear();
}

void JobAnalysis::HandleGapEvents() {
  for (const GapEvent& event : gap_events_) {
    if (event.type == GapEvent::kPiece) {
      Attribute(event.device, event.piece);
    } else {
      CloseGap(event.device, event.gap, event.kind);
    }
  }
  gap_events_.clear();
}

const Tier* JobAnalysis::TierFor(const Candidate& c, const DeviceState& d, uint32_t device_index,
                                 Tier* storage) const {
  if (c.gpu_side) {
    if (c.device != device_index) return nullptr;
    *storage = Tier::kGpu;
    return storage;
  }
  if (d.launcher_threads.contains(ThreadKey(c.process, c.tid))) {
    *storage = Tier::kLaunchingThread;
    return storage;
  }
  const std::vector<uint32_t>& devices = processes_[c.process]->devices;
  if (c.event_class == EventClass::kInstaller ||
      std::find(devices.begin(), devices.end(), device_index) != devices.end()) {
    *storage = Tier::kJobProcess;
    return storage;
  }
  return nullptr;
}

void JobAnalysis::Attribute(uint32_t device_index, Interval piece) {
  DeviceState& d = *devices_[device_index];
  ranked_.clear();
  tiers_.clear();
  // Stable pointers: tiers_ must not reallocate while ranked_ points into it.
  tiers_.reserve(pending_.size() + installer_spans_.size());
  auto consider = [&](const Candidate& c) {
    if (c.when.end <= piece.start || c.when.start >= piece.end) return;
    Tier tier;
    if (TierFor(c, d, device_index, &tier) == nullptr) return;
    if (c.data_read && tier == Tier::kLaunchingThread) d.open_gap.launcher_read = true;
    tiers_.push_back(tier);
    ranked_.push_back({&c, tier});
  };
  // pending_ is sorted by start and no candidate is longer than longest_pending_: the ones that
  // can reach into the piece start at most that long before it.
  auto first = std::lower_bound(pending_.begin(), pending_.end(), piece.start - longest_pending_,
                                [](const Candidate& c, Ns t) { return c.when.start < t; });
  for (auto it = first; it != pending_.end() && it->when.start < piece.end; ++it) consider(*it);
  for (Candidate& span : installer_spans_) {
    span.when.end = ProcessEnd(*processes_[span.process]);
    // Its evidence is how it was started (resolved in Finish): its command line always, the
    // stack of the call that started it once that call was seen.
    span.object = kLaunchEvidence;
    const Launch* launch = LaunchOf(span.process);
    span.stack = launch != nullptr && launch->stack != 0 ? kLaunchEvidence : 0;
    consider(span);
  }
  for (const Slice& slice : ResolveSlices(piece, ranked_)) {
    Credit(d, slice.winner >= 0 ? ranked_[slice.winner].candidate : nullptr, slice.when);
  }
}

void JobAnalysis::Credit(DeviceState& d, const Candidate* c, Interval slice) {
  OpenGap& gap = d.open_gap;
  Ns length = slice.length();
  if (c == nullptr) {
    gap.residual += length;
    if (!d.residual_log.empty() && d.residual_log.back().open &&
        d.residual_log.back().when.end == slice.start) {
      d.residual_log.back().when.end = slice.end;
    } else {
      d.residual_log.push_back({slice, true, Cause::kUnknown});
    }
    return;
  }
  gap.cause_ns[Index(c->cause)] += length;
  CreditCause(d, *c, length, true);
  if (length > gap.main_ns) {
    gap.main = *c;
    gap.main_ns = length;
    gap.has_main = true;
  }
}

void JobAnalysis::CreditCause(DeviceState& d, const Candidate& candidate, Ns length,
                              bool in_open_gap) {
  const Candidate* c = &candidate;
  CauseAccumulator& acc = d.causes[Index(c->cause)];
  acc.ns += length;
  Ns event_length = std::max<Ns>(c->when.length(), 1);
  double bytes = static_cast<double>(c->bytes) * static_cast<double>(length) /
                 static_cast<double>(event_length);
  // Snapshot bytes are copied, not written: the checkpointing estimate counts written bytes.
  if (c->snapshot) {
    acc.snapshot_ns += length;
  } else {
    acc.bytes += bytes;
  }
  if (snapshots_.MayBecomeSnapshot(*c)) {
    if (d.copy_credits.size() >= kMaxCopyCredits) d.copy_credits.pop_front();
    d.copy_credits.push_back({*c, length, in_open_gap ? d.gap_serial : ~uint64_t{0}});
  }
  uint64_t whole_bytes = static_cast<uint64_t>(bytes + 0.5);
  if (c->stack != 0) acc.stacks.Add({c->process, c->stack}, length, whole_bytes);
  if (c->object != 0) acc.objects.Add({c->process, c->object}, length, whole_bytes);
  if (c->directory != 0) acc.directories.Add({0, c->directory}, length, whole_bytes);
  if (c->pageable) {
    acc.pageable_ns += length;
    acc.pageable_bytes += bytes;
  }
  if (c->event_class == EventClass::kReadRemote) acc.remote_ns += length;
  if (c->event_class == EventClass::kReadWorkerQueue) acc.worker_wait_ns += length;
  if (c->gpu_side) acc.gpu_side_ns += length;
  if (c->nccl_op > 0 && c->nccl_op < static_cast<int>(acc.nccl_op_ns.size())) {
    acc.nccl_op_ns[c->nccl_op] += length;
  }
}

void JobAnalysis::ReclaimResidual(const Candidate& c) {
  // Only the devices the candidate can explain (TierFor): its own device, its family's devices,
  // or every device for an installer.
  const std::vector<uint32_t>& family_devices = processes_[c.process]->devices;
  size_t count = c.gpu_side                                ? 1
                 : c.event_class == EventClass::kInstaller ? devices_.size()
                                                           : family_devices.size();
  for (size_t k = 0; k < count; ++k) {
    uint32_t index = c.gpu_side                                ? c.device
                     : c.event_class == EventClass::kInstaller ? static_cast<uint32_t>(k)
                                                               : family_devices[k];
    DeviceState& d = *devices_[index];
    if (c.when.start >= d.timeline.attributed_until()) continue;
    Tier tier;
    if (TierFor(c, d, index, &tier) == nullptr) continue;
    if (c.when.start < d.timeline.attributed_until() - kResidualHorizon) ++late_candidates_;
    // Residual slices had no candidate at all, so the late event is the only one there: it
    // takes them whatever its rank.
    // The log is in time order: only the slices from the first one ending after the event's
    // start to the last one starting before its end are touched.
    auto& log = d.residual_log;
    auto first = std::partition_point(
        log.begin(), log.end(), [&](const auto& slice) { return slice.when.end <= c.when.start; });
    auto last = first;
    std::vector<DeviceState::ResidualSlice> rest;
    for (; last != log.end() && last->when.start < c.when.end; ++last) {
      const auto& slice = *last;
      Ns s = std::max(slice.when.start, c.when.start);
      Ns e = std::min(slice.when.end, c.when.end);
      Ns taken = e - s;
      if (slice.open) {
        d.open_gap.residual -= taken;
        d.open_gap.cause_ns[Index(c.cause)] += taken;
      } else {
        d.causes[Index(slice.cause)].ns -= taken;
      }
      CreditCause(d, c, taken, slice.open);
      reclaimed_ns_ += taken;
      if (slice.when.start < s) rest.push_back({{slice.when.start, s}, slice.open, slice.cause});
      if (e < slice.when.end) rest.push_back({{e, slice.when.end}, slice.open, slice.cause});
    }
    if (first == last) continue;
    auto at = log.erase(first, last);
    log.insert(at, rest.begin(), rest.end());
  }
}

void JobAnalysis::CloseGap(uint32_t device_index, Interval gap, GapKind kind) {
  DeviceState& d = *devices_[device_index];
  OpenGap& open = d.open_gap;
  Cause residual = ResidualCause(kind);
  // Between kernels, a launching thread that read data files in the gap spent the rest of it
  // preparing that data (decoding, augmenting, collating: DataLoader(num_workers=0)).
  if (kind == GapKind::kMiddle && open.launcher_read) {
    residual = Cause::kDataLoading;
    d.causes[Index(residual)].preprocess_ns += open.residual;
  }
  if (open.residual > 0) {
    d.causes[Index(residual)].ns += open.residual;
    open.cause_ns[Index(residual)] += open.residual;
  }
  // The open gap's slices are the newest: a suffix of the log.
  for (auto it = d.residual_log.rbegin(); it != d.residual_log.rend() && it->open; ++it) {
    it->open = false;
    it->cause = residual;
  }
  Ns horizon = gap.end - kResidualHorizon;
  while (!d.residual_log.empty() && !d.residual_log.front().open &&
         d.residual_log.front().when.end < horizon) {
    d.residual_log.pop_front();
  }
  GapRecord record;
  record.device = device_index;
  record.gap = gap;
  record.kind = kind;
  record.cause_ns = open.cause_ns;
  record.main = open.main;
  // A gap mostly unexplained is not illustrated by the event that covers a sliver of it.
  record.has_main = open.has_main && open.main_ns >= open.residual;
  record.main_cause = open.main.cause;
  auto shorter = [](const GapRecord& a, const GapRecord& b) {
    return a.gap.length() > b.gap.length();
  };
  if (options_.top_gaps > 0) {
    if (top_gaps_.size() < options_.top_gaps) {
      top_gaps_.push_back(std::move(record));
      std::push_heap(top_gaps_.begin(), top_gaps_.end(), shorter);
    } else if (gap.length() > top_gaps_.front().gap.length()) {
      std::pop_heap(top_gaps_.begin(), top_gaps_.end(), shorter);
      top_gaps_.back() = std::move(record);
      std::push_heap(top_gaps_.begin(), top_gaps_.end(), shorter);
    }
  }
  open = OpenGap{};
  ++d.gap_serial;
}

void JobAnalysis::Prune() {
  // A host candidate can be forgotten once every device its process's family launches on has
  // been attributed past its end; a device-side one once its device has.
  Ns all_devices = devices_.empty() ? IntervalUnion::kNever : kForever;
  for (const auto& d : devices_) {
    all_devices = std::min(all_devices, d->timeline.attributed_until());
  }
  std::vector<Ns> process_horizon(processes_.size(), IntervalUnion::kNever);
  for (size_t i = 0; i < processes_.size(); ++i) {
    const std::vector<uint32_t>& devices = processes_[i]->devices;
    if (devices.empty()) continue;  // may still explain a device not seen yet
    Ns horizon = kForever;
    for (uint32_t d : devices)
      horizon = std::min(horizon, devices_[d]->timeline.attributed_until());
    process_horizon[i] = horizon;
  }
  std::erase_if(pending_, [&](const Candidate& c) {
    if (c.gpu_side) return c.when.end <= devices_[c.device]->timeline.attributed_until();
    if (c.event_class == EventClass::kInstaller) return c.when.end <= all_devices;
    return c.when.end <= process_horizon[c.process];
  });
  // Candidates of processes whose family never used a device are kept for a device that may
  // still appear, but not without bound: past the cap the oldest are forgotten (and said so).
  if (pending_.size() > kMaxPendingCandidates) {
    size_t excess = pending_.size() - kMaxPendingCandidates / 2;
    forgotten_candidates_ += excess;
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(excess));
  }
  pending_after_prune_ = pending_.size();
  longest_pending_ = 0;
  for (const Candidate& c : pending_)
    longest_pending_ = std::max(longest_pending_, c.when.length());
}

HostActivityReport JobAnalysis::BuildHostActivity(EvidenceResolver& evidence) const {
  HostActivityReport report;
  // Programs that ran as traced processes of the job: children that exec'd (not forked copies)
  // count with their run time, merged with the exec/spawn calls that started them by command line.
  struct Ran {
    std::string label;
    const ProcessState* process;
  };
  std::vector<Ran> programs;
  for (const auto& p : processes_) {
    const ProcessState* parent = nullptr;
    for (const auto& q : processes_) {
      if (q.get() != p.get() && q->info.pid == p->info.ppid && q->info.host == p->info.host) {
        parent = q.get();
      }
    }
    if (parent == nullptr) continue;
    // Workers (BuildFamilies): forked, same program, not exec'd since.
    if (p->worker) {
      WorkerProcess w;
      w.pid = p->info.pid;
      w.ppid = p->info.ppid;
      w.lifetime_ns = ProcessEnd(*p) - p->info.start;
      w.reads = p->reads;
      w.read_bytes = p->read_bytes;
      w.read_ns = p->read_ns;
      report.workers_with_reads += w.reads > 0;
      report.workers.push_back(w);
    } else if (!p->info.forked || p->info.exe != parent->info.exe ||
               p->info.cmdline != parent->info.cmdline) {
      // (A forked copy of its parent that exec'd is counted by its exec'd twin.)
      std::string argv = p->info.cmdline;  // joined by spaces: as a NUL-separated argv, in effect
      std::replace(argv.begin(), argv.end(), ' ', '\0');
      programs.push_back({ProgramLabel(p->info.exe, argv), p.get()});
    }
  }
  std::sort(report.workers.begin(), report.workers.end(),
            [](const WorkerProcess& a, const WorkerProcess& b) { return a.pid < b.pid; });

  for (int k = 0; k < kHostActivityKindCount; ++k) {
    const HostActivityKind kind = static_cast<HostActivityKind>(k);
    const ActivityTable& table = activity_[static_cast<size_t>(k)];
    HostActivityGroup group;
    group.kind = kind;
    group.ns = table.ns;
    group.bytes = table.bytes;
    group.count = table.count;
    group.main_thread_ns = table.main_ns;
    group.approximate = table.evicted;
    // The heaviest items, merged across processes by what they name (ids are per file).
    std::vector<std::pair<EvidenceKey, const ActivityTable::Weight*>> heaviest;
    for (const auto& [key, w] : table.items) heaviest.push_back({key, &w});
    auto heavier = [](const auto& a, const auto& b) {
      if (a.second->ns != b.second->ns) return a.second->ns > b.second->ns;
      if (a.second->bytes != b.second->bytes) return a.second->bytes > b.second->bytes;
      return std::tie(a.first.process, a.first.id) < std::tie(b.first.process, b.first.id);
    };
    size_t n = std::min(heaviest.size(), options_.top_evidence * 8);
    std::partial_sort(heaviest.begin(), heaviest.begin() + static_cast<ptrdiff_t>(n),
                      heaviest.end(), heavier);
    heaviest.resize(n);
    absl::flat_hash_map<StringId, size_t> index;
    std::vector<Ns> longest;
    std::vector<absl::flat_hash_set<uint32_t>> pids;
    auto item_for = [&](StringId what) -> size_t {
      auto [it, inserted] = index.try_emplace(what, group.items.size());
      if (inserted) {
        group.items.push_back({});
        group.items.back().what = what;
        longest.push_back(-1);
        pids.emplace_back();
      }
      return it->second;
    };
    for (const auto& [key, w] : heaviest) {
      const ProcessState& p = *processes_[key.process];
      StringId what = kind == HostActivityKind::kPrograms ? evidence.Intern(w->label)
                      : key.id != 0                       ? evidence.String(key.process, key.id)
                                                          : 0;
      size_t i = item_for(what);
      HostActivityItem& item = group.items[i];
      item.ns += w->ns;
      item.bytes += w->bytes;
      item.count += w->count;
      item.main_thread_ns += w->main_ns;
      item.installer = item.installer || w->installer;
      pids[i].insert(p.info.pid);
      if (w->longest > longest[i]) {
        longest[i] = w->longest;
        item.pid = p.info.pid;
        item.tid = w->tid;
        item.main_thread = w->main_thread;
        item.fs_type = w->fs;
        item.stack = w->stack != 0 ? evidence.Stack(key.process, w->stack) : 0;
      }
    }
    if (kind == HostActivityKind::kPrograms) {
      for (const Ran& ran : programs) {
        Ns ran_ns = ProcessEnd(*ran.process) - ran.process->info.start;
        size_t i = item_for(evidence.Intern(ran.label));
        HostActivityItem& item = group.items[i];
        item.ns += ran_ns;
        item.count += item.count == 0;  // traced, though its start was not
        item.installer = item.installer || ran.process->installer;
        pids[i].insert(ran.process->info.pid);
        if (item.pid == 0) item.pid = ran.process->info.pid;
        group.ns += ran_ns;
        group.count += 1;
      }
    }
    for (size_t i = 0; i < group.items.size(); ++i) {
      group.items[i].processes = static_cast<uint32_t>(pids[i].size());
    }
    const ReportSymbols& names = evidence.symbols();
    std::sort(group.items.begin(), group.items.end(),
              [&](const HostActivityItem& a, const HostActivityItem& b) {
                if (a.ns != b.ns) return a.ns > b.ns;
                if (a.bytes != b.bytes) return a.bytes > b.bytes;
                return ItemLabel(a.what, names) < ItemLabel(b.what, names);
              });
    if (group.items.size() > options_.top_evidence) group.items.resize(options_.top_evidence);
    if (group.count > 0 || !group.items.empty()) report.groups.push_back(std::move(group));
  }
  return report;
}

namespace {

// A job without GPU work: its no_gpu_work cause points at what the job's threads did instead
// (docs/attribution.md, "Host activity"): the heaviest host activity items, and one note per kind.
void PointAtHostActivity(const HostActivityReport& host, size_t top, CauseReport& r) {
  struct Heavy {
    const HostActivityGroup* group;
    const HostActivityItem* item;
  };
  std::vector<Heavy> heavy;
  std::vector<const HostActivityGroup*> groups;
  for (const HostActivityGroup& g : host.groups) groups.push_back(&g);
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto* a, const auto* b) { return a->ns > b->ns; });
  for (const HostActivityGroup* g : groups) {
    Finding f{
        .kind = FindingKind::kHostActivity, .ns = g->ns, .bytes = g->bytes, .count = g->count};
    f.activity = g->kind;
    r.findings.push_back(f);
    // Pipes and sockets only say "waiting for another process": they are evidence only when
    // nothing else is.
    if (g->kind == HostActivityKind::kIpc && groups.size() > 1) continue;
    for (const HostActivityItem& item : g->items) heavy.push_back({g, &item});
  }
  if (!host.workers.empty()) {
    Finding f{.kind = FindingKind::kWorkerProcesses, .count = host.workers.size()};
    f.other_count = host.workers_with_reads;
    for (const WorkerProcess& w : host.workers) {
      f.calls += w.reads;
      f.bytes += w.read_bytes;
    }
    r.findings.push_back(f);
  }
  std::stable_sort(heavy.begin(), heavy.end(),
                   [](const Heavy& a, const Heavy& b) { return a.item->ns > b.item->ns; });
  for (const Heavy& h : heavy) {
    if (r.objects.size() >= top) break;
    EvidenceItem object{.kind = EvidenceKind::kHostActivity, .id = h.item->what};
    object.activity = h.group->kind;
    object.ns = h.item->ns;
    object.bytes = h.item->bytes;
    object.count = h.item->count;
    r.objects.push_back(object);
    if (h.item->stack == 0) continue;
    auto same = [&](const EvidenceItem& e) {
      return e.kind == EvidenceKind::kStack && e.id == h.item->stack;
    };
    auto it = std::find_if(r.stacks.begin(), r.stacks.end(), same);
    if (it == r.stacks.end()) {
      EvidenceItem stack{.kind = EvidenceKind::kStack, .id = h.item->stack};
      stack.ns = h.item->ns;
      stack.bytes = h.item->bytes;
      stack.count = h.item->count;
      r.stacks.push_back(stack);
    } else {
      it->ns += h.item->ns;
      it->bytes += h.item->bytes;
      it->count += h.item->count;
    }
  }
}

}  // namespace

JobReport JobAnalysis::Finish(const SymbolSource& symbols) {
  Start();
  Ns job_end = job_start_;
  for (const auto& p : processes_) job_end = std::max(job_end, ProcessEnd(*p));
  MergeIncoming();
  for (auto& d : devices_) d->timeline.Finish(job_end, &gap_events_);
  HandleGapEvents();
  collectives_.Finish();

  JobReport report;
  EvidenceResolver evidence(symbols, &report.symbols);
  report.min_gap = options_.min_gap;
  report.processes = static_cast<uint32_t>(processes_.size());
  report.span = job_end - job_start_;
  report.events = host_events_;
  report.gpu_activities = gpu_records_;
  report.files = files_;
  report.host_activity = BuildHostActivity(evidence);
  for (const auto& p : processes_) {
    if (p->info.rank >= 0) report.ranks.push_back(p->info.rank);
    report.hosts.push_back(p->info.host);
  }
  std::sort(report.ranks.begin(), report.ranks.end());
  report.ranks.erase(std::unique(report.ranks.begin(), report.ranks.end()), report.ranks.end());
  std::sort(report.hosts.begin(), report.hosts.end());
  report.hosts.erase(std::unique(report.hosts.begin(), report.hosts.end()), report.hosts.end());

  const Ns span = report.span;
  bool any_kernels = false;
  for (const auto& d : devices_) {
    const KernelStats& k = d->timeline.kernel_stats();
    any_kernels = any_kernels || k.kernels + k.nccl_kernels > 0;
  }
  const Cause idle_device_cause = any_kernels ? Cause::kUnusedGpus : Cause::kNoGpuWork;

  // Job-level accumulators over the devices that ran work.
  std::array<CauseAccumulator, kCauseCount> job;
  std::array<Ns, kCauseCount> job_ns{};
  std::vector<uint32_t> order(devices_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return devices_[a]->id < devices_[b]->id; });
  KernelStats job_kernels;
  for (uint32_t index : order) {
    DeviceState& d = *devices_[index];
    const DeviceTimeline& t = d.timeline;
    const KernelStats& k = t.kernel_stats();
    DeviceReport r;
    r.id = d.id;
    r.host = d.host;
    r.name = d.props.name;
    r.rank = d.rank;
    r.processes = static_cast<uint32_t>(d.processes.size());
    r.used = k.kernels + k.nccl_kernels > 0;
    r.compute_ns = t.compute_ns();
    r.comm_ns = t.comm_ns();
    r.transfer_ns = t.transfer_ns();
    r.any_kernel_ns = t.any_kernel_ns();
    r.idle_ns = span - r.compute_ns;
    r.compute_util = span > 0 ? static_cast<double>(r.compute_ns) / static_cast<double>(span) : 0;
    r.kernel_active_util =
        span > 0 ? static_cast<double>(r.any_kernel_ns) / static_cast<double>(span) : 0;
    r.kernels = k.kernels;
    r.nccl_kernels = k.nccl_kernels;
    r.median_kernel_ns = k.MedianKernelNs();
    if (k.with_grid > 0 && d.props.sm_count > 0) {
      r.below_sm_fraction =
          static_cast<double>(k.below_sm_count) / static_cast<double>(k.with_grid);
    }
    r.long_gaps = t.long_gaps();
    r.short_gaps = t.short_gaps();
    r.short_gap_ns = t.short_gap_ns();
    r.peak_memory = t.peak_memory();
    r.total_memory = d.props.total_memory;
    if (!r.used) {
      r.cause_ns[Index(idle_device_cause)] = span;
    } else {
      for (int c = 0; c < kCauseCount; ++c) r.cause_ns[c] = d.causes[c].ns;
      // Idle between kernels too short to slice: the paper's batch-size and memory rules
      // (avg util <= 50% with peak memory <= 50% -> batch size; > 80% -> insufficient memory).
      Cause short_cause = Cause::kLaunchBound;
      if (r.compute_util <= 0.5 && r.total_memory > 0 && r.peak_memory > 0) {
        double memory = static_cast<double>(r.peak_memory) / static_cast<double>(r.total_memory);
        if (memory > 0.8) {
          short_cause = Cause::kInsufficientMemory;
        } else if (memory <= 0.5) {
          short_cause = Cause::kSmallBatch;
        }
      }
      r.cause_ns[Index(short_cause)] += t.short_gap_ns();
      job[Index(short_cause)].ns += t.short_gap_ns();
      for (int c = 0; c < kCauseCount; ++c) {
        CauseAccumulator& from = d.causes[c];
        CauseAccumulator& to = job[c];
        to.ns += from.ns;
        to.pageable_ns += from.pageable_ns;
        to.pageable_bytes += from.pageable_bytes;
        to.remote_ns += from.remote_ns;
        to.worker_wait_ns += from.worker_wait_ns;
        to.gpu_side_ns += from.gpu_side_ns;
        to.snapshot_ns += from.snapshot_ns;
        to.preprocess_ns += from.preprocess_ns;
        to.bytes += from.bytes;
        for (size_t op = 0; op < to.nccl_op_ns.size(); ++op)
          to.nccl_op_ns[op] += from.nccl_op_ns[op];
        to.stacks.Merge(from.stacks);
        to.objects.Merge(from.objects);
        to.directories.Merge(from.directories);
      }
      job_kernels.kernels += k.kernels;
      job_kernels.kernel_ns += k.kernel_ns;
      if (d.props.sm_count > 0) {
        job_kernels.with_grid += k.with_grid;
        job_kernels.below_sm_count += k.below_sm_count;
      }
    }
    for (int c = 0; c < kCauseCount; ++c) job_ns[c] += r.cause_ns[c];
    if (!r.used) job[Index(idle_device_cause)].ns += span;
    if (!r.used && d.launches > 0) {
      report.warnings.push_back(
          {.kind = WarningKind::kLaunchesWithoutGpuRecords, .subject = d.id, .count = d.launches});
    }
    if (t.late_records() > 0) {
      report.warnings.push_back({.kind = WarningKind::kLateGpuRecords,
                                 .subject = d.id,
                                 .count = t.late_records(),
                                 .ns = t.late_ns()});
    }
    report.devices.push_back(std::move(r));
  }
  // Visible GPUs no process used: per host, the most devices a process could see (DeviceInfo),
  // or the distinct CUDA_VISIBLE_DEVICES entries, against the devices seen.
  if (any_kernels) {
    for (const std::string& host : report.hosts) {
      uint32_t visible = 0;
      absl::flat_hash_set<std::string> tokens;
      for (const auto& p : processes_) {
        if (p->info.host != host) continue;
        visible = std::max(visible, p->visible_devices);
        for (const auto& token : p->visible_tokens) tokens.insert(token);
      }
      visible = std::max<uint32_t>(visible, static_cast<uint32_t>(tokens.size()));
      uint32_t seen = 0;
      for (const auto& d : devices_) seen += d->host == host;
      for (uint32_t k = seen; k < visible; ++k) {
        DeviceReport r;
        r.id = absl::StrCat(host, "/visible-unused-", k - seen);
        r.host = host;
        r.idle_ns = span;
        r.cause_ns[Index(Cause::kUnusedGpus)] = span;
        job_ns[Index(Cause::kUnusedGpus)] += span;
        job[Index(Cause::kUnusedGpus)].ns += span;
        report.devices.push_back(std::move(r));
      }
    }
  }
  size_t device_count = report.devices.size();
  if (device_count == 0) {
    // No device at all: the whole run is a non-DL job, measured against its wall time.
    job_ns[Index(Cause::kNoGpuWork)] = span;
    job[Index(Cause::kNoGpuWork)].ns = span;
    report.gpu_time = span;
  } else {
    report.gpu_time = span * static_cast<Ns>(device_count);
    for (const DeviceReport& r : report.devices) {
      report.compute_util += r.compute_util;
      report.kernel_active_util += r.kernel_active_util;
    }
    report.compute_util /= static_cast<double>(device_count);
    report.kernel_active_util /= static_cast<double>(device_count);
  }

  // Evidence ids are per trace file, except an installer span's (kLaunchEvidence).
  auto string_of = [&](uint32_t process, uint64_t id) -> StringId {
    if (id == kLaunchEvidence) return evidence.Intern(InstallerCommand(process));
    return evidence.String(process, id);
  };
  auto stack_of = [&](uint32_t process, uint64_t id) -> StackId {
    if (id != kLaunchEvidence) return evidence.Stack(process, id);
    const Launch* launch = LaunchOf(process);
    if (launch == nullptr || launch->stack == 0) return 0;
    return evidence.Stack(launch->stack_process, launch->stack);
  };

  // Savings estimates (docs/attribution.md, "Estimated savings").
  const double pinned_rate = pinned_copies_.BytesPerNs();
  for (int c = 0; c < kCauseCount; ++c) {
    if (job_ns[c] <= 0) continue;
    const Cause cause = static_cast<Cause>(c);
    const CauseAccumulator& acc = job[c];
    CauseReport r;
    r.cause = cause;
    r.ns = job_ns[c];
    r.share =
        report.gpu_time > 0 ? static_cast<double>(r.ns) / static_cast<double>(report.gpu_time) : 0;
    auto half = [&] {
      r.saving_ns = r.ns / 2;
      r.basis.method = SavingMethod::kHalf;
    };
    auto all = [&] {
      r.saving_ns = r.ns;
      r.basis.method = SavingMethod::kAll;
    };
    auto note = [&](FindingKind kind, Ns ns) { r.findings.push_back({.kind = kind, .ns = ns}); };
    switch (cause) {
      case Cause::kHostGpuTransfer: {
        // What the pageable bytes would cost from pinned memory. Not the GPU-side rate of the
        // pageable copies: CUPTI's record covers the DMA from the driver's staging buffer (22 us
        // for 1 MiB on an H200, whose cudaMemcpy blocked 194 us), not the staging.
        double rate = pinned_rate > 0 ? pinned_rate : kDefaultPinnedBytesPerNs;
        Ns pinned_ns = static_cast<Ns>(acc.pageable_bytes / rate);
        r.saving_ns = std::max<Ns>(0, acc.pageable_ns - pinned_ns);
        r.basis = {
            .method = SavingMethod::kPageableAtPinnedRate,
            .rate_bytes_per_ns = rate,
            .rate_source = pinned_rate > 0 ? RateSource::kPinnedCopies : RateSource::kAssumed};
        r.findings.push_back({.kind = FindingKind::kPageableCopies,
                              .ns = acc.pageable_ns,
                              .other_ns = r.ns - acc.pageable_ns});
        if (acc.gpu_side_ns > 0) note(FindingKind::kGpuOnlyCopies, acc.gpu_side_ns);
        break;
      }
      case Cause::kCheckpointing: {
        // The snapshot an async checkpoint takes is a device-to-host copy into pinned memory.
        double rate = d2h_pinned_copies_.BytesPerNs();
        RateSource source = RateSource::kPinnedDeviceToHostCopies;
        if (rate <= 0) {
          rate = d2h_copies_.BytesPerNs();
          source = RateSource::kDeviceToHostCopies;
        }
        if (rate <= 0) {
          rate = kDefaultPinnedBytesPerNs;
          source = RateSource::kAssumed;
        }
        // An asynchronous checkpoint keeps the snapshot: the one measured before the writes, or
        // the one their bytes need, whichever is longer.
        Ns snapshot = std::max(acc.snapshot_ns, static_cast<Ns>(acc.bytes / rate));
        r.saving_ns = std::max<Ns>(0, r.ns - snapshot);
        // The bytes are a sum of shares of events (bytes in proportion to the time credited):
        // the report gives the nearest whole byte.
        const uint64_t bytes = static_cast<uint64_t>(std::nearbyint(std::max(acc.bytes, 0.0)));
        r.basis = {.method = SavingMethod::kCheckpointMinusSnapshot,
                   .rate_bytes_per_ns = rate,
                   .rate_source = source,
                   .bytes = bytes,
                   .snapshot_ns = acc.snapshot_ns};
        if (acc.snapshot_ns > 0) note(FindingKind::kSnapshotCopies, acc.snapshot_ns);
        r.findings.push_back({.kind = FindingKind::kCheckpointBytes, .bytes = bytes});
        break;
      }
      case Cause::kCommunication: {
        half();
        for (size_t op = 1; op < acc.nccl_op_ns.size(); ++op) {
          if (acc.nccl_op_ns[op] <= 0) continue;
          Finding f{.kind = FindingKind::kNcclOpBlocked, .ns = acc.nccl_op_ns[op]};
          f.nccl_op = static_cast<NcclOp>(op);
          r.findings.push_back(f);
        }
        if (acc.gpu_side_ns > 0) note(FindingKind::kExposedNcclKernels, acc.gpu_side_ns);
        break;
      }
      case Cause::kDataLoading:
        all();
        if (acc.remote_ns > 0) note(FindingKind::kRemoteReads, acc.remote_ns);
        if (acc.worker_wait_ns > 0) note(FindingKind::kWorkerQueueWaits, acc.worker_wait_ns);
        if (acc.preprocess_ns > 0) note(FindingKind::kLauncherPreprocessing, acc.preprocess_ns);
        break;
      case Cause::kIntermediateUpload:
      case Cause::kExternalDownload:
      case Cause::kLibraryInstallation:
      case Cause::kInteractive:
      case Cause::kSynchronization:
        all();
        break;
      case Cause::kSmallBatch:
      case Cause::kInsufficientMemory:
      case Cause::kLaunchBound:
        half();
        if (job_kernels.kernels > 0) {
          r.findings.push_back({.kind = FindingKind::kComputeKernels,
                                .ns = job_kernels.kernel_ns,
                                .count = job_kernels.kernels});
        }
        if (job_kernels.with_grid > 0) {
          // A kernel with fewer blocks than SMs leaves SMs idle even while it runs.
          r.findings.push_back({.kind = FindingKind::kKernelsBelowSmCount,
                                .count = job_kernels.below_sm_count,
                                .of_count = job_kernels.with_grid});
        }
        break;
      case Cause::kTail:
      case Cause::kUnusedGpus:
      case Cause::kNoGpuWork:
        all();
        break;
      case Cause::kStartup:
        startup_.Findings(evidence, &r.findings);
        break;
      case Cause::kUnknown:
        break;
    }
    r.stacks = evidence.Heaviest(acc.stacks, options_.top_evidence, [&](const EvidenceKey& key) {
      EvidenceItem item{.kind = EvidenceKind::kStack, .id = stack_of(key.process, key.id)};
      if (item.id == 0) {
        item = {.kind = EvidenceKind::kUnresolvedStack, .process = key.process, .trace_id = key.id};
      }
      return item;
    });
    r.objects = evidence.Heaviest(acc.objects, options_.top_evidence, [&](const EvidenceKey& key) {
      EvidenceItem item{.kind = EvidenceKind::kObject, .id = string_of(key.process, key.id)};
      if (item.id == 0) {
        item = {
            .kind = EvidenceKind::kUnresolvedObject, .process = key.process, .trace_id = key.id};
      }
      return item;
    });
    // Directories only say more than the files when there are many files.
    if (acc.objects.size() > options_.top_evidence) {
      r.directories =
          evidence.Heaviest(acc.directories, options_.top_evidence, [&](const EvidenceKey& key) {
            auto it = directory_names_.find(key.id);
            StringId name = it == directory_names_.end() ? 0 : evidence.Intern(it->second);
            return EvidenceItem{.kind = EvidenceKind::kDirectory, .id = name};
          });
    }
    if (cause == Cause::kNoGpuWork && !any_kernels) {
      PointAtHostActivity(report.host_activity, options_.top_evidence, r);
    }
    if (acc.stacks.evicted() || acc.objects.evicted()) {
      r.findings.push_back({.kind = FindingKind::kEvidenceApproximate});
    }
    report.causes.push_back(std::move(r));
  }
  // Communication: the rank(s) the others waited for.
  for (const Finding& f : collectives_.Stragglers(3)) {
    for (CauseReport& c : report.causes) {
      if (c.cause == Cause::kCommunication) c.findings.push_back(f);
    }
  }
  if (collectives_.incomplete() > 0) {
    report.warnings.push_back(
        {.kind = WarningKind::kIncompleteCollectives, .count = collectives_.incomplete()});
  }
  std::sort(report.causes.begin(), report.causes.end(), [](const auto& a, const auto& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.cause < b.cause;
  });
  for (const CauseReport& c : report.causes) report.idle_ns += c.ns;

  std::sort(top_gaps_.begin(), top_gaps_.end(), [&](const GapRecord& a, const GapRecord& b) {
    if (a.gap.length() != b.gap.length()) return a.gap.length() > b.gap.length();
    if (a.gap.start != b.gap.start) return a.gap.start < b.gap.start;
    return devices_[a.device]->id < devices_[b.device]->id;
  });
  for (const GapRecord& g : top_gaps_) {
    GapReport r;
    r.device = devices_[g.device]->id;
    r.start = g.gap.start - job_start_;
    r.length = g.gap.length();
    r.kind = g.kind;
    for (int c = 0; c < kCauseCount; ++c) {
      if (g.cause_ns[c] > 0) r.causes.push_back({static_cast<Cause>(c), g.cause_ns[c]});
    }
    std::sort(r.causes.begin(), r.causes.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (g.has_main) {
      const Candidate& m = g.main;
      r.has_evidence = true;
      r.evidence = {.cause = m.cause,
                    .gpu_side = m.gpu_side,
                    .object = m.object != 0 ? string_of(m.process, m.object) : 0,
                    .bytes = m.bytes,
                    .stack = m.stack != 0 ? stack_of(m.process, m.stack) : 0,
                    .pid = processes_[m.process]->info.pid,
                    .tid = m.tid};
    }
    report.top_gaps.push_back(std::move(r));
  }
  if (forgotten_candidates_ > 0) {
    report.warnings.push_back(
        {.kind = WarningKind::kForgottenCandidates, .count = forgotten_candidates_});
  }
  if (late_candidates_ > 0) {
    report.warnings.push_back({.kind = WarningKind::kLateCandidates, .count = late_candidates_});
  }
  for (ReportWarning& w : warnings_) report.warnings.push_back(std::move(w));
  return report;
}

}  // namespace idlescope
