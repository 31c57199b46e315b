// Plain data passed between the stages of the analysis (docs/architecture.md, "Analyzer": read ->
// timeline -> gaps -> attribution -> report). The reader (read/job_reader.h) turns trace packets
// into these; tests build them by hand. Times are nanoseconds on the job clock: the trace clock
// (CLOCK_MONOTONIC) of the job's first host, other hosts shifted through their Header.clock
// snapshots.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace.pb.h"

namespace idlescope {

using Ns = int64_t;

struct Interval {
  Ns start = 0;
  Ns end = 0;  // exclusive
  Ns length() const { return end - start; }
  friend bool operator==(const Interval&, const Interval&) = default;
};

// One traced process (one trace file).
// How a process ended, as the end of its trace file tells (read/file_end.h).
struct ProcessEnd {
  // The footer's (EXIT_NORMAL, EXIT_UNDERSCORE, EXIT_SIGNAL, EXIT_EXEC); EXIT_UNSPECIFIED: the file
  // has no footer (the process was killed with SIGKILL, or is still running).
  ExitReason reason = EXIT_UNSPECIFIED;
  int32_t status = 0;  // the exit code, or the signal for EXIT_SIGNAL
  // The footer's end, else the latest time of the file's last packets (0: none; job clock once
  // the file's offset is added).
  Ns at = 0;
  uint64_t stack = 0;      // its PROC_EXIT's stack (a fatal signal: where it landed), 0: none
  bool drove_gpu = false;  // the file holds a DeviceInfo: the process initialized a GPU

