// The exporters of `idlescope diff` (report/exporter.h): text for people, JSON for tools
// (docs/diff.md documents its schema).
#pragma once

#include <string>
#include <string_view>

#include "analyzer/diff/diff.h"
#include "analyzer/report/exporter.h"

namespace idlescope {

// nullptr when no exporter has this name.
const Exporter<JobDiff>* FindDiffExporter(std::string_view name);
// The names, for usage lines and errors: "text, json".
std::string DiffExporterNames();

std::string FormatTextDiff(const JobDiff& diff);

// The words: how the runs were normalized ("per step: steps = launches of the most frequent
// kernel gemm: 400 before, 100 after"), a gate ("fail-if-slower 5%") and what it measured
// ("wall time per step +3.2%").
std::string NormalizationText(const Normalization& normalization);
std::string GateLabel(const GateResult& gate);
std::string GateDetail(const GateResult& gate);
std::string FormatJsonDiff(const JobDiff& diff);

}  // namespace idlescope
