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
  return (type >= ev::kFileOpen && type <= ev::kFileClose) ||
         (type >= ev::kNetConnect && type <= ev::kNetSend) || type == ev::kMark;
}
bool IsProc(uint8_t type) { return type >= ev::kProcFork && type <= ev::kThreadStart; }

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
}

void EncodeInternedString(wire::Buffer& b, uint64_t id, std::string_view str) {
  b.OptU64(1, id);
  b.OptBytes(2, str);
}

void EncodeFrame(wire::Buffer& b, const Frame& m) {
  b.OptU64(1, m.id);
  b.OptU64(2, m.function);
  b.OptU64(3, m.module);
  b.OptU64(4, m.rel_pc);
  b.OptU64(5, m.file);
  b.OptU64(6, m.line);
}

void EncodeStackNode(wire::Buffer& b, const StackNode& m) {
  b.OptU64(1, m.id);
  b.OptU64(2, m.parent);
  b.OptU64(3, m.frame);
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

void EncodeInterned(wire::Buffer& b, const Interned& m) {
  for (const InternedString& s : m.strings) {
    size_t t = b.BeginNested(1);
    EncodeInternedString(b, s.id, s.str);
    b.EndNested(t);
  }
  for (const Frame& f : m.frames) {
    size_t t = b.BeginNested(2);
    EncodeFrame(b, f);
    b.EndNested(t);
  }
  for (const StackNode& n : m.stack_nodes) {
    size_t t = b.BeginNested(3);
    EncodeStackNode(b, n);
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
}

void EncodeEvent(wire::Buffer& b, const RawEvent& e, int64_t ts_delta, uint64_t stream_id) {
  const bool cuda = IsCuda(e.type), nccl = IsNccl(e.type), io = IsIo(e.type), proc = IsProc(e.type);
  b.OptU64(1, e.type);
  b.OptS64(2, ts_delta);
  b.OptU64(3, e.dur);
  b.OptU64(4, e.api);
  b.OptU64(5, e.stack);
  b.OptU64(6, e.bytes);
  b.OptU64(7, stream_id);
  if (cuda) {
    b.OptU64(8, e.u.cuda.device);
    b.OptU64(9, e.u.cuda.copy_kind);
    b.OptU64(10, e.u.cuda.host_mem);
    b.OptBool(11, e.u.cuda.async != 0);
  } else if (nccl) {
    // NCCL calls are asynchronous with respect to the host by definition (trace.proto:
    // Event.async).
    b.OptBool(11, e.type == ev::kNcclCollective);
  }
  b.OptI32(12, e.result);
  if (io) b.OptU64(13, e.u.io.path);
  if (proc) b.OptU64(13, e.u.proc.path);
  b.OptU64(14, e.count);
  if (cuda) b.OptU64(15, e.u.cuda.correlation);
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
    b.OptU64(23, e.u.nccl.comm);
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
  if (nccl) b.OptU64(32, e.u.nccl.parent_comm);
}

void EncodeEventBatchHeader(wire::Buffer& b, uint32_t tid, uint64_t seq, uint64_t dropped) {
  b.OptU64(1, tid);
  b.OptU64(2, seq);
  b.OptU64(3, dropped);
}

void EncodeGpuActivity(wire::Buffer& b, const RawGpuActivity& a, int64_t start_delta) {
  b.OptU64(1, a.kind);
  b.OptS64(2, start_delta);
  b.OptU64(3, a.dur);
  b.OptU64(4, a.device);
  b.OptU64(5, a.stream);
  b.OptU64(6, a.correlation);
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
void WriteInternedPacket(wire::Buffer& b, const Interned& m) {
  PacketScope p(b, kInterned);
  EncodeInterned(b, m);
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
