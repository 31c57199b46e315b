// Credited slices: the idle time of a device as the analysis hands it to causes, one slice at a
// time, with every later correction (analysis/crediting.h credits them; docs/attribution.md,
// "Attribution of a gap, slice by slice"). What an output that places idle time in time watches
// (the HTML report's strip, the timeline exports): a SliceObserver beside the analysis, fed by the
// same read, that sees values only and never reaches into the analysis.
#pragma once

#include <cstdint>
#include <optional>

#include "analyzer/model/causes.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/vocabulary.h"

namespace idlescope {

// The event that explains a slice, as ids of its process's trace file (a SymbolSource resolves
// them).
struct SliceEvidence {
  EventClass event_class = EventClass::kNone;
  bool gpu_side = false;  // the device's own activity (an NCCL kernel, a copy), not a host call
  uint32_t process = 0;   // the job's process number (RecordSink)
  uint32_t tid = 0;
  uint64_t stack = 0;   // per-process stack id (0: none)
  uint64_t object = 0;  // per-process string id: file path, address, program, kernel name
  uint64_t bytes = 0;
};

// One credited slice of a device's idle time.
struct CreditedSlice {
  uint32_t device = 0;  // the analysis's device numbering (AnalyzedJob::device_ids)
  Interval when;
  Cause cause = Cause::kUnknown;
  // What explains it; nullopt for residual time, handed out when its gap closes and its cause
  // (startup, tail, unknown, data_loading) is known.
  std::optional<SliceEvidence> evidence = std::nullopt;
  // `when` had been handed out before as `replaces`: a late event took residual time back, or a
  // copy turned out to be a checkpoint snapshot.
  bool correction = false;
  Cause replaces = Cause::kUnknown;
  // `when` lies in a gap shorter than min_gap (SliceObserver::OnShortGap saw the gap before).
  bool in_short_gap = false;
};

class SliceObserver {
 public:
  virtual ~SliceObserver() = default;
  virtual void OnSlice(const CreditedSlice& slice) = 0;
  // A gap of `device` shorter than min_gap closed. Its time is the device's short-gap cause
  // (ShortGapCause, decided from the device's figures when the job ends), except the slices of it
  // that blocking host work explains: those come next, as OnSlice with in_short_gap.
  virtual void OnShortGap(uint32_t /*device*/, Interval /*gap*/) {}
};

}  // namespace idlescope
