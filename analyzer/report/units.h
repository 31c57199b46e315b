// The unit formatters every output of idlescope uses (report, diff, dump): one place that says how
// a duration, a share or an amount of memory is printed, so the same figure reads the same in
// every exporter.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trace.pb.h"

namespace idlescope {

// 0.123456789 s as "0.123 s" (the report's unit: every time of `idlescope report` is in it).
std::string Seconds(int64_t ns);
// GPU time (device-seconds, summed over devices: idle time, savings) as "4.467 GPU-s", so that a
// page does not read it as the job's wall time ("4.467 s" saved of a 2.652 s job).
std::string GpuSeconds(int64_t ns);
// 0.1234 as "12.3%".
std::string Percent(double fraction);
// Bytes as GiB with one decimal, no unit: "79.6".
std::string GiB(int64_t bytes);
// An amount of data in the binary unit that fits it: "512 B", "4.0 KiB", "100.0 MiB", "1.5 GiB".
std::string DataSize(uint64_t bytes);

// Times of one table of `idlescope diff`: one unit for the whole table, picked by the size of a
// reference figure (BEFORE's wall time, per step or per run).
struct TimeUnit {
  double ns;
  const char* name;
  int decimals;
};
TimeUnit TimeUnitFor(double reference_ns);
std::string Time(double ns, const TimeUnit& unit);        // "12.34 ms"
std::string SignedTime(double ns, const TimeUnit& unit);  // "+12.34 ms"
// One figure on its own, in the unit that fits it.
std::string AutoTime(double ns);

// `idlescope dump`: ns as signed seconds with full precision, "+1.234567890".
std::string SignedSecondsExact(int64_t ns);
// `idlescope dump`: a duration in its own unit, "812ns", "3.250us", "1.500ms", "2.000s".
std::string CompactDuration(uint64_t ns);

// Enum values of the trace format by their proto names, lower case and without the enum's
// prefix: FS_OTHER_REMOTE -> "other_remote", NCCL_ALL_REDUCE -> "all_reduce". "" for the
// UNSPECIFIED value (and for a value this build does not know).
std::string FsTypeName(FsType fs);
std::string NcclOpName(NcclOp op);

}  // namespace idlescope
