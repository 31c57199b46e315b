// The root causes idlescope attributes GPU idle time to: the enum Cause and one row of facts per
// cause (its name, the paper's dimension and category, its precedence, saving rule, colour and
// fix), both generated from the one list in model/causes.def. The rules that classify a host
// event into a cause are in analysis/event_classes.h; docs/attribution.md explains every cause
// and rule.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "analyzer/model/vocabulary.h"

namespace idlescope {

// In the order of causes.def: the order of the report's tables. Nothing else may rest on it
// (precedence is the `precedence` column).
enum class Cause : uint8_t {
#define IDLESCOPE_CAUSE(id, ...) id,
#include "analyzer/model/causes.def"
#undef IDLESCOPE_CAUSE
};

inline constexpr int kCauseCount = 0
#define IDLESCOPE_CAUSE(id, ...) +1
#include "analyzer/model/causes.def"
#undef IDLESCOPE_CAUSE
    ;

// One row of causes.def (its header explains every field). No field has a default: a row that
// leaves one out does not compile (model/causes.cc).
struct CauseInfo {
  std::string_view name;
  std::string_view dimension;
  std::string_view paper_category;
  int precedence;
  SavingMethod saving;
  std::string_view color;
  std::string_view fix;
};

inline constexpr std::array<CauseInfo, kCauseCount> kCauseInfo = {{
#define IDLESCOPE_CAUSE(id, ...) {__VA_ARGS__},
#include "analyzer/model/causes.def"
#undef IDLESCOPE_CAUSE
}};

// Every cause, in list order: `for (Cause c : kAllCauses)`.
inline constexpr std::array<Cause, kCauseCount> kAllCauses = {
#define IDLESCOPE_CAUSE(id, ...) Cause::id,
#include "analyzer/model/causes.def"
#undef IDLESCOPE_CAUSE
};

constexpr int Index(Cause cause) { return static_cast<int>(cause); }
constexpr const CauseInfo& InfoOf(Cause cause) { return kCauseInfo[Index(cause)]; }

// The cause called `name` (CauseInfo::name); nullopt when none is.
std::optional<Cause> CauseByName(std::string_view name);

// The idle time in gaps shorter than --min-gap, by the paper's thresholds on the device's compute
// utilization U and peak memory M of its total: U <= 50% and M > 80% is insufficient_memory, U <=
// 50% and M <= 50% small_batch, anything else (or memory unknown) launch_bound. Here and not in
// the analysis: the HTML strip places a device's short gaps by the same rule (a DeviceReport's
// figures).
Cause ShortGapCause(double compute_util, int64_t peak_memory, uint64_t total_memory);

}  // namespace idlescope
