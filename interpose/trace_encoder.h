// Encoders for every message of proto/trace.proto, on top of wire::Buffer. The recorder's writer
// thread is the only production user; tests/interpose/wire_test.cc compares each one with
// libprotobuf's serialization of the same message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "interpose/recorder.h"
#include "interpose/wire.h"
#include "proto/format_rules.h"

namespace idlescope::trace {

// The format version the recorder writes (Header.format_version; proto/trace.proto "Versions").
inline constexpr uint32_t kFormatVersion = 4;

// Field numbers of Packet's oneof (trace.proto).
enum PacketField : uint32_t {
  kHeader = 1,
  kInterned = 2,
  kEvents = 3,
  kGpu = 4,
  kDevice = 5,
  kModules = 6,
  kNotice = 7,
  kFooter = 8,
  kCompressed = 9,
};

enum Origin : uint32_t { kOriginPreload = 1, kOriginFork = 2, kOriginInjection = 3 };
enum ExitReason : uint32_t {
  kExitNormal = 1,
  kExitUnderscore = 2,
  kExitSignal = 3,
  kExitExec = 4,
  kExitDetached = 5,
};

struct ClockSnapshot {
  uint64_t monotonic_ns = 0;
  uint64_t realtime_ns = 0;
};

struct RecorderConfig {
  uint64_t flush_interval_ms = 0;
  uint64_t buffer_bytes = 0;
  uint32_t stack_depth = 0;
  std::vector<std::string> families;
  std::vector<std::string> redacted;  // IDLESCOPE_REDACT: "paths", "cmdline"
  std::string python_version;
  uint32_t sample_hz = 0;
};

struct Header {
  std::string magic = "IDLESCOPE";
  uint32_t format_version = kFormatVersion;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  std::string host;
  std::string exe;
  std::vector<std::string> cmdline;
  std::optional<int32_t> rank, local_rank, world_size, slurm_procid;
  std::string rank_variable;
  ClockSnapshot clock;
  uint32_t origin = 0;
  std::string tool_version;
  std::optional<std::string> cuda_visible_devices;
  uint64_t process_start_ns = 0;
  uint32_t main_tid = 0;
  std::string boot_id;
  RecorderConfig config;
};

struct InternedString {
  uint64_t id = 0;
  std::string str;
};
enum FrameKind : uint32_t { kFrameNative = 0, kFramePython = 1 };
struct Frame {
  uint64_t id = 0, function = 0, module = 0, rel_pc = 0, file = 0;
  uint32_t line = 0;
  uint32_t kind = kFrameNative;
  uint32_t first_line = 0;
  bool python_entry = false;
};
struct StackNode {
  uint64_t id = 0, parent = 0, frame = 0;
};
struct InternedStream {
  uint64_t id = 0, handle = 0;
  int32_t device = 0;
};
struct ThreadName {
  uint32_t tid = 0;
  std::string name;
};
struct InternedComm {
  uint64_t id = 0, comm = 0;
};
struct Interned {
  std::vector<InternedString> strings;
  std::vector<Frame> frames;
  std::vector<StackNode> stack_nodes;
  std::vector<InternedStream> streams;
  std::vector<ThreadName> threads;
  std::vector<InternedComm> comms;
  bool empty() const {
    return strings.empty() && frames.empty() && stack_nodes.empty() && streams.empty() &&
           threads.empty() && comms.empty();
  }
};

// Per-file ids of NCCL communicators (InternedComm): an event carries a small id instead of the
// 64-bit hash (11 bytes as a varint). Cleared when a new file starts.
class CommIds {
 public:
  // The id of `comm` (0 for 0); a new one is appended to `interned`.
  uint64_t Id(uint64_t comm, Interned* interned);
  void Clear() { ids_.clear(); }

