// The HTML report draws each cause in its own colour, the one its row of
// analyzer/model/causes.def gives: in the strip's states (html/strips.js draws state 1 + the
// cause's index), the timeline's legend and the chart of causes. A table of colours kept beside
// the cause list once gave 11 causes their neighbour's colour without any test noticing.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "analyzer/model/causes.h"
#include "analyzer/report/html_page.h"
#include "analyzer/report/html_report.h"

namespace idlescope {
namespace {

// A report in which every cause has idle time, its strip buckets empty.
JobReport EveryCause() {
  JobReport r;
  r.span = 1'000'000'000;
  r.gpu_time = r.span;
  Ns ns = 1'000'000;
  for (Cause c : kAllCauses) {
    CauseReport& cause = r.causes.emplace_back();
    cause.cause = c;
    cause.ns = ns;
    ns += 1'000'000;
  }
  return r;
}

TEST(HtmlColors, EachCauseIsDrawnInItsOwnColourFromTheCauseList) {
  const JobReport report = EveryCause();
  const std::string page = FormatHtmlReport(report, JobStrips{});
  size_t state = page.find("\"states\":[");
  ASSERT_NE(state, std::string::npos);
  std::set<std::string_view> colors = {kBusyColor};
  for (Cause c : kAllCauses) {
    const CauseInfo& info = InfoOf(c);
    EXPECT_TRUE(colors.insert(info.color).second) << info.name << " shares its colour";
    // The strip's state 1 + Index(c), in order after busy and the causes before it.
    const std::string entry = "{\"name\":\"" + std::string(info.name) + "\",\"color\":\"" +
                              std::string(info.color) + "\"}";
    size_t at = page.find(entry, state);
    EXPECT_NE(at, std::string::npos) << entry;
    if (at != std::string::npos) state = at;
    // The legend and the chart of causes.
    const std::string swatch = "background:" + std::string(info.color) + "\"></span>";
    EXPECT_NE(page.find(swatch + std::string(info.name) + "</span>"), std::string::npos)
        << info.name << ": legend";
    EXPECT_NE(page.find(swatch + "<a href=\"#cause-" + std::string(info.name) + "\">"),
              std::string::npos)
        << info.name << ": chart";
  }
}

}  // namespace
}  // namespace idlescope
