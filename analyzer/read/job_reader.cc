#include "analyzer/read/job_reader.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <limits>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/read/clock_alignment.h"
#include "analyzer/read/file_end.h"
#include "analyzer/read/inputs.h"
#include "analyzer/read/socket_addresses.h"
#include "analyzer/trace/interned_data.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope {
namespace {

constexpr Ns kNoTime = std::numeric_limits<Ns>::min();
// Read-ahead of all files together: each file's share, between kMinChunkBytes and
// TraceFileReader's default (1 MiB, what a job of a few files gets). A packet larger than its
// share grows that file's buffer while it is read.
constexpr size_t kReadAheadBytes = 64 << 20;
constexpr size_t kMinChunkBytes = 32 << 10;
// File descriptors left to the rest of the process when the budget comes from RLIMIT_NOFILE.
constexpr size_t kReservedFds = 64;
constexpr size_t kMinOpenFiles = 8;

size_t OpenFileBudget(const ReadOptions& options) {
  if (options.max_open_files > 0) return options.max_open_files;
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
  size_t soft = static_cast<size_t>(limit.rlim_cur);
  return std::max(kMinOpenFiles, soft > kReservedFds ? soft - kReservedFds : 0);
}

std::string_view View(absl::string_view s) { return std::string_view(s.data(), s.size()); }

bool NeedsStrings(EventType type) {
  switch (type) {
    case FILE_OPEN:
    case FILE_WRITE:
    case FILE_READ:
    case FILE_SYNC:
    case FILE_RENAME:
    case FILE_CLOSE:
    case NET_CONNECT:
    case NET_RECV:
    case NET_SEND:
    case WAIT:
    case PROC_EXEC:
    case PROC_SPAWN:
    case FILE_MMAP:
    case FILE_MUNMAP:
    case FILE_COPY:
    case NET_SOCKET:
    case SIGNAL_HANDLER:
    case THREAD_SAMPLE:
    case NVTX_RANGE:
      return true;
    default:
      return false;
  }
}

// The device an event names, -1 for none. A CUDA call's is Event.device, the device current on
// its thread. The recorder writes no device for NCCL calls, so theirs (0 on the wire, which is
// also a real ordinal) is their stream's: a rank driving device 1 would otherwise seem to launch
// on device 0 with every collective, and explain that device's gaps. A WAIT's is the device its
// thread last gave work to (Event.launch_device; none: the thread feeds no GPU).
// A record's times from its file's running sum `t` of start deltas, the file's clock `offset`
// and its duration, kept far from overflow in what is computed from them (end - start, sums of
// lengths) whatever a corrupt file says: the start within +-2^62 ns (146 years), the duration
// under 2^50 ns (13 days). Unsigned sums: a corrupt delta wraps, never overflows.
Interval RecordTimes(uint64_t t, Ns offset, uint64_t dur) {
  constexpr Ns kMaxAbs = Ns{1} << 62;
  constexpr uint64_t kMaxDur = uint64_t{1} << 50;
  const Ns start =
      std::clamp(static_cast<Ns>(t + static_cast<uint64_t>(offset)), -kMaxAbs, kMaxAbs);
  return {start, start + static_cast<Ns>(std::min(dur, kMaxDur))};
}

int32_t DeviceOf(const Event& ev, const InternedData& interned) {
  if (ev.type() >= CUDA_MEMCPY && ev.type() <= CUDA_LAUNCH_SUMMARY) {
    return static_cast<int32_t>(ev.device());
  }
  if (ev.type() == WAIT) {
    return ev.has_launch_device() ? static_cast<int32_t>(ev.launch_device()) : -1;
  }
  if (ev.type() >= NCCL_COLLECTIVE && ev.type() <= NCCL_COMM_DESTROY && ev.stream() != 0) {
    const InternedStream* stream = interned.FindStream(ev.stream());
    if (stream != nullptr && stream->device() >= 0) return stream->device();
  }
  return -1;
}

// The launches a run holder's LaunchRuns hold (FormatExpander::KeepRuns), each as the record of
// the Event it expands to: a CUDA_LAUNCH with its times, its site's api, stack and device, `async`
// and its correlation id, and nothing else. `t`: the batch's running start time. Returns how many.
uint64_t AddLaunches(const Event& holder, uint32_t process, uint32_t tid, Ns offset, uint64_t* t,
                     Ns* last_time, RecordSink& sink) {
  HostEvent e;
  e.process = process;
  e.tid = tid;
  e.type = CUDA_LAUNCH;
  e.async = true;
  uint64_t correlation = holder.correlation();
  uint64_t launches = 0;
  for (const LaunchRun& r : holder.launches()) {
    const bool correlated = r.correlation_delta_size() != 0;
    for (int k = 0; k < r.ts_size(); ++k) {
      const LaunchSite& site = r.sites(r.site_size() != 0 ? static_cast<int>(r.site(k)) : 0);
      *t += static_cast<uint64_t>(r.ts(k));
      const Interval when = RecordTimes(*t, offset, r.dur(k));
      e.start = when.start;
      e.end = when.end;
      e.device = static_cast<int32_t>(site.device());
      e.stack = site.stack();
      e.api_id = site.api();
      if (correlated) correlation += static_cast<uint64_t>(r.correlation_delta(k));
      e.correlation = correlated ? correlation : 0;
      sink.AddHostEvent(e);
      *last_time = std::max(*last_time, e.end);
    }
    launches += static_cast<uint64_t>(r.ts_size());
  }
  return launches;
}

// The kernels a run holder's KernelRuns hold, each as the record of the GpuActivity it expands
// to (FormatExpander::KeepRuns), as AddLaunches.
uint64_t AddKernels(const GpuActivity& holder, uint32_t process, Ns offset, uint64_t* t,
                    Ns* last_time, RecordSink& sink) {
  GpuRecord r;
  r.process = process;
  r.kind = GPU_KERNEL;
  uint64_t correlation = holder.correlation();
  uint64_t kernels = 0;
  for (const KernelRun& run : holder.kernels()) {
    const bool correlated = run.correlation_delta_size() != 0;
    for (int k = 0; k < run.start_size(); ++k) {
      const KernelSite& site = run.sites(run.site_size() != 0 ? static_cast<int>(run.site(k)) : 0);
      *t += static_cast<uint64_t>(run.start(k));
      const Interval when = RecordTimes(*t, offset, run.dur(k));
      r.start = when.start;
      r.end = when.end;
      r.device = site.device();
      r.stream = site.stream();
      r.nccl = site.nccl();
      r.grid = site.grid();
      r.block = site.block();
      r.name_id = site.name();
      if (correlated) correlation += static_cast<uint64_t>(run.correlation_delta(k));
      r.correlation = correlated ? correlation : 0;
      sink.AddGpuRecord(r);
      *last_time = std::max(*last_time, r.end);
    }
    kernels += static_cast<uint64_t>(run.start_size());
  }
  return kernels;
}

// The first start delta of a batch's events or activities, a run's first if it begins with one
// (`runs`: the reader keeps them, TraceFileReader::keeps_runs).
int64_t FirstStart(const Event& ev, bool runs) {
  return runs && ev.launches_size() > 0 ? ev.launches(0).ts(0) : ev.ts();
}
int64_t FirstStart(const GpuActivity& a, bool runs) {
  return runs && a.kernels_size() > 0 ? a.kernels(0).start(0) : a.start();
}

}  // namespace

