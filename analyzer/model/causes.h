// The root causes idlescope attributes GPU idle time to, mapped to the taxonomy of Gao et al.,
// "An Empirical Study on Low GPU Utilization of Deep Learning Jobs" (ICSE'24): one table of
// names, dimensions, paper categories and fixes. The rules that classify a host event into a
// cause are in analysis/event_classes.h; docs/attribution.md explains every cause and rule.
#pragma once

#include <cstdint>
#include <string_view>

namespace idlescope {

// Order matters twice: the event causes come first, in precedence order (when two events of the
// same tier overlap a slice, the one whose cause comes first wins; docs/attribution.md says why),
// and the numeric order is the order of the report's tables.
enum class Cause : uint8_t {
  // Causes found from what a thread was blocked in (or what the GPU ran) during a gap.
  kHostGpuTransfer,
  kCommunication,
  kCheckpointing,
  kIntermediateUpload,
  kDataLoading,
  kExternalDownload,
  kLibraryInstallation,
  kInteractive,
  kSynchronization,
  // Causes of the idle time between kernels that is too short to slice (< --min-gap).
  kSmallBatch,
  kInsufficientMemory,
  kLaunchBound,
  // Residual idle time of a gap that no event explains, by where the gap lies.
  kStartup,
  kTail,
  kUnknown,
  // Whole devices.
  kUnusedGpus,
  kNoGpuWork,
};
inline constexpr int kCauseCount = static_cast<int>(Cause::kNoGpuWork) + 1;

struct CauseInfo {
  std::string_view name;            // stable identifier, used in --json
  std::string_view dimension;       // the paper's dimension: job, model, data, library, none
  std::string_view paper_category;  // the paper's root cause this maps to
  std::string_view fix;             // what to change
};

const CauseInfo& InfoOf(Cause cause);
inline int Index(Cause cause) { return static_cast<int>(cause); }

}  // namespace idlescope
