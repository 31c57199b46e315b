// The exporters of `idlescope diff` (report/exporter.h): text for people, JSON for tools
// (docs/diff.md documents its schema), html: one self-contained page (diff/diff_html.cc), and
// for CI: Markdown (a job's summary page) and JUnit XML (one test case per gate).
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
std::string FormatHtmlDiff(const JobDiff& diff);
// Markdown for a CI job's summary page (GitHub's step summary, GitLab's job page): the verdict,
// the gates, the step time and the table.
std::string FormatMarkdownDiff(const JobDiff& diff);
// JUnit XML: one test case per gate, a tripped gate a failure (CI systems' test reports).
std::string FormatJunitDiff(const JobDiff& diff);
// A step time's change in words: "step time +3.2% (95% confidence interval +1.0% .. +5.1%):
// significantly slower".
std::string StepChangeText(const StepChange& change, std::string_view statistic = "step time");

}  // namespace idlescope