struct JobReader::File {
  std::unique_ptr<TraceFileReader> reader;
  InternedData* interned = nullptr;  // in symbols_
  uint32_t process = 0;
  Ns offset = 0;  // added to this file's trace-clock times to get job-clock times
  Packet head;    // the next packet to process
  Ns head_time = kNoTime;
  bool done = false;
  Ns last_time = kNoTime;
  uint64_t events = 0;
  uint64_t gpu_records = 0;
  uint64_t dropped_events = 0;
  uint64_t dropped_gpu = 0;
  bool footer = false;
  bool started = false;  // the merge reached its process's start: its packets are being read
  Ns start = 0;          // its process's start, job clock
  uint64_t last_use = 0;
  absl::flat_hash_set<std::string> notices;
};

ProcessInfo ProcessInfoOf(const Header& h, Ns offset, const std::string& path) {
  ProcessInfo info;
  info.pid = h.pid();
  info.ppid = h.ppid();
  info.host = h.host();
  info.boot_id = h.boot_id();
  info.exe = h.exe();
  info.cmdline = absl::StrJoin(h.cmdline(), " ");
  info.rank = h.has_rank() ? h.rank() : (h.has_slurm_procid() ? h.slurm_procid() : -1);
  Ns start = h.process_start_ns() != 0 ? static_cast<Ns>(h.process_start_ns())
                                       : static_cast<Ns>(h.clock().monotonic_ns());
  info.start = start + offset;
  info.file = path;
  info.cuda_visible_devices = h.cuda_visible_devices();
  info.main_tid = h.main_tid();
  info.forked = h.origin() == ORIGIN_FORK;
  if (h.has_clock()) {
    info.realtime_at_zero = static_cast<Ns>(h.clock().realtime_ns()) -
                            static_cast<Ns>(h.clock().monotonic_ns()) - offset;
  }
  return info;
}

