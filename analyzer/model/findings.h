// Typed findings: what the report says about a cause beyond its idle time, as a kind and its
// figures. The analysis fills them in; exporters turn them into words (the text report), fields
// (JSON, docs/report-json.md) or pictures. A new kind of finding is one enum entry here, its
// figures set by the stage that knows them, and its wording and field names in the exporters
// (report/findings_text.cc, report/json_report.cc).
#pragma once

#include <cstdint>

#include "analyzer/model/causes.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/report_symbols.h"
#include "analyzer/model/vocabulary.h"
#include "trace.pb.h"

namespace idlescope {

enum class FindingKind : uint8_t {
  // host_gpu_transfer
  kPageableCopies,  // ns: in pageable copies; other_ns: in pinned or device copies
  kGpuOnlyCopies,   // ns: copies seen only on the GPU (cuBLAS/NCCL copies, untraced threads)
  // checkpointing
  kSnapshotCopies,   // ns: device-to-host copies that snapshot the model before its write
  kCheckpointBytes,  // bytes: model file bytes written while the GPU idled
  // communication
  kNcclOpBlocked,       // nccl_op, ns: blocked in collectives of this op
  kExposedNcclKernels,  // ns: NCCL kernels with no compute running
  kStragglerRank,       // rank: the rank the others waited for; count: collectives it arrived
                        // last at, of_count: of the matched collectives; ns: the other ranks'
                        // summed wait for it; other_ns: the longest such wait
  kBlamedActivity,      // rank: the last arriver; cause: what it was doing (its candidates'
                        // cause); ns: the other ranks' wait that covers; count: the waiting
                        // ranks, first_rank..last_rank their range; stack, object: its evidence
  kBlamedCompute,       // rank, ns, count, first_rank, last_rank: the waits none of the last
                        // arriver's host activity covers (its own GPU work, or untraced)
  // data_loading
  kRemoteReads,            // ns: reading remote filesystems (NFS, FUSE, ...)
  kWorkerQueueWaits,       // ns: waiting on worker processes or sockets
  kLauncherPreprocessing,  // ns: CPU work of the launching thread in gaps where it read data
  // synchronization
  kHostWorkAfterSync,  // ns: launching-thread CPU time after the blocking call that opened a gap
  // small_batch, insufficient_memory, launch_bound
  kComputeKernels,       // count: compute kernels; ns: their summed duration
  kKernelsBelowSmCount,  // count: compute kernels with fewer blocks than SMs; of_count: of the
                         // kernels whose grid is known
  // startup: the process that took longest to its first kernel
  kStartupFirstKernel,   // pid, rank; ns: from its start to its first kernel launch
  kStartupBeforeCuda,    // ns: before its first CUDA call; count, bytes, other_ns: its reads of
                         // code files (.py/.pyc/.so) and their blocked time
  kStartupCudaToKernel,  // ns: from its first CUDA call to its first kernel; bytes: model files
                         // read; api: its longest CUDA call's function; other_ns: that call
  // no_gpu_work: what the job's threads did instead (figures of report.host_activity)
  kHostActivity,     // activity; ns, count (calls), bytes: the kind's totals
  kWorkerProcesses,  // count: worker processes; other_count: those that read files; calls: their
                     // file reads; bytes: the bytes they read
  // unused_gpus
  kRanksShareDevice,  // api: a device that `count` ranks (the lowest: rank) drive while
                      // other_count visible devices of its host stay unused
  // any cause
  kEvidenceApproximate,  // too many distinct stacks or objects: evidence lists are approximate
};
inline constexpr int kFindingKindCount = static_cast<int>(FindingKind::kEvidenceApproximate) + 1;

// One finding. Which figures a kind sets is said at the kind; the others stay 0.
struct Finding {
  FindingKind kind = FindingKind::kEvidenceApproximate;
  Ns ns = 0;
  Ns other_ns = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t other_count = 0;
  uint64_t of_count = 0;
  uint64_t calls = 0;
  int32_t rank = -1;
  uint32_t pid = 0;
  NcclOp nccl_op = NCCL_OP_UNSPECIFIED;
  HostActivityKind activity = HostActivityKind::kReads;
  StringId api = 0;  // a name: the function of a CUDA call, a device
  Cause cause = Cause::kUnknown;
  int32_t first_rank = -1;
  int32_t last_rank = -1;
  StackId stack = 0;
  StringId object = 0;
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

// Where the bandwidth of a saving came from.
enum class RateSource : uint8_t {
  kNone,
  kPinnedCopies,              // measured on the GPU: host<->device copies from pinned memory
  kPinnedDeviceToHostCopies,  // measured on the GPU: device-to-host copies into pinned memory
  kDeviceToHostCopies,        // measured on the GPU: any device-to-host copies
  kAssumed,                   // assumed (kDefaultPinnedBytesPerNs): nothing to measure
};

struct SavingBasis {
  SavingMethod method = SavingMethod::kNone;
  double rate_bytes_per_ns = 0;  // the bandwidth used, in bytes per ns (= GB/s)
  RateSource rate_source = RateSource::kNone;
  uint64_t bytes = 0;  // kCheckpointMinusSnapshot: the bytes written, whose snapshot is kept
  Ns snapshot_ns = 0;  // kCheckpointMinusSnapshot: snapshot copies measured before the writes
  Ns tail_ns = 0;      // kCheckpointMinusSnapshot: writes after the last kernel, not hidden
  Ns wait_ns = 0;      // kOverlapWithCompute: waits for slower ranks, which overlap cannot hide
  double batch_growth = 0;       // kFillTheDevice: the factor the batch grows by
  uint32_t used_devices = 0;     // kSpreadOverDevices: devices that ran kernels
  uint32_t visible_devices = 0;  // kSpreadOverDevices: those and the unused visible ones
};

}  // namespace idlescope
