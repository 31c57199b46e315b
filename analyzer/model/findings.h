// Typed findings: what the report says about a cause beyond its idle time, as a kind and its
// figures. The analysis fills them in; exporters turn them into words (the text report), fields
// (JSON, docs/report-json.md) or pictures. A new kind of finding is one row of model/findings.def
// (its JSON name and fields), its figures set by the stage that knows them, and its words in
// report/findings_text.cc.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analyzer/model/causes.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/report_symbols.h"
#include "analyzer/model/vocabulary.h"
#include "trace.pb.h"

namespace idlescope {

// In the order of findings.def.
enum class FindingKind : uint8_t {
#define IDLESCOPE_FINDING(id, ...) id,
#include "analyzer/model/findings.def"
#undef IDLESCOPE_FINDING
};

inline constexpr int kFindingKindCount = 0
#define IDLESCOPE_FINDING(id, ...) +1
#include "analyzer/model/findings.def"
#undef IDLESCOPE_FINDING
    ;

// One row of findings.def: a kind's JSON name and the fields its figures are written as (its
// header explains each; empty or false: the kind does not set that figure).
struct FindingKindInfo {
  std::string_view name;  // no default: a row without it does not compile
  std::string_view ns = {};
  std::string_view other_ns = {};
  std::string_view bytes = {};
  std::string_view count = {};
  std::string_view other_count = {};
  std::string_view of_count = {};
  std::string_view calls = {};
  bool rank = false;
  bool pid = false;
  bool nccl_op = false;
  bool activity = false;
  std::string_view api = {};
  bool waiting_ranks = false;
  bool activity_evidence = false;
};

inline constexpr std::array<FindingKindInfo, kFindingKindCount> kFindingKindInfo = {{
#define IDLESCOPE_FINDING(id, ...) {__VA_ARGS__},
#include "analyzer/model/findings.def"
#undef IDLESCOPE_FINDING
}};

constexpr const FindingKindInfo& InfoOf(FindingKind kind) {
  return kFindingKindInfo[static_cast<size_t>(kind)];
}

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
  Ns outlast_ns = 0;   // kCheckpointMinusSnapshot: writes outlasting the time to the next save
  Ns wait_ns = 0;      // kOverlapWithCompute: waits for slower ranks, which overlap cannot hide
  double batch_growth = 0;       // kFillTheDevice: the factor the batch grows by
  uint32_t used_devices = 0;     // kSpreadOverDevices: devices that ran kernels
  uint32_t visible_devices = 0;  // kSpreadOverDevices: those and the unused visible ones
};

}  // namespace idlescope