JobReader::JobReader() = default;
JobReader::~JobReader() = default;

absl::StatusOr<std::unique_ptr<JobReader>> JobReader::Open(const std::vector<std::string>& inputs) {
  absl::StatusOr<std::vector<TraceInput>> paths = ExpandInputs(inputs);
  if (!paths.ok()) return paths.status();
  std::unique_ptr<JobReader> job(new JobReader());
  const size_t chunk = std::clamp(kReadAheadBytes / std::max<size_t>(paths->size(), 1),
                                  kMinChunkBytes, TraceFileReader::kDefaultChunkBytes);
  for (const TraceInput& input : *paths) {
    absl::StatusOr<std::unique_ptr<TraceFileReader>> reader =
        TraceFileReader::Open(input.path, chunk);
    if (!reader.ok()) {
      if (!input.listed) return reader.status();
      job->skipped_.emplace_back(input.path, std::string(reader.status().message()));
      continue;
    }
    // Opened again when the merge reaches it: a job may have more files than fds.
    (*reader)->Suspend();
    (*reader)->ShareBatchPool(&job->batch_pool_);
    (*reader)->KeepRuns();
    auto file = std::make_unique<File>();
    file->reader = std::move(*reader);
    job->files_.push_back(std::move(file));
    struct stat st;
    if (stat(input.path.c_str(), &st) == 0) job->total_bytes_ += static_cast<uint64_t>(st.st_size);
  }
  if (job->files_.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("no readable trace file: %d skipped (%s)",
                                                      job->skipped_.size(),
                                                      job->skipped_.front().second));
  }
  job->batch_pool_.max_kept = std::max<size_t>(job->files_.size(), 16);
  job->stats_.skipped_files = job->skipped_.size();
  return job;
}

uint64_t JobReader::BytesRead() const {
  uint64_t bytes = 0;
  for (const auto& file : files_) bytes += file->reader->stats().bytes_read;
  return bytes;
}

