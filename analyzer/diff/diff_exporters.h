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
std::string FormatJsonDiff(const JobDiff& diff);

}  // namespace idlescope
