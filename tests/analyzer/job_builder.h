// Test helper: builds a job's plain records (job_model.h) by hand, in milliseconds, and feeds
// them to a real JobAnalysis. Strings are interned per process like a trace file does.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/analysis/job_analysis.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/labels.h"
#include "analyzer/model/socket_address.h"
#include "analyzer/model/symbol_source.h"

namespace idlescope::testing {

constexpr Ns Ms(double ms) { return static_cast<Ns>(ms * 1e6); }

class MapSymbols : public SymbolSource {
 public:
  uint64_t Intern(uint32_t process, const std::string& s) {
    auto [it, inserted] = ids_.try_emplace({process, s}, ids_.size() + 1);
    strings_[{process, it->second}] = s;
    return it->second;
  }
  std::string String(uint32_t process, uint64_t id) const override {
    auto it = strings_.find({process, id});
    return it == strings_.end() ? "" : it->second;
  }
  // Every stack is one frame named after its id and process: "stack7@p0".
  std::vector<SymbolFrame> Stack(uint32_t process, uint64_t stack_id) const override {
    auto [it, inserted] = stack_names_.try_emplace({process, stack_id});
    if (inserted) it->second = "stack" + std::to_string(stack_id) + "@p" + std::to_string(process);
    return {SymbolFrame{.function = it->second, .module = "/job/train"}};
  }

 private:
  std::map<std::pair<uint32_t, std::string>, uint64_t> ids_;
  std::map<std::pair<uint32_t, uint64_t>, std::string> strings_;
  mutable std::map<std::pair<uint32_t, uint64_t>, std::string> stack_names_;
};

class JobBuilder {
 public:
  explicit JobBuilder(AnalysisOptions options = {}) : analysis_(options) {}

  uint32_t Process(uint32_t pid, uint32_t ppid = 1, int32_t rank = -1, std::string exe = "python",
                   std::string cmdline = "python train.py", std::string host = "node0",
                   double start_ms = 0) {
    ProcessInfo info;
    info.pid = pid;
    info.ppid = ppid;
    info.rank = rank;
    info.exe = std::move(exe);
    info.cmdline = std::move(cmdline);
    info.host = std::move(host);
    info.start = Ms(start_ms);
    return AddProcess(info);
  }

  // A fork()ed child (Header.origin FORK) of `ppid`: same program, no exec.
  uint32_t ForkedProcess(uint32_t pid, uint32_t ppid, double start_ms = 0) {
    ProcessInfo info;
    info.pid = pid;
    info.ppid = ppid;
    info.exe = "python";  // as Process()'s defaults: the parent's program
    info.cmdline = "python train.py";
    info.host = "node0";
    info.start = Ms(start_ms);
    info.forked = true;
    return AddProcess(info);
  }

  void Device(uint32_t process, uint32_t ordinal, std::string uuid, uint64_t total_memory = 0,
              uint32_t sm_count = 0, uint32_t visible = 1) {
    DeviceProps props;
    props.ordinal = ordinal;
    props.uuid = std::move(uuid);
    props.name = "Test GPU";
    props.total_memory = total_memory;
    props.sm_count = sm_count;
    props.visible_devices = visible;
    analysis_.AddDeviceInfo(process, props);
  }

  void Kernel(uint32_t process, double start_ms, double end_ms, uint32_t device = 0,
              bool nccl = false, uint32_t stream = 7, uint64_t grid = 0) {
    GpuRecord r;
    r.process = process;
    r.kind = GPU_KERNEL;
    r.start = Ms(start_ms);
    r.end = Ms(end_ms);
    r.device = device;
    r.stream = stream;
    r.nccl = nccl;
    r.grid = grid;
    analysis_.AddGpuRecord(r);
  }