void JobReader::Run(RecordSink& sink, const ReadOptions& options) {
  if (planned_) return Merge(sink, options);
  // Clock alignment: one offset per boot id, relative to the first file's realtime mapping.
  absl::flat_hash_map<std::string, Ns> offset_by_boot;
  const Header& first = files_[0]->reader->header();
  const Ns reference =
      static_cast<Ns>(first.clock().realtime_ns()) - static_cast<Ns>(first.clock().monotonic_ns());
  // Hosts (boot ids) in the order their first file comes; host 0 is the reference.
  absl::flat_hash_map<std::string, uint32_t> host_of_boot;
  std::vector<std::string> host_names;
  std::vector<uint32_t> file_host;
  for (auto& file : files_) {
    const Header& h = file->reader->header();
    auto [it, inserted] = offset_by_boot.try_emplace(h.boot_id(), 0);
    if (inserted && h.boot_id() != first.boot_id() && h.has_clock()) {
      it->second = static_cast<Ns>(h.clock().realtime_ns()) -
                   static_cast<Ns>(h.clock().monotonic_ns()) - reference;
    }
    file->offset = it->second;
    auto [host, new_host] =
        host_of_boot.try_emplace(h.boot_id(), static_cast<uint32_t>(host_names.size()));
    if (new_host) host_names.push_back(h.host().empty() ? h.boot_id() : h.host());
    file_host.push_back(host->second);
  }
  if (host_names.size() > 1 && options.align_clocks) {
    std::vector<std::vector<CollectiveEnd>> ends(files_.size());
    for (size_t i = 0; i < files_.size(); ++i) {
      ends[i] = CollectiveEnds(*files_[i]);
      for (CollectiveEnd& e : ends[i]) e.end += files_[i]->offset;
    }
    HostAlignment alignment = AlignHosts(host_names, file_host, ends);
    for (size_t i = 0; i < files_.size(); ++i) {
      files_[i]->offset -= alignment.correction[file_host[i]];
    }
    for (const HostClock& clock : alignment.clocks) sink.AddHostClock(clock);
  }
  for (auto& file : files_) {
    ProcessInfo info = ProcessInfoOf(file->reader->header(), file->offset, file->reader->path());
    info.ending = OnJobClock(ReadFileEnd(file->reader->path()), file->offset);
    file->start = info.start;
    file->process = static_cast<uint32_t>(stats_.files);
    file->interned = &symbols_.ForProcess(file->process);
    sink.AddProcess(file->process, info);
    ++stats_.files;
  }
  IndexForkedFiles();
  // As a shard's plan gives them (shard/plan.h): the same addresses, whatever part is read.
  for (auto& file : files_) {
    for (std::string& key : ReadSocketAddressKeys(file->reader->path())) {
      sink.AddSocketAddress(file->process, std::move(key));
    }
  }
  Merge(sink, options);
}

absl::StatusOr<std::unique_ptr<JobReader>> JobReader::OpenPlanned(
    const std::vector<PlannedInput>& inputs) {
  std::unique_ptr<JobReader> job(new JobReader());
  job->planned_ = true;
  const size_t chunk = std::clamp(kReadAheadBytes / std::max<size_t>(inputs.size(), 1),
                                  kMinChunkBytes, TraceFileReader::kDefaultChunkBytes);
  for (const PlannedInput& input : inputs) {
    absl::StatusOr<std::unique_ptr<TraceFileReader>> reader =
        TraceFileReader::Open(input.path, chunk);
    if (!reader.ok()) return reader.status();
    (*reader)->Suspend();
    (*reader)->ShareBatchPool(&job->batch_pool_);
    (*reader)->KeepRuns();
    auto file = std::make_unique<File>();
    file->reader = std::move(*reader);
    file->process = input.process;
    file->offset = input.offset;
    file->start = input.start;
    job->files_.push_back(std::move(file));
    struct stat st;
    if (stat(input.path.c_str(), &st) == 0) job->total_bytes_ += static_cast<uint64_t>(st.st_size);
  }
  if (job->files_.empty()) return absl::InvalidArgumentError("no trace file to read");
  job->batch_pool_.max_kept = std::max<size_t>(job->files_.size(), 16);
  for (auto& file : job->files_) file->interned = &job->symbols_.ForProcess(file->process);
  job->stats_.files = job->files_.size();
  job->IndexForkedFiles();
  return job;
}

void JobReader::IndexForkedFiles() {
  forked_.clear();
  for (auto& file : files_) {
    const Header& h = file->reader->header();
    if (h.origin() != ORIGIN_FORK || h.pid() == 0) continue;
    forked_[{h.boot_id(), h.ppid(), h.pid()}].push_back(file.get());
  }
}

JobReader::File* JobReader::WorkerFile(const File& sampler, uint32_t pid, Ns t) {
  const Header& h = sampler.reader->header();
  auto it = forked_.find(std::make_tuple(h.boot_id(), h.pid(), pid));
  if (it == forked_.end()) return nullptr;
  File* found = nullptr;
  for (File* f : it->second) {
    if (f->start <= t && (found == nullptr || f->start > found->start)) found = f;
  }
  return found;
}

