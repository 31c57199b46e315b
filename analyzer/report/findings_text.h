// The words of the report: every sentence idlescope prints about a finding, a saving, the event
// behind a gap and a warning, from the typed report model. Used by the text and HTML exporters
// (the JSON exporter writes the figures, not the words).
#pragma once

#include <string>

#include "analyzer/model/job_report.h"

namespace idlescope {

// "0.100 s in pageable copies, 0.000 s in pinned or device copies". The report is needed for
// findings that point into it (a host activity kind's heaviest item, the worker processes).
std::string FindingText(const Finding& finding, const JobReport& report);

// "pageable copy time minus the same bytes at the pinned bandwidth (12.00 GB/s, assumed: ...)".
std::string SavingBasisText(Cause cause, const SavingBasis& basis);

// "checkpointing: /ckpt/model.pt, 1048576 bytes at save <- train (pid 100 tid 100)", the stack
// as the text report prints it (ShortStackText).
// `width` > 0: the stack cut with "..." so that the text is at most that wide (the pid stays).
std::string GapEvidenceText(const GapEvidence& evidence, const ReportSymbols& symbols,
                            size_t width = 0);

// "run/host-1.idlescope: no footer (the process was killed, crashed, or is still running)".
std::string WarningText(const ReportWarning& warning);

}  // namespace idlescope