  void GpuCopy(uint32_t process, double start_ms, double end_ms, MemKind host_side,
               uint32_t device = 0) {
    GpuRecord r;
    r.process = process;
    r.kind = GPU_MEMCPY;
    r.start = Ms(start_ms);
    r.end = Ms(end_ms);
    r.device = device;
    r.copy_kind = COPY_H2D;
    r.src_kind = host_side;
    r.dst_kind = MEM_DEVICE;
    r.bytes = 1 << 20;
    analysis_.AddGpuRecord(r);
  }

  // A host event; `path` is interned. Returns the event for further tweaks before Add().
  HostEvent Event(uint32_t process, uint32_t tid, EventType type, double start_ms, double end_ms,
                  std::string path = "") {
    HostEvent e;
    e.process = process;
    e.tid = tid;
    e.type = type;
    e.start = Ms(start_ms);
    e.end = Ms(end_ms);
    if (!path.empty()) {
      e.path_id = symbols_.Intern(process, path);
      held_.push_back(path);
    }
    return e;
  }
  // A string id of `process` (an API name, ...), as the trace's interned strings give it.
  uint64_t Intern(uint32_t process, const std::string& s) { return symbols_.Intern(process, s); }

  // `local`: NET_SOCKET's own address (HostEvent.local), by value.
  void Add(HostEvent e, const std::string& local = "") {
    std::string path, source;
    if (e.path_id != 0) path = symbols_.String(e.process, e.path_id);
    if (e.source_id != 0) source = symbols_.String(e.process, e.source_id);
    e.path = path;
    e.source = source;
    e.local = local;
    analysis_.AddHostEvent(e);
  }

  // Shorthands.
  void Launch(uint32_t process, uint32_t tid, double at_ms, uint32_t device = 0) {
    HostEvent e = Event(process, tid, CUDA_LAUNCH, at_ms, at_ms + 0.005);
    e.device = static_cast<int32_t>(device);
    Add(e);
  }
  void Copy(uint32_t process, uint32_t tid, double start_ms, double end_ms, MemKind host_mem,
            uint64_t bytes = 64 << 20) {
    HostEvent e = Event(process, tid, CUDA_MEMCPY, start_ms, end_ms);
    e.device = 0;
    e.copy_kind = COPY_H2D;
    e.host_mem = host_mem;
    e.bytes = bytes;
    Add(e);
  }
  // A synchronous device-to-host copy (a model snapshot, a .cpu(), an .item()).
  void CopyToHost(uint32_t process, uint32_t tid, double start_ms, double end_ms,
                  uint64_t bytes = 256 << 20) {
    HostEvent e = Event(process, tid, CUDA_MEMCPY, start_ms, end_ms);
    e.device = 0;
    e.copy_kind = COPY_D2H;
    e.host_mem = MEM_PAGEABLE;
    e.bytes = bytes;
    e.stack = 7;
    Add(e);
  }
  void Io(uint32_t process, uint32_t tid, EventType type, double start_ms, double end_ms,
          const std::string& path, FsType fs = FS_LOCAL, uint64_t bytes = 1 << 20) {
    HostEvent e = Event(process, tid, type, start_ms, end_ms, path);
    e.fs_type = fs;
    e.bytes = bytes;
    e.stack = 42;
    Add(e);
  }
  void Net(uint32_t process, uint32_t tid, EventType type, double start_ms, double end_ms,
           NetScope scope, const std::string& address = "203.0.113.5:443") {
    HostEvent e = Event(process, tid, type, start_ms, end_ms, address);
    e.net_scope = scope;
    e.bytes = 1 << 20;
    Add(e);
  }
  void Sync(uint32_t process, uint32_t tid, double start_ms, double end_ms) {
    HostEvent e = Event(process, tid, CUDA_SYNC, start_ms, end_ms);
    e.device = 0;
    Add(e);
  }
  void Nccl(uint32_t process, uint32_t tid, double start_ms, double end_ms, uint64_t seq,
            int32_t rank, int32_t nranks, uint64_t comm = 0xc0ffee, uint32_t device = 0) {
    HostEvent e = Event(process, tid, NCCL_COLLECTIVE, start_ms, end_ms);
    e.device = static_cast<int32_t>(device);
    e.nccl_op = NCCL_ALL_REDUCE;
    e.comm = comm;
    e.seq = seq;
    e.rank = rank;
    e.nranks = nranks;
    e.bytes = 4 << 20;
    Add(e);
  }
  void Malloc(uint32_t process, uint32_t tid, double at_ms, uint64_t ptr, uint64_t bytes) {
    HostEvent e = Event(process, tid, CUDA_MALLOC, at_ms, at_ms + 0.01);
    e.device = 0;
    e.ptr = ptr;
    e.bytes = bytes;
    Add(e);
  }
  void End(uint32_t process, double at_ms) { analysis_.EndProcess(process, Ms(at_ms)); }