void JobReader::Merge(RecordSink& sink, const ReadOptions& options) {
  // k-way merge on each file's next packet time. Packets without a time of their own (interned
  // data, device info) take their file's latest time, so they are handled in file order.
  auto packet_time = [](const File& f, const Packet& p) -> Ns {
    switch (p.data_case()) {
      case Packet::kEvents:
        if (p.events().events_size() > 0)
          return FirstStart(p.events().events(0), f.reader->keeps_runs()) + f.offset;
        break;
      case Packet::kGpu:
        if (p.gpu().activities_size() > 0)
          return FirstStart(p.gpu().activities(0), f.reader->keeps_runs()) + f.offset;
        break;
      default:
        break;
    }
    return f.last_time;
  };
  auto later = [](const std::pair<Ns, size_t>& a, const std::pair<Ns, size_t>& b) { return a > b; };
  std::priority_queue<std::pair<Ns, size_t>, std::vector<std::pair<Ns, size_t>>, decltype(later)>
      heads(later);
  const size_t budget = OpenFileBudget(options);
  size_t open_files = 0;
  uint64_t uses = 0;
  // Makes room for one more open file: suspends the open file used longest ago.
  auto make_room = [&]() {
    File* oldest = nullptr;
    for (auto& file : files_) {
      File& f = *file;
      if (f.started && !f.done && !f.reader->suspended() &&
          (oldest == nullptr || f.last_use < oldest->last_use)) {
        oldest = &f;
      }
    }
    if (oldest == nullptr) return;
    oldest->reader->Suspend();
    --open_files;
    ++stats_.suspensions;
  };
  auto advance_file = [&](size_t index) {
    File& f = *files_[index];
    const bool reopens = f.reader->suspended();
    if (reopens) {
      if (open_files >= budget) make_room();
      ++open_files;
      stats_.most_open_files = std::max<uint64_t>(stats_.most_open_files, open_files);
    }
    f.last_use = ++uses;
    if (!f.reader->Next(&f.head)) {
      // The reader closed the file; the last packet's messages go too.
      f.done = true;
      sink.FileDone(f.process);
      f.head = Packet();
      --open_files;
      return;
    }
    ++stats_.packets;
    f.head_time = packet_time(f, f.head);
    heads.push({f.head_time, index});
  };
  // A file joins the merge at its process's start (no packet of it is earlier).
  for (size_t i = 0; i < files_.size(); ++i) heads.push({files_[i]->start, i});
  while (!heads.empty()) {
    auto [time, index] = heads.top();
    heads.pop();
    File& f = *files_[index];
    if (f.started) {
      Process(f, f.head, sink);
    } else {
      f.started = true;
    }
    advance_file(index);
    if (!heads.empty() && heads.top().first != kNoTime) {
      sink.AdvanceTo(heads.top().first - options.reorder_window);
    }
  }

  for (const auto& [path, why] : skipped_) {
    ReportWarning w;
    w.kind = WarningKind::kSkippedFile;
    w.subject = path;
    w.text = why;
    sink.AddWarning(w);
  }
  for (auto& file : files_) {
    const TraceReadStats& s = file->reader->stats();
    const std::string& path = file->reader->path();
    stats_.bytes += s.bytes_read;
    auto warn = [&](WarningKind kind, uint64_t count = 0, uint64_t other_count = 0) {
      ReportWarning w;
      w.kind = kind;
      w.subject = path;
      w.count = count;
      w.other_count = other_count;
      return w;
    };
    if (s.truncated()) {
      ReportWarning w = warn(WarningKind::kTraceCut, s.dropped_bytes, s.good_end_offset);
      w.tail = static_cast<int>(s.tail);
      w.tail_detail = s.tail_detail;
      sink.AddWarning(w);
    }
    if (!s.footer_seen) sink.AddWarning(warn(WarningKind::kNoFooter));
    if (s.undefined_comm_ids > 0) {
      sink.AddWarning(warn(WarningKind::kUndefinedCommIds, s.undefined_comm_ids));
    }
    if (s.unknown_fields > 0) sink.AddWarning(warn(WarningKind::kUnknownFields, s.unknown_fields));
    if (file->dropped_events > 0 || file->dropped_gpu > 0) {
      sink.AddWarning(warn(WarningKind::kDroppedRecords, file->dropped_events, file->dropped_gpu));
    }
    const Header& h = file->reader->header();
    FileReport report;
    report.path = path;
    report.pid = h.pid();
    report.rank = h.has_rank() ? h.rank() : -1;
    report.host = h.host();
    report.events = file->events;
    report.gpu_activities = file->gpu_records;
    report.footer = s.footer_seen;
    sink.AddFile(report);
  }
}

