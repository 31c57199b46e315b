#include "interpose/trace_encoder.h"

#include <cstring>

namespace idlescope::trace {

namespace {

// Bounded C string (RawDeviceInfo's fixed arrays need not be NUL-terminated).
std::string_view FixedString(const char* s, size_t cap) {
  return std::string_view(s, strnlen(s, cap));
}

bool IsCuda(uint8_t type) { return type >= ev::kCudaMemcpy && type <= ev::kCudaLaunchSummary; }
bool IsNccl(uint8_t type) { return type >= ev::kNcclCollective && type <= ev::kNcclCommDestroy; }
bool IsIo(uint8_t type) {
  return (type >= ev::kFileOpen && type <= ev::kFileCopy) ||
         (type >= ev::kNetConnect && type <= ev::kNetSocket) || type == ev::kMark ||
         type == ev::kNvtxRange;
}
bool IsProc(uint8_t type) { return type >= ev::kProcFork && type <= ev::kSignalHandler; }
constexpr uint8_t kGpuKernel = 1;  // GpuActivityKind GPU_KERNEL
// Types whose calls are asynchronous by definition: format v2 does not write their `async`.
bool AsyncByType(uint8_t type) {
  return type == ev::kCudaLaunch || type == ev::kCudaGraphLaunch || type == ev::kNcclCollective;
}
// A launch a LaunchRun can hold: nothing but the columns and the site's fields (a failed launch
// keeps its result in a plain Event).
bool RunLaunch(const RawEvent& e) {
  return e.type == ev::kCudaLaunch && e.result == 0 && e.bytes == 0 && e.count == 0 &&
         e.u.cuda.ptr == 0 && e.u.cuda.copy_kind == 0 && e.u.cuda.host_mem == 0;
}

}  // namespace

void EncodeClockSnapshot(wire::Buffer& b, const ClockSnapshot& m) {
  b.OptU64(1, m.monotonic_ns);
  b.OptU64(2, m.realtime_ns);
}

void EncodeRecorderConfig(wire::Buffer& b, const RecorderConfig& m) {
  b.OptU64(1, m.flush_interval_ms);
  b.OptU64(2, m.buffer_bytes);
  b.OptU64(3, m.stack_depth);
  for (const std::string& f : m.families) b.Bytes(4, f);
  for (const std::string& r : m.redacted) b.Bytes(5, r);
  b.OptBytes(6, m.python_version);
  b.OptU64(7, m.sample_hz);
}

void EncodeHeader(wire::Buffer& b, const Header& m) {
  b.OptBytes(1, m.magic);
  b.OptU64(2, m.format_version);
  b.OptU64(3, m.pid);
  b.OptU64(4, m.ppid);
  b.OptBytes(5, m.host);
  b.OptBytes(6, m.exe);
  for (const std::string& arg : m.cmdline) b.Bytes(7, arg);
  if (m.rank) b.I32(8, *m.rank);
  if (m.local_rank) b.I32(9, *m.local_rank);
  if (m.world_size) b.I32(10, *m.world_size);
  if (m.slurm_procid) b.I32(11, *m.slurm_procid);
  size_t clock = b.BeginNested(12);
  EncodeClockSnapshot(b, m.clock);
  b.EndNested(clock);
  b.OptU64(13, m.origin);
  b.OptBytes(14, m.tool_version);
  if (m.cuda_visible_devices) b.Bytes(15, *m.cuda_visible_devices);
  b.OptU64(16, m.process_start_ns);
  b.OptU64(17, m.main_tid);
  b.OptBytes(18, m.boot_id);
  size_t config = b.BeginNested(19);
  EncodeRecorderConfig(b, m.config);
  b.EndNested(config);
  b.OptBytes(20, m.rank_variable);
}

void EncodeInternedString(wire::Buffer& b, uint64_t id, std::string_view str,
                          format::Prefix prefix) {
  b.OptU64(1, id);
  b.OptBytes(2, str.substr(prefix.size));
  b.OptU64(3, prefix.id);
  b.OptU64(4, prefix.size);
}

void EncodeFrame(wire::Buffer& b, const Frame& m) {
  b.OptU64(1, m.id);
  b.OptU64(2, m.function);
  b.OptU64(3, m.module);
  b.OptU64(4, m.rel_pc);
  b.OptU64(5, m.file);
  b.OptU64(6, m.line);
  b.OptU64(7, m.kind);
  b.OptU64(8, m.first_line);
  b.OptBool(9, m.python_entry);
}

void EncodeStackChain(wire::Buffer& b, const StackNode* first, const StackNode* end) {
  b.OptU64(1, first->id);
  b.OptU64(2, first->parent);
  size_t frames = b.BeginNested(3);
  for (const StackNode* n = first; n != end; ++n) b.Varint(n->frame);
  b.EndNested(frames);
}

void EncodeInternedStream(wire::Buffer& b, const InternedStream& m) {
  b.OptU64(1, m.id);
  b.OptU64(2, m.handle);
  b.OptI32(3, m.device);
}

void EncodeThreadName(wire::Buffer& b, const ThreadName& m) {
  b.OptU64(1, m.tid);
  b.OptBytes(2, m.name);
}

void EncodeInternedComm(wire::Buffer& b, const InternedComm& m) {
  b.OptU64(1, m.id);
  b.OptU64(2, m.comm);
}

void EncodeInterned(wire::Buffer& b, const Interned& m, format::PathPrefixes& prefixes) {
  for (const InternedString& s : m.strings) {
    size_t t = b.BeginNested(1);
    EncodeInternedString(b, s.id, s.str, prefixes.Define(s.id, s.str));
    b.EndNested(t);
  }
  for (const Frame& f : m.frames) {
    size_t t = b.BeginNested(2);
    EncodeFrame(b, f);
    b.EndNested(t);
  }
  for (const InternedStream& s : m.streams) {
    size_t t = b.BeginNested(4);
    EncodeInternedStream(b, s);
    b.EndNested(t);
  }
  for (const ThreadName& n : m.threads) {
    size_t t = b.BeginNested(5);
    EncodeThreadName(b, n);
    b.EndNested(t);
  }
  for (const InternedComm& c : m.comms) {
    size_t t = b.BeginNested(6);
    EncodeInternedComm(b, c);
    b.EndNested(t);
  }
  const StackNode* nodes = m.stack_nodes.data();
  for (size_t i = 0, n = m.stack_nodes.size(); i < n;) {
    size_t end = i + 1;
    while (end < n && format::ContinuesChain(nodes[end - 1].id, nodes[end].id, nodes[end].parent)) {
      ++end;
    }
    size_t t = b.BeginNested(7);
    EncodeStackChain(b, nodes + i, nodes + end);
    b.EndNested(t);
    i = end;
  }
}

uint64_t CommIds::Id(uint64_t comm, Interned* interned) {
  if (comm == 0) return 0;
  auto [it, inserted] = ids_.try_emplace(comm, ids_.size() + 1);
  if (inserted) interned->comms.push_back({it->second, comm});
  return it->second;
}

void EncodeEvent(wire::Buffer& b, const RawEvent& e, const EventRefs& refs) {
  const bool cuda = IsCuda(e.type), nccl = IsNccl(e.type), io = IsIo(e.type), proc = IsProc(e.type);
  b.OptU64(1, e.type);
  b.OptS64(2, refs.ts_delta);
  b.OptU64(3, e.dur);
  b.OptU64(4, e.api);
  b.OptU64(5, e.stack);
  b.OptU64(6, e.bytes);
  b.OptU64(7, refs.stream_id);
  if (cuda) {
    b.OptU64(8, e.u.cuda.device);
    b.OptU64(9, e.u.cuda.copy_kind);
    b.OptU64(10, e.u.cuda.host_mem);
    if (!AsyncByType(e.type)) b.OptBool(11, e.u.cuda.async != 0);
  }
  b.OptI32(12, e.result);
  if (io) b.OptU64(13, e.u.io.path);
  if (proc) b.OptU64(13, e.u.proc.path);
  const bool sample = e.type == ev::kThreadSample;
  if (sample) b.OptU64(13, e.u.sample.path);  // in field order, as FormatCompactor writes it
  b.OptU64(14, e.count);
  if (io) {
    b.OptU64(16, e.u.io.fs_type);
    b.OptI32(17, e.u.io.fd);
    b.OptU64(18, e.u.io.offset);
  }
  if (nccl) {
    b.OptU64(19, e.u.nccl.op);
    b.OptU64(20, e.u.nccl.dtype);
    b.OptU64(21, e.u.nccl.redop);
    b.OptI32(22, e.u.nccl.peer);
    b.OptI32(24, e.u.nccl.rank);
    b.OptI32(25, e.u.nccl.nranks);
    b.OptU64(26, e.u.nccl.seq);
    b.OptU64(27, e.u.nccl.group_depth);
  }
  if (proc) {
    b.OptU64(28, e.u.proc.child_pid);
    b.OptU64(29, e.u.proc.argv);
  }
  if (io) b.OptU64(30, e.u.io.net_scope);
  if (cuda) b.OptU64(31, e.u.cuda.ptr);
  if (cuda && refs.correlation_delta) b.S64(33, *refs.correlation_delta);
  b.OptU64(35, refs.comm_id);
  b.OptU64(36, refs.parent_comm_id);
  if (e.type == ev::kWait && e.u.io.launch_device != 0) b.U64(37, e.u.io.launch_device - 1);
  if (io) {
    b.OptU64(38, e.u.io.source);
    b.OptU64(39, e.u.io.local);
    b.OptU64(40, e.u.io.peer_pid);
    b.OptBool(41, e.u.io.writable != 0);
    b.OptU64(42, e.u.io.addr);
  }
  if (sample) {
    if (e.u.sample.fd >= 0) b.I32(17, e.u.sample.fd);
    b.OptU64(43, e.u.sample.tid);
    b.OptU64(44, e.u.sample.cpu_ns);
    b.OptU64(45, e.u.sample.wait_ns);
    b.OptU64(46, e.u.sample.state);
    if (e.u.sample.syscall != kSampleNotBlocked) b.I32(47, e.u.sample.syscall);
    b.OptU64(48, e.u.sample.pid);
  }
}

void EncodeLaunchSite(wire::Buffer& b, const LaunchSite& m) {
  b.OptU64(1, m.api);
  b.OptU64(2, m.stream);
  b.OptU64(3, m.device);
  b.OptU64(4, m.stack);
}

void EncodeLaunchRun(wire::Buffer& b, const LaunchRun& m) {
  auto zigzag = [](int64_t v) { return wire::ZigZag(v); };
  auto same = [](uint64_t v) { return v; };
  b.PackedVarints(1, m.ts.begin(), m.ts.end(), zigzag);
  b.PackedVarints(2, m.dur.begin(), m.dur.end(), same);
  b.PackedVarints(3, m.correlation_delta.begin(), m.correlation_delta.end(), zigzag);
  b.PackedVarints(4, m.site.begin(), m.site.end(), same);
  for (const LaunchSite& site : m.sites) {
    size_t t = b.BeginNested(5);
    EncodeLaunchSite(b, site);
    b.EndNested(t);
  }
}

void EventBatchEncoder::Add(const RawEvent& e, uint64_t stream_id) {
  EventRefs refs;
  refs.ts_delta = static_cast<int64_t>(e.ts - prev_ts_);
  refs.stream_id = stream_id;
  prev_ts_ = e.ts;
  const bool cuda = IsCuda(e.type);
  if (cuda && e.u.cuda.correlation != 0) {
    refs.correlation_delta = static_cast<int64_t>(e.u.cuda.correlation - prev_correlation_);
    prev_correlation_ = e.u.cuda.correlation;
  }
  if (!RunLaunch(e)) {
    FlushRun();
    if (IsNccl(e.type)) {
      refs.comm_id = comms_.Id(e.u.nccl.comm, &interned_);
      refs.parent_comm_id = comms_.Id(e.u.nccl.parent_comm, &interned_);
    }
    WriteEvent(e, refs);
    return;
  }
  // A launch: into the run, unless it breaks it (correlated or not unlike the run, or a site
  // more than an index byte can name).
  const LaunchSite site{e.api, stream_id, e.u.cuda.device, e.stack};
  const bool correlated = refs.correlation_delta.has_value();
  size_t index = 0;
  while (index < run_.sites.size() && !(run_.sites[index] == site)) ++index;
  if (!run_.ts.empty() &&
      (correlated != run_correlated_ || (index == run_.sites.size() && index == kMaxLaunchSites))) {
    FlushRun();
    index = 0;
  }
  if (run_.ts.empty()) {
    run_first_ = e;
    first_refs_ = refs;
    run_correlated_ = correlated;
  }
  if (index == run_.sites.size()) run_.sites.push_back(site);
  run_.ts.push_back(refs.ts_delta);
  run_.dur.push_back(e.dur);
  if (correlated) run_.correlation_delta.push_back(*refs.correlation_delta);
  run_.site.push_back(static_cast<uint32_t>(index));
}

void EventBatchEncoder::WriteEvent(const RawEvent& e, const EventRefs& refs) {
  size_t t = b_.BeginNested(kEventBatchEventField);
  EncodeEvent(b_, e, refs);
  b_.EndNested(t);
}

void EventBatchEncoder::FlushRun() {
  if (run_.ts.empty()) return;
  if (run_.ts.size() == 1) {
    WriteEvent(run_first_, first_refs_);
  } else {
    if (run_.sites.size() == 1) run_.site.clear();
    size_t event = b_.BeginNested(kEventBatchEventField);
    size_t run = b_.BeginNested(kEventLaunchesField);
    EncodeLaunchRun(b_, run_);
    b_.EndNested(run);
    b_.EndNested(event);
  }
  run_.clear();
}

void EncodeEventBatchHeader(wire::Buffer& b, uint32_t tid, uint64_t seq, uint64_t dropped) {
  b.OptU64(1, tid);
  b.OptU64(2, seq);
  b.OptU64(3, dropped);
}

void EncodeGpuActivity(wire::Buffer& b, const RawGpuActivity& a, int64_t start_delta,
                       std::optional<int64_t> correlation_delta) {
  b.OptU64(1, a.kind);
  b.OptS64(2, start_delta);
  b.OptU64(3, a.dur);
  b.OptU64(4, a.device);
  b.OptU64(5, a.stream);
  b.OptU64(7, a.name);
  b.OptU64(8, a.grid);
  b.OptU64(9, a.block);
  b.OptU64(10, a.bytes);
  b.OptU64(11, a.copy_kind);
  b.OptU64(12, a.src_kind);
  b.OptU64(13, a.dst_kind);
  b.OptBool(14, a.nccl != 0);
  b.OptU64(15, a.graph);
  b.OptU64(16, a.dst_device);
  b.OptU64(17, a.shared_mem);
  b.OptU64(18, a.registers);
  if (correlation_delta) b.S64(19, *correlation_delta);
}

void EncodeKernelSite(wire::Buffer& b, const KernelSite& m) {
  b.OptU64(1, m.device);
  b.OptU64(2, m.stream);
  b.OptU64(3, m.name);
  b.OptU64(4, m.grid);
  b.OptU64(5, m.block);
  b.OptBool(6, m.nccl);
  b.OptU64(7, m.graph);
  b.OptU64(8, m.shared_mem);
  b.OptU64(9, m.registers);
}

void EncodeKernelRun(wire::Buffer& b, const KernelRun& m) {
  auto zigzag = [](int64_t v) { return wire::ZigZag(v); };
  auto same = [](uint64_t v) { return v; };
  b.PackedVarints(1, m.start.begin(), m.start.end(), zigzag);
  b.PackedVarints(2, m.dur.begin(), m.dur.end(), same);
  b.PackedVarints(3, m.correlation_delta.begin(), m.correlation_delta.end(), zigzag);
  b.PackedVarints(4, m.site.begin(), m.site.end(), same);
  for (const KernelSite& site : m.sites) {
    size_t t = b.BeginNested(5);
    EncodeKernelSite(b, site);
    b.EndNested(t);
  }
}

void GpuBatchEncoder::Add(const RawGpuActivity& a) {
  const int64_t start_delta = static_cast<int64_t>(a.start - prev_start_);
  prev_start_ = a.start;
  std::optional<int64_t> correlation_delta;
  if (a.correlation != 0) {
    correlation_delta = static_cast<int64_t>(a.correlation - prev_correlation_);
    prev_correlation_ = a.correlation;
  }
  // A kernel record a KernelRun can hold: nothing but the columns and the site's fields.
  const bool kernel = a.kind == kGpuKernel && a.bytes == 0 && a.copy_kind == 0 && a.src_kind == 0 &&
                      a.dst_kind == 0 && a.dst_device == 0;
  if (!kernel) {
    FlushRun();
    WriteActivity(a, start_delta, correlation_delta);
    return;
  }
  const KernelSite site{a.device,    a.stream, a.name,       a.grid,     a.block,
                        a.nccl != 0, a.graph,  a.shared_mem, a.registers};
  const bool correlated = correlation_delta.has_value();
  size_t index = 0;
  while (index < run_.sites.size() && !(run_.sites[index] == site)) ++index;
  if (!run_.start.empty() &&
      (correlated != run_correlated_ || (index == run_.sites.size() && index == kMaxKernelSites))) {
    FlushRun();
    index = 0;
  }
  if (run_.start.empty()) {
    run_first_ = a;
    first_start_delta_ = start_delta;
    first_correlation_delta_ = correlation_delta;
    run_correlated_ = correlated;
  }
  if (index == run_.sites.size()) run_.sites.push_back(site);
  run_.start.push_back(start_delta);
  run_.dur.push_back(a.dur);
  if (correlated) run_.correlation_delta.push_back(*correlation_delta);
  run_.site.push_back(static_cast<uint32_t>(index));
}

void GpuBatchEncoder::WriteActivity(const RawGpuActivity& a, int64_t start_delta,
                                    std::optional<int64_t> correlation_delta) {
  size_t t = b_.BeginNested(kGpuBatchActivityField);
  EncodeGpuActivity(b_, a, start_delta, correlation_delta);
  b_.EndNested(t);
}

void GpuBatchEncoder::FlushRun() {
  if (run_.start.empty()) return;
  if (run_.start.size() == 1) {
    WriteActivity(run_first_, first_start_delta_, first_correlation_delta_);
  } else {
    if (run_.sites.size() == 1) run_.site.clear();
    size_t activity = b_.BeginNested(kGpuBatchActivityField);
    size_t run = b_.BeginNested(kGpuActivityKernelsField);
    EncodeKernelRun(b_, run_);
    b_.EndNested(run);
    b_.EndNested(activity);
  }
  run_.clear();
}

void EncodeGpuBatchDropped(wire::Buffer& b, uint64_t dropped) { b.OptU64(2, dropped); }

void EncodeDeviceInfo(wire::Buffer& b, const RawDeviceInfo& m) {
  b.OptU64(1, m.device);
  b.OptBytes(2, FixedString(m.name, sizeof(m.name)));
  b.OptU64(3, m.sm_count);
  b.OptU64(4, m.total_memory);
  b.OptBytes(5, FixedString(m.uuid, sizeof(m.uuid)));
  b.OptU64(6, m.pci_bus);
  b.OptU64(7, m.visible_devices);
}

void EncodeModule(wire::Buffer& b, const Module& m) {
  b.OptU64(1, m.path);
  b.OptU64(2, m.base);
  b.OptU64(3, m.size);
  b.OptBytes(4, m.build_id);
}

void EncodeNotice(wire::Buffer& b, const Notice& m) {
  b.OptU64(1, m.ts);
  b.OptU64(2, m.severity);
  b.OptBytes(3, m.code);
  b.OptBytes(4, m.text);
}

void EncodeFooter(wire::Buffer& b, const Footer& m) {
  b.OptU64(1, m.end_ns);
  b.OptU64(2, m.events);
  b.OptU64(3, m.events_dropped);
  b.OptU64(4, m.gpu_activities);
  b.OptU64(5, m.gpu_dropped);
  b.OptU64(6, m.batches);
  b.OptU64(7, m.bytes);
  b.OptU64(8, m.reason);
  b.OptI32(9, m.exit_status);
}

void WriteHeaderPacket(wire::Buffer& b, const Header& m) {
  PacketScope p(b, kHeader);
  EncodeHeader(b, m);
}
void WriteInternedPacket(wire::Buffer& b, const Interned& m, format::PathPrefixes& prefixes) {
  PacketScope p(b, kInterned);
  EncodeInterned(b, m, prefixes);
}
void WriteNoticePacket(wire::Buffer& b, const Notice& m) {
  PacketScope p(b, kNotice);
  EncodeNotice(b, m);
}
void WriteFooterPacket(wire::Buffer& b, const Footer& m) {
  PacketScope p(b, kFooter);
  EncodeFooter(b, m);
}
void WriteDevicePacket(wire::Buffer& b, const RawDeviceInfo& m) {
  PacketScope p(b, kDevice);
  EncodeDeviceInfo(b, m);
}

}  // namespace idlescope::trace
