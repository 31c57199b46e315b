// Warnings of a report as data: what went wrong while reading or analyzing, with its figures.
// Exporters word them (report/findings_text.h); none of them is fatal.
#pragma once

#include <cstdint>
#include <string>

#include "analyzer/model/job_model.h"

namespace idlescope {

enum class WarningKind : uint8_t {
  // Read stage; `subject` is the trace file's path.
  kTraceCut,          // the file ends in a cut or corrupt packet: tail (TailProblem), tail_detail,
                      // count = bytes dropped, other_count = the offset where the good data ends
  kNoFooter,          // no footer: the process was killed, crashed, or is still running
  kUndefinedCommIds,  // count: NCCL events naming a communicator id the file never defines
  kUnknownFields,     // count: unknown fields ignored (a newer recorder)
  kDroppedRecords,    // count: host events, other_count: GPU records dropped while recording
  kRecorderNotice,    // code, text: a recorder notice of severity WARNING or above, as written
  kSkippedFile,       // text: why a file of a directory was skipped (empty, not a trace, ...)
  // Analysis; `subject` is the device id where there is one.
  kLaunchesWithoutGpuRecords,  // count: kernel launches on a device with no GPU activity
  kLateGpuRecords,             // count: GPU records that arrived after their time was analyzed;
                               // ns: the busy time dropped with them
  kIncompleteCollectives,      // count: NCCL collectives missing ranks; other_count: processes
                               // that died (rank_died: what the collectives missed)
  kForgottenCandidates,        // count: events of processes that never used a GPU, forgotten
  kLateCandidates,             // count: events more than 10 min late, only partly used
};

struct ReportWarning {
  WarningKind kind = WarningKind::kNoFooter;
  std::string subject = {};  // file path or device id ("" for job-wide warnings)
  uint64_t count = 0;
  uint64_t other_count = 0;
  Ns ns = 0;
  int tail = 0;                  // kTraceCut: the TailProblem (analyzer/trace/trace_reader.h)
  std::string tail_detail = {};  // kTraceCut: the reader's detail (e.g. the length prefix)
  std::string code = {};         // kRecorderNotice
  std::string text = {};         // kRecorderNotice: the recorder's own words; kSkippedFile: why
};

}  // namespace idlescope
