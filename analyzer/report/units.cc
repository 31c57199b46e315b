#include "analyzer/report/units.h"

#include <cmath>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace idlescope {
namespace {

// "NCCL_ALL_REDUCE" -> "all_reduce" (prefix "NCCL_"); "" for the UNSPECIFIED value.
std::string EnumLabel(const std::string& proto_name, std::string_view prefix) {
  std::string_view name = proto_name;
  if (!name.starts_with(prefix) || name.ends_with("UNSPECIFIED")) return "";
  name.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(absl::string_view(name.data(), name.size()));
}

}  // namespace

std::string Seconds(int64_t ns) { return absl::StrFormat("%.3f s", static_cast<double>(ns) / 1e9); }

std::string GpuSeconds(int64_t ns) {
  return absl::StrFormat("%.3f GPU-s", static_cast<double>(ns) / 1e9);
}

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", fraction * 100); }

std::string GiB(int64_t bytes) {
  return absl::StrFormat("%.1f", static_cast<double>(bytes) / static_cast<double>(1ull << 30));
}

std::string DataSize(uint64_t bytes) {
  if (bytes < 1024) return absl::StrFormat("%d B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

TimeUnit TimeUnitFor(double reference_ns) {
  if (reference_ns >= 1e9) return {1e9, "s", 3};
  if (reference_ns >= 1e6) return {1e6, "ms", 2};
  return {1e3, "us", 1};
}

std::string Time(double ns, const TimeUnit& u) {
  return absl::StrFormat("%.*f %s", u.decimals, ns / u.ns, u.name);
}

std::string SignedTime(double ns, const TimeUnit& u) {
  return absl::StrFormat("%+.*f %s", u.decimals, ns / u.ns, u.name);
}

std::string AutoTime(double ns) { return Time(ns, TimeUnitFor(std::fabs(ns))); }

std::string SignedSecondsExact(int64_t ns) {
  const char sign = ns < 0 ? '-' : '+';
  uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  return absl::StrFormat("%c%d.%09d", sign, mag / 1000000000, mag % 1000000000);
}

std::string CompactDuration(uint64_t ns) {
  if (ns < 1000) return absl::StrFormat("%dns", ns);
  if (ns < 1000000) return absl::StrFormat("%.3fus", ns / 1e3);
  if (ns < 1000000000) return absl::StrFormat("%.3fms", ns / 1e6);
  return absl::StrFormat("%.3fs", ns / 1e9);
}

std::string FsTypeName(FsType fs) { return EnumLabel(FsType_Name(fs), "FS_"); }

std::string NcclOpName(NcclOp op) { return EnumLabel(NcclOp_Name(op), "NCCL_"); }

}  // namespace idlescope
