// Flush: encoding what was recorded, and the footer.
#include "interpose/flush.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "interpose/interned_strings.h"
#include "interpose/packet_compressor.h"
#include "interpose/queues.h"
#include "interpose/recorder_internal.h"
#include "interpose/rings.h"
#include "interpose/sampler.h"
#include "interpose/trace_file.h"

namespace idlescope {
namespace flush {
namespace {

// Writer-side interning of stream handles.
struct StreamKey {
  uint64_t handle;
  int32_t device;
  bool operator==(const StreamKey&) const = default;
};
struct StreamKeyHash {
  size_t operator()(const StreamKey& k) const {
    return std::hash<uint64_t>()(k.handle * 31 + static_cast<uint64_t>(k.device));
  }
};
using StreamIds = std::unordered_map<StreamKey, uint64_t, StreamKeyHash>;

// The footer's counts.
struct Totals {
  uint64_t events = 0, dropped = 0, gpu = 0, gpu_dropped = 0, batches = 0;
};

// Never destroyed (a flush may run after static destructors: the library destructor's).
struct FlushState {
  std::mutex mu;                             // the flush lock
  StreamIds* stream_ids = nullptr;           // per file
  trace::CommIds* comm_ids = nullptr;        // NCCL communicators, per file
  format::PathPrefixes* prefixes = nullptr;  // the strings' directories, per file
  Totals totals;                             // of the current file
  uint64_t sampler_seq = 0;                  // the sampler's batches in the current file
  std::atomic<bool> ends_on_signal{false};   // AnnounceEndOnSignal
  PacketCompressor compressor;               // format v4; kept by a forked child (its header)
};
static_assert(std::is_trivially_destructible_v<FlushState>);
constinit FlushState g_flush;

// Set on the writer for the final flush of a signal (or of _exit, which signal handlers call),
// which may not wait for a lock the thread the signal stopped can hold: frames are resolved
// without the dynamic loader's locks (Symbolizer::FrameFor), the queues are left out if their
// mutex stays taken (FlushLocked), nothing is freed (alloc.cc).
__thread bool t_final_of_signal __attribute__((tls_model("initial-exec"))) = false;

bool TakesCare() { return t_final_of_signal || EndsOnSignal(); }

// Takes `mu` (held by program threads for a few instructions: the queues) for a flush. It waits
// as long as it takes, except once the process ends on a signal: the holder may be the stopped
// thread, and the flush then goes on without it 100 ms later.
bool LockForFlush(std::mutex& mu) {
  uint64_t give_up_at = 0;
  while (!mu.try_lock()) {
    if (TakesCare()) {
      uint64_t now = NowNs();
      if (give_up_at == 0) {
        give_up_at = now + 100'000'000;
      } else if (now >= give_up_at) {
        return false;
      }
    }
    // A sleep, not a spin: the holder may be preempted (two cores, loaded). The system call, not
    // libc's nanosleep: that is our hook (hooks/wait.cc), and a program thread may flush here.
    timespec pause{0, 50'000};
    syscall(SYS_nanosleep, &pause, nullptr);
  }
  return true;
}

uint64_t StreamId(uint64_t handle, int32_t device, trace::Interned* interned) {
  // Raw 0 is "no stream" (device and event syncs): Event.stream stays 0, nothing is interned. The
  // hooks give the NULL stream as 1 (cudaStreamLegacy) or 2 (cudaStreamPerThread), which exist
  // once per device; a created stream's handle is unique in the process.
  if (handle == 0) return 0;
  StreamKey key{handle, handle <= 2 ? device : 0};
  auto [it, inserted] = g_flush.stream_ids->try_emplace(key, g_flush.stream_ids->size() + 1);
  if (inserted) interned->streams.push_back({it->second, handle, device});
  return it->second;
}

uint64_t EventStreamId(const RawEvent& e, trace::Interned* interned) {
  switch (e.type) {
    case ev::kCudaMemcpy:
    case ev::kCudaMemset:
    case ev::kCudaSync:
    case ev::kCudaLaunch:
    case ev::kCudaGraphLaunch:
    case ev::kCudaLaunchSummary:
      return StreamId(e.u.cuda.stream, static_cast<int32_t>(e.u.cuda.device), interned);
    case ev::kNcclCollective:
      return StreamId(e.u.nccl.stream, 0, interned);
    default:
      return 0;  // allocations and non-CUDA events have no stream
  }
}

void ReadThreadName(rings::Ring* r, trace::Interned* interned) {
  std::string path = "/proc/self/task/" + std::to_string(r->tid) + "/comm";
  std::string name;
  if (!internal::ReadFile(path.c_str(), &name)) return;
  name = internal::Trim(name);
  if (name.empty() || name.size() >= sizeof(r->name) || name == r->name) return;
  memcpy(r->name, name.c_str(), name.size() + 1);
  interned->threads.push_back({r->tid, name});
}

constexpr size_t kMaxEventsPerBatch = 4096;

// The ring's events from tail to the snapshot head, then (final flush) the pending event of a
// thread that is still running, as if it had been appended at the head.
void EncodeRing(rings::Ring* r, wire::Buffer* body, trace::Interned* interned) {
  uint64_t tail = r->tail.load(std::memory_order_relaxed);
  uint64_t head = r->snap_head;
  uint64_t end_all = head + (r->final_pending ? 1 : 0);
  uint64_t dropped = r->dropped.load(std::memory_order_relaxed);
  uint64_t new_dropped = dropped - r->dropped_reported;
  if (tail == end_all && new_dropped == 0) return;
  // Thread names change after start (PyTorch names its workers): look again now and then.
  if (r->name_checks++ % 16 == 0) ReadThreadName(r, interned);
  Totals& totals = g_flush.totals;
  uint64_t i = tail;
  while (i != end_all || new_dropped != 0) {
    uint64_t end = end_all - i > kMaxEventsPerBatch ? i + kMaxEventsPerBatch : end_all;
    trace::PacketScope p(*body, trace::kEvents);
    trace::EncodeEventBatchHeader(*body, r->tid, r->seq++, new_dropped);
    totals.dropped += new_dropped;
    r->dropped_reported += new_dropped;
    new_dropped = 0;
    totals.events += end - i;
    trace::EventBatchEncoder events(*body, *g_flush.comm_ids, *interned);
    for (; i != end; ++i) {
      const RawEvent& e = i == head ? r->final_pending_event : r->slots[i & r->mask];
      events.Add(e, EventStreamId(e, interned));
    }
    events.Finish();
    ++totals.batches;
  }
  r->final_pending = false;
  r->tail.store(head, std::memory_order_release);
}

// The sampler's ended runs (sampler.h): a batch of the writer's tid, with its own sequence.
void EncodeSamples(wire::Buffer* body, trace::Interned* interned) {
  std::vector<RawEvent> runs;
  uint64_t dropped = 0;
  sampler::TakeRuns(&runs, &dropped, TakesCare());
  size_t i = 0;
  while (i < runs.size() || dropped != 0) {
    size_t end = std::min(runs.size(), i + kMaxEventsPerBatch);
    trace::PacketScope p(*body, trace::kEvents);
    trace::EncodeEventBatchHeader(*body, sampler::WriterTid(), g_flush.sampler_seq++, dropped);
    g_flush.totals.dropped += dropped;
    dropped = 0;
    g_flush.totals.events += end - i;
    trace::EventBatchEncoder events(*body, *g_flush.comm_ids, *interned);
    for (; i < end; ++i) events.Add(runs[i], 0);
    events.Finish();
    ++g_flush.totals.batches;
  }
}

void EncodeGpu(std::vector<RawGpuActivity>& gpu, uint64_t dropped, wire::Buffer* body) {
  size_t i = 0;
  while (i < gpu.size() || dropped != 0) {
    size_t end = std::min(gpu.size(), i + kMaxEventsPerBatch);
    trace::PacketScope p(*body, trace::kGpu);
    trace::GpuBatchEncoder activities(*body);
    for (; i < end; ++i) activities.Add(gpu[i]);
    activities.Finish();
    trace::EncodeGpuBatchDropped(*body, dropped);
    g_flush.totals.gpu_dropped += dropped;
    dropped = 0;
  }
  g_flush.totals.gpu += gpu.size();
}

}  // namespace

void Init() {
  g_flush.stream_ids = new StreamIds();
  g_flush.comm_ids = new trace::CommIds();
  g_flush.prefixes = new format::PathPrefixes();
}

std::mutex& Mutex() { return g_flush.mu; }

// Order matters: snapshot the rings' heads and swap the queues first, then take the interned
// data, so that every id an event uses was published before we look for new ids.
void FlushLocked(bool final) {
  if (trace_file::Closed()) return;
  // Names of new frames go into the flush's own strings; set until the locals below are freed
  // (LeakFrees).
  strings::FlushScope flushing;
  std::vector<rings::Snapped> snapped;
  rings::Snapshot(final, &snapped);
  queues::Taken queued;
  // On a signal the queues' mutex may be held by the thread the signal stopped (a notice being
  // queued): their content is then left out rather than waited for.
  if (LockForFlush(queues::Mutex())) {
    queues::TakeLocked(&queued);
    queues::Mutex().unlock();
  }

  trace::Interned interned;
  wire::Buffer body;
  for (const rings::Snapped& s : snapped) {
    EncodeRing(s.ring, &body, &interned);
    rings::Drained(s);
  }
  EncodeGpu(queued.gpu, queued.gpu_dropped, &body);
  EncodeSamples(&body, &interned);

  // New stack nodes, resolved to frames (which intern function and module names).
  std::vector<stacks::NewNode> nodes;
  stacks::TakeNewNodes(&nodes);
  stacks::Symbolizer& sym = stacks::WriterSymbolizer();
  // Without the loader's locks once the process ends on a signal (the stopped thread may be in
  // dlopen), also in a flush that was under way when it came.
  for (const stacks::NewNode& node : nodes) {
    uint64_t frame = sym.FrameFor(node.pc, &interned, /*loader_free=*/TakesCare());
    interned.stack_nodes.push_back({node.id, node.parent, frame});
  }
  std::vector<trace::Module> modules;
  sym.TakeNewModules(&modules, /*loader_free=*/TakesCare());
  strings::TakeUnwritten(&interned);

  // DeviceInfo packets first, never compressed: the end of a file is learnt from its framing
  // alone (analyzer/read/file_end.h), whether the process drove a GPU included. They use no id.
  wire::Buffer out;
  for (const RawDeviceInfo& d : queued.devices) trace::WriteDevicePacket(out, d);
  wire::Buffer packets;
  if (!interned.empty()) trace::WriteInternedPacket(packets, interned, *g_flush.prefixes);
  if (!modules.empty()) {
    trace::PacketScope p(packets, trace::kModules);
    for (const trace::Module& m : modules) {
      size_t t = packets.BeginNested(trace::kModuleMapModuleField);
      trace::EncodeModule(packets, m);
      packets.EndNested(t);
    }
  }
  for (const trace::Notice& notice : queued.notices) trace::WriteNoticePacket(packets, notice);
  packets.Raw(body.data(), body.size());
  g_flush.compressor.Append(packets.data(), packets.size(), &out);
  trace_file::Write(out);
}

void WriteFooterLocked(trace::ExitReason reason, int status) {
  if (trace_file::Closed()) return;
  const Totals& totals = g_flush.totals;
  trace::Footer f;
  f.end_ns = NowNs();
  f.events = totals.events;
  f.events_dropped = totals.dropped + rings::EventsWithoutRing();
  f.gpu_activities = totals.gpu;
  f.gpu_dropped = totals.gpu_dropped;
  f.batches = totals.batches;
  f.reason = reason;
  f.exit_status = status;
  trace_file::WriteFooter(f);
}

void FinalFlushLocked(trace::ExitReason reason, int status) {
  FlushLocked(/*final=*/true);
  WriteFooterLocked(reason, status);
}

void TakeSignalCareOnThisThread() { t_final_of_signal = true; }

bool LockForEnd() { return LockForFlush(g_flush.mu); }

void AnnounceEndOnSignal() { g_flush.ends_on_signal.store(true, std::memory_order_seq_cst); }
bool EndsOnSignal() { return g_flush.ends_on_signal.load(std::memory_order_acquire); }

void LockForFork() { g_flush.mu.lock(); }
void UnlockInParent() { g_flush.mu.unlock(); }

void ResetInChild() {
  g_flush.mu.unlock();
  g_flush.stream_ids->clear();
  g_flush.comm_ids->Clear();
  g_flush.prefixes->Clear();
  g_flush.totals = {};
  g_flush.sampler_seq = 0;
  g_flush.ends_on_signal.store(false, std::memory_order_relaxed);
}

}  // namespace flush

namespace internal {
bool LeakFrees() {
  return flush::t_final_of_signal || (strings::InFlush() && flush::EndsOnSignal());
}
}  // namespace internal

}  // namespace idlescope