  // An event with a source (FILE_RENAME's old name, FILE_COPY's source).
  void FromTo(uint32_t process, uint32_t tid, EventType type, double start_ms, double end_ms,
              const std::string& from, const std::string& to, uint64_t bytes = 0) {
    HostEvent e = Event(process, tid, type, start_ms, end_ms, to);
    e.source_id = symbols_.Intern(process, from);
    e.fs_type = FS_LOCAL;
    e.bytes = bytes;
    e.stack = 43;
    Add(e);
  }
  // A socket's identity (NET_SOCKET), then nothing else: its I/O comes with Net().
  void Socket(uint32_t process, double at_ms, const std::string& local, const std::string& peer,
              NetScope scope, uint32_t peer_pid = 0) {
    HostEvent e = Event(process, 1, NET_SOCKET, at_ms, at_ms, peer);
    e.fs_type = FS_SOCKET;
    e.net_scope = scope;
    e.peer_pid = peer_pid;
    Add(e, local);
  }
  // Before the records: an address `process` had a socket on (read/socket_addresses.h).
  void SocketAddress(uint32_t process, const std::string& host, const std::string& local) {
    analysis_.AddSocketAddress(process, SocketAddressKey(host, local));
  }

  JobAnalysis& analysis() { return analysis_; }
  uint32_t AddProcess(const ProcessInfo& info) {
    analysis_.AddProcess(processes_, info);
    return processes_++;
  }
  JobReport Finish() { return analysis_.BuildReport(symbols_); }

 private:
  JobAnalysis analysis_;
  MapSymbols symbols_;
  std::vector<std::string> held_;
  uint32_t processes_ = 0;
};

// Idle attributed to `cause` over the job (0 when absent).
// The attribution tests' usual stage: one process (pid 100) whose thread kOneGapTid launches on
// device 0 ("GPU-a", 80 GiB, 132 SMs); kernels run [0, 100) and [200, 1000): one 100 ms gap at
// [100, 200). The job ends at 1000 ms.
inline constexpr uint32_t kOneGapTid = 100;
struct OneGap {
  JobBuilder job;
  uint32_t p;
  explicit OneGap(AnalysisOptions options = {}) : job(options) {
    p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a", 80ull << 30, 132);
    job.Launch(p, kOneGapTid, 0);
    job.Kernel(p, 0, 100);
    job.Kernel(p, 200, 1000);
    job.End(p, 1000);
  }
};

inline Ns CauseNs(const JobReport& report, Cause cause) {
  for (const CauseReport& c : report.causes) {
    if (c.cause == cause) return c.ns;
  }
  return 0;
}

inline const CauseReport* FindCause(const JobReport& report, Cause cause) {
  for (const CauseReport& c : report.causes) {
    if (c.cause == cause) return &c;
  }
  return nullptr;
}

// The first finding of `kind` of a cause (nullptr when absent).
inline const Finding* FindFinding(const CauseReport& cause, FindingKind kind) {
  for (const Finding& f : cause.findings) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

// What an evidence item names, as the report shows it ("stack42@p0", "/ckpt/model.pt").
inline std::string Label(const JobReport& report, const EvidenceItem& item) {
  return EvidenceLabel(item, report.symbols);
}

}  // namespace idlescope::testing
