// Small vocabulary types that the analysis stages produce and the report model and exporters
// read: what kind of gap an idle interval is, what kind of host activity a blocked call is, what
// kind of event explains idle time, how an estimated saving is computed.
#pragma once

#include <cstdint>
#include <string_view>

namespace idlescope {

// Where in a device's timeline an idle gap lies (analysis/timeline.h finds them).
enum class GapKind : uint8_t {
  kStartup,  // from the job start to the device's first kernel
  kMiddle,   // between two kernels
  kTail,     // from the last kernel to the job end
  kWhole,    // the device ran no kernel at all
};

// Stable identifiers (JSON, text): "startup", "between_kernels", "tail", "whole_span".
constexpr std::string_view GapKindName(GapKind kind) {
  switch (kind) {
    case GapKind::kStartup:
      return "startup";
    case GapKind::kMiddle:
      return "between_kernels";
    case GapKind::kTail:
      return "tail";
    case GapKind::kWhole:
      return "whole_span";
  }
  return "?";
}

// Where a job's training steps were found (analysis/steps.h): none, its NVTX ranges, the cycle of
// its GPU work.
enum class StepSource : uint8_t { kNone, kNvtx, kGpuActivity };

// Stable identifiers (JSON of report and diff): "none", "nvtx", "gpu_activity".
constexpr std::string_view StepSourceName(StepSource source) {
  switch (source) {
    case StepSource::kNone:
      return "none";
    case StepSource::kNvtx:
      return "nvtx";
    case StepSource::kGpuActivity:
      return "gpu_activity";
  }
  return "?";
}

// Host activity: what the job's threads and processes spent blocked time in, whether or not a GPU
// was involved (docs/attribution.md, "Host activity"). The only account of a job without GPU
// work, and the host-side picture of any job.
enum class HostActivityKind : uint8_t {
  kCheckpointWrites,  // write/fsync/rename/close of model files
  kWrites,            // writes of other files
  kReads,             // reads of files (data loading, imports)
  kIpc,               // pipes, local sockets, loopback: worker queues, stdout
  kNetwork,           // cluster-local and public addresses: downloads, uploads
  kTerminal,          // reads of stdin or a terminal
  kPrograms,          // exec'd and spawned programs (installers)
  kIdleWaits,         // sleeps, signal waits, event loops of GPU-feeding and main threads
};
inline constexpr int kHostActivityKindCount = static_cast<int>(HostActivityKind::kIdleWaits) + 1;

// Stable identifiers (JSON, text): "checkpoint_writes", "writes", "reads", "pipes_sockets",
// "network", "terminal", "programs", "idle_waits".
constexpr std::string_view HostActivityKindName(HostActivityKind kind) {
  switch (kind) {
    case HostActivityKind::kCheckpointWrites:
      return "checkpoint_writes";
    case HostActivityKind::kWrites:
      return "writes";
    case HostActivityKind::kReads:
      return "reads";
    case HostActivityKind::kIpc:
      return "pipes_sockets";
    case HostActivityKind::kNetwork:
      return "network";
    case HostActivityKind::kTerminal:
      return "terminal";
    case HostActivityKind::kPrograms:
      return "programs";
    case HostActivityKind::kIdleWaits:
      return "idle_waits";
  }
  return "?";
}

// What one host event says about a gap it overlaps (analysis/event_classes.h classifies them).
// kNone: the event does not explain idle time (launches, allocations, opens, marks).
enum class EventClass : uint8_t {
  kNone,
  kCopyPageable,     // CUDA copy with a pageable host side (or unknown host memory)
  kCopyPinned,       // CUDA copy with pinned/device/managed memory
  kNccl,             // NCCL collective, group end
  kCheckpointWrite,  // write/fsync/rename/close of a model file
  kUploadWrite,      // write/fsync of any other file, sends/writes to public addresses
  kIpcWrite,         // writes into pipes and local sockets: the analysis decides (has workers?)
  kPeerSend,         // sends/writes to cluster-local (private) addresses: gloo, stores, PS
  kReadLocal,        // reads of local files
  kReadRemote,       // reads of remote filesystem files
  kReadWorkerQueue,  // reads of pipes/sockets (a launching thread's waits on them too): waiting
                     // for DataLoader workers
  kDownload,         // NET_* with a public address
  kInstaller,        // exec/spawn of a package installer
  kTerminalRead,     // reads of stdin or a terminal, and waits on one: waiting for a person
  kIdleWait,         // a launching thread's idle waits (IsIdleWait: a sleep, an event loop):
                     // waiting for nothing
  kSync,             // cudaDeviceSynchronize & co
  kPeerRecv,         // receives from (and waits on) another process of the job: a rank, a store
  kStdinPipe,        // reads of stdin from a pipe: the program before this one in a pipeline
  kChildWait,        // waiting for a child process (waitpid, system): its cause is the child's
  kSignalHandler,    // a signal handler of the program that ran on the thread
  kCpuWork,          // a launching thread that ran on a CPU outside every traced call (sampled)
  kCpuWait,          // a launching thread that was runnable but waited for a CPU (sampled)
  kMappedRead,       // a launching thread blocked in page faults of a data file it mapped (sampled)
  // A worker process's thread (a fork()ed child running its parent's program: a DataLoader
  // worker), sampled from its parent's writer: what the workers did while a launching thread
  // waited for them (kReadWorkerQueue). Explains nothing alone (attribution.cc, Winner).
  kWorkerCpuWork,  // ran on a CPU: CPU-bound workers (data_loading)
  kWorkerCpuWait,  // runnable, waiting for a CPU: too many busy threads for the cores
                   // (cpu_starvation)
  kWorkerRead,     // blocked on a data file's descriptor, or in page faults of a mapped one:
                   // I/O-bound workers (data_loading)
};

// How an estimated saving was computed (docs/attribution.md, "The numbers").
enum class SavingMethod : uint8_t {
  kNone,                     // no estimate: the cause has no specific fix (startup, unknown)
  kAll,                      // all of the idle time: the fix takes the work off the GPU's path
  kHalf,                     // half of it: a heuristic (launch-bound and memory-bound short gaps)
  kPageableAtPinnedRate,     // copies from pinned memory (the pageable bytes at the pinned
                             // bandwidth), overlapped with compute: what compute cannot hide stays
  kCheckpointMinusSnapshot,  // blocked checkpoint time minus the snapshot an asynchronous
                             // checkpoint keeps
  kOverlapWithCompute,       // communication overlapped with compute: up to the compute time,
                             // less the waits for slower ranks
  kFillTheDevice,            // a batch batch_growth times larger (as memory allows)
  kSpreadOverDevices,        // unused GPUs: released (GPU time), or given their share of the work
                             // (the job's time)
};

}  // namespace idlescope