  bool footer() const { return reason != EXIT_UNSPECIFIED; }
};

struct ProcessInfo {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  std::string host;
  std::string boot_id;
  std::string exe;
  std::string cmdline;               // arguments joined by spaces
  int32_t rank = -1;                 // Header.rank, else slurm_procid, else -1
  Ns start = 0;                      // Header.process_start_ns (job clock)
  std::string file;                  // trace file path, for messages
  std::string cuda_visible_devices;  // Header.cuda_visible_devices ("" when unset)
  uint32_t main_tid = 0;             // Header.main_tid (0: unknown, the pid is assumed)
  bool forked = false;               // Header.origin == ORIGIN_FORK: a fork()ed child, no exec
  // CLOCK_REALTIME at job-clock time 0 by this file's Header.clock (0: the file has no snapshot):
  // what a timeline export shows wall-clock time with.
  Ns realtime_at_zero = 0;
  ProcessEnd ending;  // how its file ends (read before any record)
};

// A device as a process saw it (DeviceInfo). Devices of different processes are the same device
// when their uuids are equal.
struct DeviceProps {
  uint32_t ordinal = 0;
  std::string name;
  std::string uuid;
  uint32_t sm_count = 0;
  uint64_t total_memory = 0;
  uint32_t visible_devices = 0;
};

// One host event (proto Event) with its absolute times and resolved strings. The string views are
// only valid during the call that receives the event.
struct HostEvent {
  uint32_t process = 0;  // index into the job's processes
  uint32_t tid = 0;
  EventType type = EVENT_UNSPECIFIED;
  Ns start = 0;
  Ns end = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  int32_t device = -1;  // CUDA device ordinal for CUDA/NCCL events, else -1
  CopyKind copy_kind = COPY_UNSPECIFIED;
  MemKind host_mem = MEM_UNSPECIFIED;
  bool async = false;
  FsType fs_type = FS_UNSPECIFIED;
  int32_t fd = -1;  // I/O: the file descriptor
  NetScope net_scope = NET_UNSPECIFIED;
  uint64_t stack = 0;    // per-process StackNode id (0: not captured)
  uint64_t path_id = 0;  // per-process string id of `path` (evidence key)
  uint64_t api_id = 0;   // per-process string id of the intercepted function
  std::string_view api;
  std::string_view path;
  std::string_view argv;  // NUL-separated
  // NCCL
  NcclOp nccl_op = NCCL_OP_UNSPECIFIED;
  uint64_t comm = 0;
  uint64_t seq = 0;
  int32_t rank = -1;
  int32_t nranks = 0;
  uint32_t group_depth = 0;  // ncclGroupStart nesting at the call (0: not in a group)
  // CUDA_MALLOC / CUDA_FREE
  uint64_t ptr = 0;
  // PROC_FORK / PROC_SPAWN / PROC_WAIT: the child's pid (0: unknown)
  uint32_t child_pid = 0;
  // FILE_RENAME: the old name; FILE_COPY: the source (a file, a pipe, a peer's address)
  uint64_t source_id = 0;  // per-process string id
  std::string_view source;
  // NET_SOCKET: the socket's own address, and for a unix socket the peer's pid (0: unknown)
  std::string_view local;
  uint32_t peer_pid = 0;
  // FILE_MMAP / FILE_MUNMAP: the mapping's address; FILE_MMAP: writes through it reach the file
  uint64_t addr = 0;
  bool writable = false;
  // SIGNAL_HANDLER: the signal (Event.result)
  int32_t result = 0;
  // CUDA calls: the CUPTI correlation id of the call, matching its GpuRecord (0: none)
  uint64_t correlation = 0;
  // THREAD_SAMPLE (a run of the sampler's looks at thread `tid`): its time on a CPU and runnable
  // waiting for one, the state letter of the last look, the call it was blocked in (-1: none;
  // kNotBlocked: it was not blocked); `fd` and `path` the call's descriptor.
  uint64_t cpu_ns = 0;
  uint64_t wait_ns = 0;
  char thread_state = 0;
  int32_t syscall = 0;
  static constexpr int32_t kNotBlocked = INT32_MIN;
};

// What a THREAD_SAMPLE run's thread did most of the run: ran on a CPU, waited for one (runnable),
// or was blocked (the recorder cuts a run where that changes, so one of them fills nearly all of
// it).
enum class SampledState : uint8_t { kOnCpu, kWaitingForCpu, kBlocked };
inline SampledState SampledStateOf(const HostEvent& run) {
  const uint64_t dur = run.end > run.start ? static_cast<uint64_t>(run.end - run.start) : 0;
  const uint64_t busy = run.cpu_ns + run.wait_ns;
  const uint64_t blocked = dur > busy ? dur - busy : 0;
  if (run.wait_ns > run.cpu_ns && run.wait_ns >= blocked) return SampledState::kWaitingForCpu;
  if (run.cpu_ns >= blocked) return SampledState::kOnCpu;
  // Blocked most of the run, but no look found it blocked in a call (it was running or runnable
  // at each): it blocked between looks, in calls that returned before the next one, such as a
  // read-back's wait. A traced call's time is that call's (it outranks every run); what the
  // thread did besides, when that is a quarter of the run or more, is what the run is.
  if (run.syscall == HostEvent::kNotBlocked && 4 * busy >= dur) {
    return run.wait_ns > run.cpu_ns ? SampledState::kWaitingForCpu : SampledState::kOnCpu;
  }
  return SampledState::kBlocked;
}

// One GPU activity record (proto GpuActivity) with absolute times.
struct GpuRecord {
  uint32_t process = 0;
  GpuActivityKind kind = GPU_UNSPECIFIED;
  Ns start = 0;
  Ns end = 0;
  uint32_t device = 0;  // ordinal in `process`
  uint32_t stream = 0;
  bool nccl = false;
  uint64_t grid = 0;  // blocks
  uint32_t block = 0;
  uint64_t bytes = 0;
  uint64_t name_id = 0;  // per-process string id of the kernel name
  CopyKind copy_kind = COPY_UNSPECIFIED;
  MemKind src_kind = MEM_UNSPECIFIED;
  MemKind dst_kind = MEM_UNSPECIFIED;
  uint64_t correlation = 0;  // the CUPTI correlation id of the API call that caused it (0: none)
};

}  // namespace idlescope
