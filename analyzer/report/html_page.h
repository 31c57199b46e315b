// The pieces every HTML page of idlescope shares (the report's, report/html_report.h, and the
// diff's, diff/diff_html.cc): one self-contained file that opens from a laptop after being copied
// off a cluster, so no script, style, font or image comes from anywhere but the page itself.
#pragma once

#include <string>
#include <string_view>

#include "analyzer/model/causes.h"

namespace idlescope {

// `text` with & < > " ' escaped, for element content and attribute values (and a byte that is
// not UTF-8 as U+FFFD, ValidUtf8).
std::string HtmlEscape(std::string_view text);

// "<!doctype html>...<body><main>" with the page's inline style sheet.
std::string HtmlPageStart(std::string_view title);
// "</main>...</html>", with `scripts` (inline <script> elements) before the end of the body.
std::string HtmlPageEnd(std::string_view scripts);

// The colour a cause is drawn in (the strip, the charts, the findings' borders), "#rrggbb": its
// `color` in model/causes.def. kBusyColor for a device's busy time (kernels, and gaps shorter
// than --min-gap).
constexpr std::string_view CauseColor(Cause cause) { return InfoOf(cause).color; }
inline constexpr std::string_view kBusyColor = "#9cc5a1";

// A horizontal bar chart row: a bar of `fraction` of its cell's width in `color` (the cell's
// class is "barcell": a share of the table's width, so that a narrow window has no fixed-width
// bar to scroll to).
std::string HtmlBar(double fraction, std::string_view color);

}  // namespace idlescope