 private:
  std::unordered_map<uint64_t, uint64_t> ids_;
};

// What an Event says beyond its RawEvent: its start relative to the previous event of the batch
// (absolute for the first), the InternedStream id of its stream (0 = none), and the format-v2
// references (trace.proto Event.correlation_delta, comm_id, parent_comm_id).
struct EventRefs {
  int64_t ts_delta = 0;
  uint64_t stream_id = 0;
  std::optional<int64_t> correlation_delta;
  uint64_t comm_id = 0;
  uint64_t parent_comm_id = 0;
};

struct LaunchSite {
  uint64_t api = 0, stream = 0;
  uint32_t device = 0;
  uint64_t stack = 0;
  bool operator==(const LaunchSite&) const = default;
};
struct KernelSite {
  uint32_t device = 0, stream = 0;
  uint64_t name = 0, grid = 0;
  uint32_t block = 0;
  bool nccl = false;
  uint32_t graph = 0, shared_mem = 0, registers = 0;
  bool operator==(const KernelSite&) const = default;
};
struct KernelRun {
  std::vector<int64_t> start;
  std::vector<uint64_t> dur;
  std::vector<int64_t> correlation_delta;
  std::vector<uint32_t> site;
  std::vector<KernelSite> sites;
  void clear() {
    start.clear();
    dur.clear();
    correlation_delta.clear();
    site.clear();
    sites.clear();
  }
};
struct LaunchRun {
  std::vector<int64_t> ts;
  std::vector<uint64_t> dur;
  std::vector<int64_t> correlation_delta;
  std::vector<uint32_t> site;
  std::vector<LaunchSite> sites;
  void clear() {
    ts.clear();
    dur.clear();
    correlation_delta.clear();
    site.clear();
    sites.clear();
  }
};

struct Module {
  uint64_t path = 0, base = 0, size = 0;
  std::string build_id;
};

struct Notice {
  uint64_t ts = 0;
  uint32_t severity = 0;
  std::string code, text;
};

struct Footer {
  uint64_t end_ns = 0, events = 0, events_dropped = 0, gpu_activities = 0, gpu_dropped = 0,
           batches = 0, bytes = 0;
  uint32_t reason = 0;
  int32_t exit_status = 0;
};

// A Trace.packet field wrapping one Packet with one oneof member: the framing of the file.
class PacketScope {
 public:
  PacketScope(wire::Buffer& b, PacketField field)
      : b_(b), packet_(b.BeginNested(1)), member_(b.BeginNested(field)) {}
  ~PacketScope() {
    b_.EndNested(member_);
    b_.EndNested(packet_);
  }
  PacketScope(const PacketScope&) = delete;
  PacketScope& operator=(const PacketScope&) = delete;

 private:
  wire::Buffer& b_;
  size_t packet_, member_;
};

// Message bodies (without their own tag/length), so callers can nest them anywhere.
void EncodeClockSnapshot(wire::Buffer& b, const ClockSnapshot& m);
void EncodeRecorderConfig(wire::Buffer& b, const RecorderConfig& m);
void EncodeHeader(wire::Buffer& b, const Header& m);
// Format v3 (proto/format_rules.h): the string's first prefix.size bytes are those of string
// prefix.id, and are not written.
void EncodeInternedString(wire::Buffer& b, uint64_t id, std::string_view str,
                          format::Prefix prefix = {});
void EncodeFrame(wire::Buffer& b, const Frame& m);
// Nodes [first, end), each (but the first) the child of the one before (a StackChain).
void EncodeStackChain(wire::Buffer& b, const StackNode* first, const StackNode* end);
void EncodeInternedStream(wire::Buffer& b, const InternedStream& m);
void EncodeThreadName(wire::Buffer& b, const ThreadName& m);
// Stack nodes as StackChains, strings against the file's `prefixes` (format v3).
void EncodeInterned(wire::Buffer& b, const Interned& m, format::PathPrefixes& prefixes);
void EncodeInternedComm(wire::Buffer& b, const InternedComm& m);
// One Event (format v2) from a RawEvent and its references. Which payload of RawEvent::u applies
// follows from the type (CUDA, NCCL, I/O and net, process).
void EncodeEvent(wire::Buffer& b, const RawEvent& e, const EventRefs& refs);
void EncodeLaunchSite(wire::Buffer& b, const LaunchSite& m);
void EncodeLaunchRun(wire::Buffer& b, const LaunchRun& m);
inline constexpr uint32_t kEventLaunchesField = 34;
// EventBatch header fields; events follow as field 4 (EventBatchEventField).
void EncodeEventBatchHeader(wire::Buffer& b, uint32_t tid, uint64_t seq, uint64_t dropped);
inline constexpr uint32_t kEventBatchEventField = 4;

// The events of one EventBatch, in format v2: one encoder per batch; Add() the events in recording
// order after the batch header, then Finish(). Consecutive launches that fit a LaunchRun are
// collected and written as one Event (a lone one as a plain Event); every other event is written at
// once. Correlation ids are delta-encoded along the batch, communicators replaced by their per-file
// ids.
class EventBatchEncoder {
 public:
  EventBatchEncoder(wire::Buffer& b, CommIds& comms, Interned& interned)
      : b_(b), comms_(comms), interned_(interned) {}
  EventBatchEncoder(const EventBatchEncoder&) = delete;
  EventBatchEncoder& operator=(const EventBatchEncoder&) = delete;

