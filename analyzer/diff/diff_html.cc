// `idlescope diff --format html`: the diff as one self-contained page (docs/diff.md): the gate's
// verdict, the headline figures before and after, and a before/after bar pair per cause. Reads
// the JobDiff and nothing else.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "analyzer/diff/diff_exporters.h"
#include "analyzer/report/html_page.h"
#include "analyzer/report/text_cat.h"
#include "analyzer/report/units.h"

namespace idlescope {
namespace {

std::string Relative(const DiffValue& v) {
  std::optional<double> rel = v.relative();
  if (!rel) return v.after > 0 ? "new" : "";
  return absl::StrFormat("%+.1f%%", 100 * *rel);
}

// The change's class: a time that grew is worse ("up"), one that shrank better ("down"); for
// utilizations it is the other way round.
std::string_view ChangeClass(const DiffValue& v, bool higher_is_better) {
  if (v.after == v.before) return "";
  return (v.after > v.before) != higher_is_better ? "up" : "down";
}

std::string TimeRow(std::string_view name, const DiffValue& v, const TimeUnit& unit,
                    bool higher_is_better = false) {
  std::string_view change = ChangeClass(v, higher_is_better);
  return Cat("<tr><td>", name, "</td><td class=\"n\">", Time(v.before, unit),
             "</td><td class=\"n\">", Time(v.after, unit), "</td><td class=\"n ", change, "\">",
             SignedTime(v.change(), unit), "</td><td class=\"n ", change, "\">", Relative(v),
             "</td></tr>\n");
}

std::string UtilRow(std::string_view name, const DiffValue& v) {
  return Cat("<tr><td>", name, "</td><td class=\"n\">", Percent(v.before), "</td><td class=\"n\">",
             Percent(v.after), "</td><td class=\"n ", ChangeClass(v, true), "\">",
             absl::StrFormat("%+.1f points", 100 * (v.after - v.before)), "</td><td></td></tr>\n");
}

}  // namespace

std::string FormatHtmlDiff(const JobDiff& d) {
  std::string out = HtmlPageStart("idlescope diff");
  const TimeUnit unit = TimeUnitFor(d.wall.before);
  const std::string_view per = d.normalization.per_step ? " per step" : "";
  CatTo(&out, "<h1>idlescope diff</h1>\n<p class=\"sub\">before <span class=\"mono\">",
        HtmlEscape(d.before.input), "</span>, after <span class=\"mono\">",
        HtmlEscape(d.after.input), "</span></p>\n<p class=\"sub\">",
        HtmlEscape(NormalizationText(d.normalization)), "</p>\n");

  // The verdict: the gates, or the speedup when no gate was asked for.
  out += "<h2 id=\"verdict\">Verdict</h2>\n";
  if (d.gates.empty()) {
    CatTo(&out, "<div class=\"verdict pass\">no gate set: ",
          d.speedup > 0 ? absl::StrFormat("%.2fx speedup", d.speedup) : "speedup unknown",
          "</div>\n");
  } else {
    CatTo(&out, "<div class=\"verdict ",
          d.tripped() ? "fail\">gate tripped (exit 3)" : "pass\">gates passed",
          "</div>\n<div class=\"scroll\"><table "
          "style=\"margin-top:10px\">\n<tr><th>gate</th><th>measured</th>"
          "<th>result</th></tr>\n");
    for (const GateResult& g : d.gates) {
      CatTo(&out, "<tr><td>", HtmlEscape(GateLabel(g)), "</td><td>", HtmlEscape(GateDetail(g)),
            "</td><td class=\"", g.tripped ? "up\">tripped" : "down\">passed", "</td></tr>\n");
    }
    out += "</table></div>\n";
  }

  out += "<div class=\"cards\">\n";
  auto card = [&](const std::string& value, const std::string& key) {
    CatTo(&out, "<div class=\"card\"><div class=\"v\">", HtmlEscape(value),
          "</div><div class=\"k\">", HtmlEscape(key), "</div></div>\n");
  };
  card(d.speedup > 0 ? absl::StrFormat("%.2fx", d.speedup) : "-", "speedup (before / after wall)");
  card(Cat(Time(d.wall.before, unit), " \xe2\x86\x92 ", Time(d.wall.after, unit)),
       Cat("wall time", per));
  card(Cat(Percent(d.compute_util.before), " \xe2\x86\x92 ", Percent(d.compute_util.after)),
       "compute utilization (the paper's U)");
  card(Cat(Time(d.idle.before, unit), " \xe2\x86\x92 ", Time(d.idle.after, unit)),
       Cat("idle GPU time", per));
  out += "</div>\n";

  CatTo(&out, "<h2 id=\"figures\">Before and after", per,
        "</h2>\n<div class=\"scroll\"><table>\n<tr><th></th><th class=\"n\">before</th><th "
        "class=\"n\">after</th>"
        "<th class=\"n\">change</th><th class=\"n\">relative</th></tr>\n");
  out += TimeRow("wall time", d.wall, unit);
  out += TimeRow("GPU compute busy", d.compute, unit, /*higher_is_better=*/true);
  out += TimeRow("GPU idle", d.idle, unit);
  out += UtilRow("compute utilization", d.compute_util);
  out += UtilRow("kernel active", d.kernel_active_util);
  out += "</table></div>\n";

  CatTo(&out, "<h2 id=\"causes\">Idle GPU time by cause", per,
        "</h2>\n<p class=\"sub\">upper bar: before, lower bar: after</p>\n<div "
        "class=\"scroll\"><table>\n<tr><th>cause"
        "</th><th></th><th class=\"n\">before</th><th class=\"n\">after</th><th class=\"n\">"
        "change</th><th class=\"n\">relative</th></tr>\n");
  double largest = 1;
  for (const CauseDiff& c : d.causes) largest = std::max({largest, c.idle.before, c.idle.after});
  for (const CauseDiff& c : d.causes) {
    std::string_view color = CauseColor(c.cause);
    CatTo(&out, "<tr><td><span class=\"swatch\" style=\"background:", color, "\"></span>",
          InfoOf(c.cause).name, "</td><td class=\"barcell\">",
          HtmlBar(c.idle.before / largest, color), "<br><span style=\"opacity:.55\">",
          HtmlBar(c.idle.after / largest, color), "</span></td><td class=\"n\">",
          Time(c.idle.before, unit), "</td><td class=\"n\">", Time(c.idle.after, unit),
          "</td><td class=\"n ", ChangeClass(c.idle, false), "\">",
          SignedTime(c.idle.change(), unit), "</td><td class=\"n ", ChangeClass(c.idle, false),
          "\">", Relative(c.idle), "</td></tr>\n");
  }
  out += "</table></div>\n";
  CatTo(&out, "<footer>idlescope ", IDLESCOPE_VERSION, "</footer>\n");
  out += HtmlPageEnd("<script>document.body.dataset.rendered = '1';</script>\n");
  return out;
}

}  // namespace idlescope
