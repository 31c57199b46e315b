// The result of the analysis: what `idlescope report`'s exporters print. Data only: figures, enums
// and ids into the report's symbol table, never sentences (the exporters word them). docs/
// attribution.md explains every figure; the JSON schema mirrors this struct.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/model/causes.h"
#include "analyzer/model/findings.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/report_symbols.h"
#include "analyzer/model/vocabulary.h"
#include "analyzer/model/warnings.h"
#include "trace.pb.h"

namespace idlescope {

// The JSON report's schema (docs/report-json.md): 2 since findings, savings and evidence are data.
inline constexpr int kReportSchemaVersion = 2;

// What an evidence item names.
enum class EvidenceKind : uint8_t {
  kStack,             // id: a stack of the report's symbols
  kObject,            // id: a string: file path, network address, program and arguments, kernel
  kDirectory,         // id: a directory path (0: one of too many directories to name)
  kHostActivity,      // id: a host activity item's name, of kind `activity` (no_gpu_work)
  kUnresolvedStack,   // trace_id of process: a stack id its trace file never resolved
  kUnresolvedObject,  // trace_id of process: a string id its trace file never defined
};

struct EvidenceItem {
  EvidenceKind kind = EvidenceKind::kObject;
  uint32_t id = 0;  // StackId or StringId
  HostActivityKind activity = HostActivityKind::kReads;
  uint32_t process = 0;   // unresolved: the process (index into the job's processes)
  uint64_t trace_id = 0;  // unresolved: the id in that process's trace file
  Ns ns = 0;              // idle time credited to it
  uint64_t bytes = 0;
  uint64_t count = 0;
};

struct CauseReport {
  Cause cause = Cause::kUnknown;
  Ns ns = 0;             // device-seconds of idle attributed (summed over devices)
  double share = 0;      // ns / job GPU time
  Ns saving_ns = 0;      // estimated GPU time the fix frees (idle, summed over devices)
  Ns job_saving_ns = 0;  // estimated time by which the job would end sooner
  SavingBasis basis;     // how they were computed
  std::vector<EvidenceItem> stacks;
  std::vector<EvidenceItem> objects;
  std::vector<EvidenceItem> directories;  // files grouped by directory, when there are many
  std::vector<Finding> findings;          // pageable share, straggler rank, startup breakdown, ...
};

struct DeviceReport {
  std::string id;  // "host/uuid-or-ordinal"
  std::string host;
  std::string name;
  int32_t rank = -1;
  uint32_t processes = 0;  // processes that launched work on it
  bool used = false;       // ran at least one kernel
  Ns compute_ns = 0;
  Ns comm_ns = 0;
  Ns transfer_ns = 0;
  Ns any_kernel_ns = 0;
  Ns idle_ns = 0;                 // span - compute
  double compute_util = 0;        // the paper's U_i: compute busy / job span
  double kernel_active_util = 0;  // nvidia-smi: any kernel (NCCL too) / job span
  uint64_t kernels = 0;
  uint64_t nccl_kernels = 0;
  Ns median_kernel_ns = 0;
  double below_sm_fraction = -1;  // -1: unknown (no SM count or grid sizes)
  uint64_t long_gaps = 0;
  uint64_t short_gaps = 0;
  Ns short_gap_ns = 0;
  int64_t peak_memory = 0;
  uint64_t total_memory = 0;  // 0: unknown
  std::array<Ns, kCauseCount> cause_ns{};
};

// The event that explains most of a gap.
struct GapEvidence {
  Cause cause = Cause::kUnknown;
  bool gpu_side = false;  // activity of the device itself (no thread)
  StringId object = 0;    // file path, address, program, kernel name (0: none)
  uint64_t bytes = 0;
  StackId stack = 0;  // 0: no stack
  uint32_t pid = 0;
  uint32_t tid = 0;  // 0: unknown
};

struct GapReport {
  std::string device;
  Ns start = 0;  // since the job start
  Ns length = 0;
  GapKind kind = GapKind::kMiddle;
  std::vector<std::pair<Cause, Ns>> causes;  // largest first
  bool has_evidence = false;                 // shown when its slice is at least the unexplained
  GapEvidence evidence;
};

struct FileReport {
  std::string path;
  uint32_t pid = 0;
  int32_t rank = -1;
  std::string host;
  uint64_t events = 0;
  uint64_t gpu_activities = 0;
  bool footer = false;
  // How its process ended (read/file_end.h), `ending.at` from the job's start.
  ProcessEnd ending;