  // `stream_id`: the InternedStream id of the event's stream (0 = none).
  void Add(const RawEvent& e, uint64_t stream_id);
  // Writes the launches still collected: the batch's events are complete.
  void Finish() { FlushRun(); }

  // A run's sites are indexed by one-byte varints.
  static constexpr size_t kMaxLaunchSites = 127;

 private:
  void WriteEvent(const RawEvent& e, const EventRefs& refs);
  void FlushRun();

  wire::Buffer& b_;
  CommIds& comms_;
  Interned& interned_;
  uint64_t prev_ts_ = 0;
  uint64_t prev_correlation_ = 0;
  LaunchRun run_;
  bool run_correlated_ = false;
  RawEvent run_first_;    // the run's first launch, written alone if no second one comes
  EventRefs first_refs_;  // and its references
};
// One GpuActivity (format v2): `start_delta` relative to the previous activity of the batch
// (absolute for the first), `correlation_delta` relative to the batch's previous correlation id
// (absent: the record has none).
void EncodeGpuActivity(wire::Buffer& b, const RawGpuActivity& a, int64_t start_delta,
                       std::optional<int64_t> correlation_delta);
void EncodeKernelSite(wire::Buffer& b, const KernelSite& m);
void EncodeKernelRun(wire::Buffer& b, const KernelRun& m);
inline constexpr uint32_t kGpuActivityKernelsField = 20;
inline constexpr uint32_t kGpuBatchActivityField = 1;

// The activities of one GpuBatch, in format v2, like EventBatchEncoder: one encoder per batch,
// Add() the records in order, then Finish() (before EncodeGpuBatchDropped). Consecutive kernel
// records become KernelRuns; correlation ids are delta-encoded along the batch.
class GpuBatchEncoder {
 public:
  explicit GpuBatchEncoder(wire::Buffer& b) : b_(b) {}
  GpuBatchEncoder(const GpuBatchEncoder&) = delete;
  GpuBatchEncoder& operator=(const GpuBatchEncoder&) = delete;

  void Add(const RawGpuActivity& a);
  void Finish() { FlushRun(); }

  static constexpr size_t kMaxKernelSites = 127;

 private:
  void WriteActivity(const RawGpuActivity& a, int64_t start_delta,
                     std::optional<int64_t> correlation_delta);
  void FlushRun();

  wire::Buffer& b_;
  uint64_t prev_start_ = 0;
  uint64_t prev_correlation_ = 0;
  KernelRun run_;
  bool run_correlated_ = false;
  RawGpuActivity run_first_;  // the run's first kernel, written alone if no second one comes
  int64_t first_start_delta_ = 0;
  std::optional<int64_t> first_correlation_delta_;
};
void EncodeGpuBatchDropped(wire::Buffer& b, uint64_t dropped);  // after the activities
void EncodeDeviceInfo(wire::Buffer& b, const RawDeviceInfo& m);
void EncodeModule(wire::Buffer& b, const Module& m);
inline constexpr uint32_t kModuleMapModuleField = 1;
void EncodeNotice(wire::Buffer& b, const Notice& m);
void EncodeFooter(wire::Buffer& b, const Footer& m);

// Whole packets (framing included), as the writer emits them.
void WriteHeaderPacket(wire::Buffer& b, const Header& m);
void WriteInternedPacket(wire::Buffer& b, const Interned& m, format::PathPrefixes& prefixes);
void WriteNoticePacket(wire::Buffer& b, const Notice& m);
void WriteFooterPacket(wire::Buffer& b, const Footer& m);
void WriteDevicePacket(wire::Buffer& b, const RawDeviceInfo& m);

}  // namespace idlescope::trace
