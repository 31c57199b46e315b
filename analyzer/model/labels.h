// The names things of a report are shown by: one definition for every exporter, and for the
// analysis where it orders equal figures by name (ties then come out as the reader sees them).
#pragma once

#include <string>
#include <string_view>

#include "analyzer/model/job_model.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/report_symbols.h"

namespace idlescope {

// A stack as it reads: its first user frame, if it has one, before its frames
// ("/w/train.py:42 in train_step [write <- _Py_write <- ...]"), else its label
// (ReportSymbols::StackLabel); "" for id 0.
std::string StackText(StackId id, const ReportSymbols& symbols);

// The same as the text report prints it: the first user frame, then the stack's short label
// (ReportSymbols::ShortStackLabel): "mixed.cu:43 in load_batch <- mixed.cu:115 in train".
std::string ShortStackText(StackId id, const ReportSymbols& symbols);

// A stack (StackText), a string, a directory ("?" when unnamed), a host
// activity item ("reads: /data/x"), or what an unresolved id was ("stack #7 of process 0").
std::string EvidenceLabel(const EvidenceItem& item, const ReportSymbols& symbols);
// EvidenceLabel as the text report prints it: a stack by its ShortStackText.
std::string EvidenceText(const EvidenceItem& item, const ReportSymbols& symbols);

// How a host's clock was aligned, as the text and JSON reports name it ("reference",
// "collectives", "realtime").
std::string_view ClockMethodName(ClockMethod method);

// How a process ended, as its death is named: "SIGSEGV" (a signal), "exit status 1", or
// "no trace end" (no footer: killed with SIGKILL, or lost).
std::string ProcessEndHow(const ProcessEnd& end);
// Who died and how, the object of a rank_died slice: "rank 1 (pid 4242) died of SIGSEGV",
// "pid 4242 failed with exit status 1", "rank 0 (pid 4242) ended without its trace end".
std::string DeathLabel(const ProcessInfo& info);

// A host activity item's name: "(unnamed)" for an item whose calls named nothing.
std::string_view ItemLabel(StringId what, const ReportSymbols& symbols);

}  // namespace idlescope