std::vector<CollectiveEnd> JobReader::CollectiveEnds(const File& f) {
  return ReadCollectiveEnds(f.reader->path());
}

std::vector<CollectiveEnd> ReadCollectiveEnds(const std::string& path) {
  CollectiveEndCollector collector;
  absl::StatusOr<std::unique_ptr<TraceFileReader>> reader =
      TraceFileReader::Open(path, kMinChunkBytes);
  if (!reader.ok()) return {};
  Packet packet;
  while (!collector.Full() && (*reader)->stats().bytes_read < kAlignmentReadBytes &&
         (*reader)->Next(&packet)) {
    if (packet.has_events()) {
      uint64_t t = 0;
      for (const Event& ev : packet.events().events()) {
        t += static_cast<uint64_t>(ev.ts());
        collector.AddEvent(ev, static_cast<Ns>(t));
      }
    } else if (packet.has_gpu()) {
      uint64_t t = 0;
      for (const GpuActivity& a : packet.gpu().activities()) {
        t += static_cast<uint64_t>(a.start());
        collector.AddActivity(a, static_cast<Ns>(t));
      }
    }
  }
  return collector.Finish();
}

void JobReader::Process(File& f, const Packet& packet, RecordSink& sink) {
  switch (packet.data_case()) {
    case Packet::kInterned:
      f.interned->Add(packet.interned());
      for (const ThreadName& t : packet.interned().threads()) {
        sink.AddThreadName(f.process, t.tid(), t.name());
      }
      return;
    case Packet::kEvents: {
      const EventBatch& batch = packet.events();
      f.dropped_events += batch.dropped();
      HostEvent e;
      e.process = f.process;
      e.tid = batch.tid();
      // Unsigned sums: a corrupt delta must not cause signed overflow.
      uint64_t t = 0;
      uint64_t events = 0;
      const bool runs = f.reader->keeps_runs();
      for (const Event& ev : batch.events()) {
        if (runs && ev.launches_size() > 0) {
          events += AddLaunches(ev, f.process, batch.tid(), f.offset, &t, &f.last_time, sink);
          continue;
        }
        ++events;
        t += static_cast<uint64_t>(ev.ts());
        e.type = ev.type();
        const Interval when = RecordTimes(t, f.offset, ev.dur());
        e.start = when.start;
        e.end = when.end;
        e.bytes = ev.bytes();
        e.count = ev.count();
        e.device = DeviceOf(ev, *f.interned);
        e.copy_kind = ev.copy_kind();
        e.host_mem = ev.host_mem();
        e.async = ev.async();
        e.fs_type = ev.fs_type();
        e.fd = ev.type() >= FILE_OPEN && ev.type() <= NET_SOCKET ? ev.fd() : -1;
        e.net_scope = ev.net_scope();
        e.stack = ev.stack();
        e.path_id = ev.path();
        e.api_id = ev.api();
        if (NeedsStrings(ev.type())) {
          e.path = View(f.interned->String(ev.path()));
          e.argv = View(f.interned->String(ev.argv()));
          e.source = View(f.interned->String(ev.source()));
          e.local = View(f.interned->String(ev.local()));
        } else {
          e.path = {};
          e.argv = {};
          e.source = {};
          e.local = {};
        }
        e.source_id = ev.source();
        e.peer_pid = ev.peer_pid();
        e.addr = ev.addr();
        e.writable = ev.writable();
        e.result = ev.result();
        e.nccl_op = ev.nccl_op();
        e.comm = ev.comm();
        e.seq = ev.seq();
        e.rank = ev.type() == NCCL_COLLECTIVE ? ev.rank() : -1;
        e.nranks = ev.nranks();
        e.group_depth = ev.group_depth();
        e.ptr = ev.ptr();
        e.child_pid = ev.child_pid();
        e.correlation = ev.correlation();
        if (ev.type() == THREAD_SAMPLE) {
          // The sampler's batch: each event names the thread it looked at.
          e.tid = ev.tid();
          e.fd = ev.has_syscall() ? ev.fd() : -1;
          e.cpu_ns = ev.cpu_ns();
          e.wait_ns = ev.wait_ns();
          e.thread_state = static_cast<char>(ev.thread_state());
          e.syscall = ev.has_syscall() ? ev.syscall() : HostEvent::kNotBlocked;
          if (ev.sampled_pid() == 0) {
            sink.AddHostEvent(e);
          } else if (File* worker = WorkerFile(f, ev.sampled_pid(), e.start); worker != nullptr) {
            // A worker's thread, looked at from this process's writer: the worker process's run
            // (its own file holds its traced calls). Its path and its stack (the Python frames
            // of a worker's main thread) join the worker's tables.
            e.process = worker->process;
            e.path_id =
                e.path.empty()
                    ? 0
                    : worker->interned->Borrow(absl::string_view(e.path.data(), e.path.size()));
            e.path = View(worker->interned->String(e.path_id));
            e.stack = worker->interned->BorrowStack(*f.interned, e.stack);
            sink.AddHostEvent(e);
            e.process = f.process;
          }
          e.tid = batch.tid();
          e.fd = -1;
          e.cpu_ns = e.wait_ns = 0;
          e.thread_state = 0;
          e.syscall = 0;
        } else {
          sink.AddHostEvent(e);
        }
        f.last_time = std::max(f.last_time, e.end);
      }
      f.events += events;
      stats_.host_events += events;
      return;
    }
    case Packet::kGpu: {
      const GpuBatch& batch = packet.gpu();
      f.dropped_gpu += batch.dropped();
      GpuRecord r;
      r.process = f.process;
      uint64_t t = 0;
      uint64_t records = 0;
      const bool runs = f.reader->keeps_runs();
      for (const GpuActivity& a : batch.activities()) {
        if (runs && a.kernels_size() > 0) {
          records += AddKernels(a, f.process, f.offset, &t, &f.last_time, sink);
          continue;
        }
        ++records;
        t += static_cast<uint64_t>(a.start());
        r.kind = a.kind();
        const Interval when = RecordTimes(t, f.offset, a.dur());
        r.start = when.start;
        r.end = when.end;
        r.device = a.device();
        r.stream = a.stream();
        r.nccl = a.nccl();
        r.grid = a.grid();
        r.block = a.block();
        r.bytes = a.bytes();
        r.name_id = a.name();
        r.copy_kind = a.copy_kind();
        r.src_kind = a.src_kind();
        r.dst_kind = a.dst_kind();
        r.correlation = a.correlation();
        sink.AddGpuRecord(r);
        f.last_time = std::max(f.last_time, r.end);
      }
      f.gpu_records += records;
      stats_.gpu_records += records;
      return;
    }
    case Packet::kDevice: {
      const DeviceInfo& d = packet.device();
      DeviceProps props;
      props.ordinal = d.device();
      props.name = d.name();
      props.uuid = d.uuid();
      props.sm_count = d.sm_count();
      props.total_memory = d.total_memory();
      props.visible_devices = d.visible_devices();
      sink.AddDeviceInfo(f.process, props);
      return;
    }
    case Packet::kModules:
      // Build ids: the report's native frames get their source lines from the modules' debug
      // info when the file on disk is the one that ran (read/source_lines.h).
      f.interned->AddModules(packet.modules());
      return;
    case Packet::kNotice: {
      const Notice& n = packet.notice();
      if (n.severity() >= WARNING && f.notices.insert(n.code()).second) {
        ReportWarning w;
        w.kind = WarningKind::kRecorderNotice;
        w.subject = f.reader->path();
        w.code = n.code();
        w.text = n.text();
        sink.AddWarning(w);
      }
      return;
    }
    case Packet::kFooter: {
      const Footer& footer = packet.footer();
      f.footer = true;
      if (footer.end_ns() != 0) {
        Ns end = static_cast<Ns>(footer.end_ns()) + f.offset;
        sink.EndProcess(f.process, end);
        f.last_time = std::max(f.last_time, end);
      }
      f.dropped_events = std::max(f.dropped_events, footer.events_dropped());
      f.dropped_gpu = std::max(f.dropped_gpu, footer.gpu_dropped());
      return;
    }
    default:
      return;
  }
}

}  // namespace idlescope
