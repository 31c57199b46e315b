#include "analyzer/model/causes.h"

#include <algorithm>
#include <optional>

namespace idlescope {
namespace {

constexpr bool IsDimension(std::string_view d) {
  return d == "job" || d == "model" || d == "data" || d == "library" || d == "none";
}

constexpr bool IsHexDigit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// "#rrggbb", lower case: what the HTML report's style attributes and strips.js take.
constexpr bool IsColor(std::string_view c) {
  return c.size() == 7 && c[0] == '#' && std::all_of(c.begin() + 1, c.end(), IsHexDigit);
}

// A row of causes.def with every field optional, so that its check tells a field left out from
// one set to its zero (SavingMethod::kNone is a rule). The compiler keeps it in step with
// CauseInfo: a row's designators must name these fields, in this order.
struct CauseRow {
  std::optional<std::string_view> name = {};
  std::optional<std::string_view> dimension = {};
  std::optional<std::string_view> paper_category = {};
  std::optional<int> precedence = {};
  std::optional<SavingMethod> saving = {};
  std::optional<std::string_view> color = {};
  std::optional<std::string_view> fix = {};
};

// Each row of causes.def, checked where it stands: the message names the cause and its field.
// (clang-format off: its layout of this macro is not stable from one run to the next.)
// clang-format off
#define IDLESCOPE_CAUSE(id, ...)                                                              \
  static_assert(!CauseRow{__VA_ARGS__}.name.value_or("").empty(),                             \
                "causes.def: " #id " needs .name");                                           \
  static_assert(IsDimension(CauseRow{__VA_ARGS__}.dimension.value_or("")),                    \
                "causes.def: " #id " needs .dimension: job, model, data, library or none");   \
  static_assert(!CauseRow{__VA_ARGS__}.paper_category.value_or("").empty(),                   \
                "causes.def: " #id " needs .paper_category");                                 \
  static_assert(CauseRow{__VA_ARGS__}.precedence.value_or(0) >= 1 &&                          \
                    CauseRow{__VA_ARGS__}.precedence.value_or(0) <= kCauseCount,              \
                "causes.def: " #id " needs .precedence, from 1 to the number of causes");     \
  static_assert(CauseRow{__VA_ARGS__}.saving.has_value(),                                     \
                "causes.def: " #id " needs .saving (a SavingMethod)");                        \
  static_assert(CauseRow{__VA_ARGS__}.saving != SavingMethod::kSpreadOverDevices,             \
                "causes.def: " #id                                                            \
                " .saving: spread_over_devices is the job's rule for unused "                 \
                "GPUs (analysis/report_builder.cc), not a device's");                         \
  static_assert(IsColor(CauseRow{__VA_ARGS__}.color.value_or("")),                            \
                "causes.def: " #id " needs .color, \"#rrggbb\" (lower case)");                \
  static_assert(!CauseRow{__VA_ARGS__}.fix.value_or("").empty(),                              \
                "causes.def: " #id " needs .fix");
// clang-format on
#include "analyzer/model/causes.def"
#undef IDLESCOPE_CAUSE

// What no single row can say: names, colours and precedences are each the cause's own.
template <typename Field>
constexpr bool Distinct(Field field) {
  for (size_t i = 0; i < kCauseInfo.size(); ++i) {
    for (size_t j = i + 1; j < kCauseInfo.size(); ++j) {
      if (kCauseInfo[i].*field == kCauseInfo[j].*field) return false;
    }
  }
  return true;
}
static_assert(Distinct(&CauseInfo::name), "causes.def: two causes have the same .name");
static_assert(Distinct(&CauseInfo::color),
              "causes.def: two causes have the same .color (the HTML report could not tell them "
              "apart)");
static_assert(Distinct(&CauseInfo::precedence),
              "causes.def: two causes have the same .precedence (which one wins a slice?)");

}  // namespace

std::optional<Cause> CauseByName(std::string_view name) {
  for (Cause cause : kAllCauses) {
    if (InfoOf(cause).name == name) return cause;
  }
  return std::nullopt;
}

Cause ShortGapCause(double compute_util, int64_t peak_memory, uint64_t total_memory) {
  if (compute_util > 0.5 || total_memory == 0 || peak_memory <= 0) return Cause::kLaunchBound;
  double memory = static_cast<double>(peak_memory) / static_cast<double>(total_memory);
  if (memory > 0.8) return Cause::kInsufficientMemory;
  if (memory <= 0.5) return Cause::kSmallBatch;
  return Cause::kLaunchBound;
}

}  // namespace idlescope