  // Not a clean end: a signal, a non-zero exit status, or no footer (an exec is clean).
  bool EndedAbnormally() const {
    return !ending.footer() || ending.reason == EXIT_SIGNAL ||
           (ending.reason != EXIT_EXEC && ending.status != 0);
  }
};

// How one host's clock was placed on the job's time line (read/clock_alignment.h).
enum class ClockMethod : uint8_t {
  kReference,    // the first file's host: the others are aligned to it
  kCollectives,  // from the ends of collectives it shares with another host
  kRealtime,     // its header's CLOCK_REALTIME snapshot only (no shared collective found)
};

struct HostClock {
  std::string host;
  ClockMethod method = ClockMethod::kRealtime;
  std::string via;           // kCollectives: the host it was aligned against
  Ns correction_ns = 0;      // how far its REALTIME snapshot placed it ahead of the reference
  uint64_t collectives = 0;  // shared collectives the correction comes from
  Ns residual_ns = 0;        // median |difference - correction| over them: the skew that is left
};

// One communicator's collectives of one operation (analysis/collective_stats.h).
struct CollectiveReport {
  uint64_t comm = 0;  // the communicator's id (as trace.proto's comm)
  NcclOp op = NCCL_OP_UNSPECIFIED;
  int32_t nranks = 0;
  uint64_t collectives = 0;  // matched (every rank called it)
  uint64_t size_bytes = 0;   // nccl-tests' size S, summed over them
  uint64_t timed = 0;        // those whose transfer time is known (every rank's kernel paired)
  Ns transfer_ns = 0;        // their transfer times (the shortest kernel over ranks), summed
  double algbw = 0;          // of the timed: their S over their transfer time, bytes per ns (GB/s)
  double busbw = 0;          // algbw x nccl-tests' bus factor of the operation
  Ns waited_ns = 0;          // the ranks' waits for the last arriver, summed
  int32_t most_last_rank = -1;  // the rank that arrived last most often, and how often
  uint64_t most_last_count = 0;
};

// A collective the ranks waited long at: each rank's call and kernel.
struct CollectiveDetail {
  uint64_t comm = 0;
  uint64_t seq = 0;
  NcclOp op = NCCL_OP_UNSPECIFIED;
  int32_t nranks = 0;
  uint64_t size_bytes = 0;
  int32_t last_rank = -1;
  Ns waited_ns = 0;     // the other ranks' waits, summed
  Ns transfer_ns = -1;  // -1: unknown
  struct Rank {
    int32_t rank = -1;
    Ns arrival = 0;        // its call, since the job start
    Ns kernel_start = -1;  // its NCCL kernel, since the job start (-1: not paired)
    Ns kernel_ns = 0;
    Ns waited_ns = 0;
  };
  std::vector<Rank> ranks;  // by rank
};

struct HostActivityItem {
  StringId what = 0;  // file path, address, or program with its arguments (0: unnamed)
  Ns ns = 0;          // blocked time in its calls
  uint64_t bytes = 0;
  uint64_t count = 0;      // calls (a recorded burst counts as its calls)
  uint32_t processes = 0;  // distinct processes that made the calls
  uint32_t pid = 0;        // the process and thread of its longest call
  uint32_t tid = 0;
  bool main_thread = false;         // that thread is its process's main thread
  Ns main_thread_ns = 0;            // blocked time on main threads
  FsType fs_type = FS_UNSPECIFIED;  // files: the filesystem of its longest call
  StackId stack = 0;                // call stack of its longest call (0: not captured)
  bool installer = false;           // programs: a package installer
};

struct HostActivityGroup {
  HostActivityKind kind = HostActivityKind::kReads;
  Ns ns = 0;  // exact totals over every call of the kind
  uint64_t bytes = 0;
  uint64_t count = 0;
  Ns main_thread_ns = 0;
  std::vector<HostActivityItem> items;  // heaviest first (blocked time), at most --top
  bool approximate = false;             // items were forgotten to bound memory
};

// A fork()ed child of a job process that did not exec (DataLoader workers, multiprocessing pools).
struct WorkerProcess {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  Ns lifetime_ns = 0;
  uint64_t reads = 0;  // file reads (not pipes or sockets)
  uint64_t read_bytes = 0;
  Ns read_ns = 0;
};

struct HostActivityReport {
  std::vector<HostActivityGroup> groups;  // non-empty groups, in kind order
  std::vector<WorkerProcess> workers;     // by pid
  uint32_t workers_with_reads = 0;
};

// The job's training steps (analysis/steps.h): where they were found and how long they took.
struct SlowStep {
  uint64_t number = 0;  // 1: the step that begins at the first start
  Ns start = 0;         // since the job start
  Ns length = 0;
  // The report's top gap that overlaps it most on the steps' devices (gap_ns 0: none), and that
  // gap's largest cause.
  Ns gap_ns = 0;
  Cause cause = Cause::kUnknown;
  Ns cause_ns = 0;
};
struct StepsReport {
  StepSource source = StepSource::kNone;
  std::string anchor;         // the NVTX range's name or the activity each step begins with
  uint64_t per_step = 0;      // GPU activities per step (kGpuActivity)
  uint32_t pid = 0;           // the process whose steps these are
  Ns first_start = 0;         // since the job start
  uint64_t steps = 0;         // all of them; the times of the first durations.size() are measured
  std::vector<Ns> durations;  // in order: from one step's start to the next's
  Ns p25 = 0, median = 0, p90 = 0, max = 0;
  std::vector<SlowStep> slowest;  // longest first: at most 3, each at least twice the median
};

struct JobReport {
  std::string tool_version;
  Ns min_gap = 0;
  // Job
  uint32_t processes = 0;
  std::vector<int32_t> ranks;
  std::vector<std::string> hosts;
  Ns span = 0;      // job span: first process start to last process end
  Ns gpu_time = 0;  // span x devices
  uint64_t events = 0;
  uint64_t gpu_activities = 0;
  // Utilization (means over devices, unused ones included)
  double compute_util = 0;
  double kernel_active_util = 0;
  std::vector<DeviceReport> devices;
  std::vector<CauseReport> causes;  // largest first, zero causes left out
  Ns idle_ns = 0;                   // sum of cause ns
  std::vector<GapReport> top_gaps;  // longest first
  // Multi-rank jobs: per communicator and operation, and the collectives waited at longest.
  std::vector<CollectiveReport> collectives;
  std::vector<CollectiveDetail> slowest_collectives;
  HostActivityReport host_activity;
  std::vector<FileReport> files;
  std::vector<HostClock> clocks;  // jobs on more than one host: how each host was aligned
  StepsReport steps;
  std::vector<ReportWarning> warnings;
  ReportSymbols symbols;  // the strings and stacks the ids above refer to
};

}  // namespace idlescope
