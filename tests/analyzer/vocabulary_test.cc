// The vocabularies (analyzer/model/causes.def, findings.def) against what is generated from them
// and what documents them: every cause and finding kind as the JSON report writes it, every
// cause's saving rule, and the docs' tables (docs/attribution.md "Causes" and "Tiers and
// precedence", docs/report-json.md "Findings"). The compile-time checks of each row are in
// analyzer/model/causes.cc and findings.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/analysis/savings.h"
#include "analyzer/model/causes.h"
#include "analyzer/model/findings.h"
#include "analyzer/report/report_exporters.h"
#include "analyzer/shard/summary.h"

namespace idlescope {
namespace {

std::string ReadDoc(const std::string& name) {
  std::ifstream in(std::string(IDLESCOPE_SOURCE_DIR) + "/docs/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text of `doc` from the heading `heading` to the next heading of its level or above.
std::string Section(const std::string& doc, const std::string& heading) {
  size_t start = doc.find("\n" + heading + "\n");
  if (start == std::string::npos) return "";
  const std::string level = heading.substr(0, heading.find(' ') + 1);
  size_t end = start + heading.size() + 1;
  for (;;) {
    end = doc.find("\n#", end + 1);
    if (end == std::string::npos) break;
    size_t hashes = doc.find_first_not_of('#', end + 1) - (end + 1);
    if (hashes <= level.size() - 1) break;
  }
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The cells of the table row of `section` whose first cell is `first` ("" when there is none).
std::vector<std::string> Row(const std::string& section, const std::string& first) {
  std::istringstream lines(section);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("| " + first + " |")) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        cells.push_back(cell.substr(1, cell.size() - 2));
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    return cells;
  }
  return {};
}

TEST(CauseList, EveryCauseIsARowOfTheDocsTableWithItsCategoryAndDimension) {
  const std::string causes = Section(ReadDoc("attribution.md"), "## Causes");
  ASSERT_FALSE(causes.empty());
  size_t rows = 0;
  for (Cause c : kAllCauses) {
    const CauseInfo& info = InfoOf(c);
    std::vector<std::string> row = Row(causes, std::string(info.name));
    ASSERT_GE(row.size(), 4u) << "docs/attribution.md, Causes: no row for " << info.name;
    EXPECT_EQ(row[1], info.paper_category) << info.name;
    EXPECT_EQ(row[2], info.dimension) << info.name;
    ++rows;
  }
  // And no row for a cause that is not in the list (the header's first cell is "cause").
  std::regex row("\n\\| ([a-z_]+) \\|");
  size_t documented = 0;
  for (auto it = std::sregex_iterator(causes.begin(), causes.end(), row);
       it != std::sregex_iterator(); ++it) {
    documented += (*it)[1] != "cause";
  }
  EXPECT_EQ(documented, rows);
}

TEST(CauseList, DocumentedPrecedenceIsThePrecedenceOfTheCausesEventsHave) {
  const std::string tiers = Section(ReadDoc("attribution.md"), "### Tiers and precedence");
  std::smatch list;
  ASSERT_TRUE(
      std::regex_search(tiers, list, std::regex("1\\. signal_handler[^\\n]*(\\n[^\\n]+)*")));
  std::vector<std::string> documented;
  const std::string text = list.str();
  std::regex item("(\\d+)\\. ([a-z_]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), item); it != std::sregex_iterator();
       ++it) {
    EXPECT_EQ(std::stoul((*it)[1]), documented.size() + 1) << text;
    documented.push_back((*it)[2]);
  }
  // The causes events have: those before `unknown`, the first that no event has (causes.def).
  std::vector<Cause> by_precedence(kAllCauses.begin(), kAllCauses.end());
  std::sort(by_precedence.begin(), by_precedence.end(),
            [](Cause a, Cause b) { return InfoOf(a).precedence < InfoOf(b).precedence; });
  std::vector<std::string> events;
  for (Cause c : by_precedence) {
    if (InfoOf(c).precedence >= InfoOf(Cause::kUnknown).precedence) break;
    events.emplace_back(InfoOf(c).name);
  }
  EXPECT_EQ(documented, events);
}

TEST(CauseList, EachCausesSavingIsTheRuleItsRowNames) {
  // A device whose kernels half fill it: FillTheDevice applies (not its fallback, Half).
  const DeviceWork work{
      .compute_ns = 1'000'000, .small_kernel_ns = 1'000'000, .small_kernel_fill = 0.5};
  const CauseTotals totals;
  for (Cause c : kAllCauses) {
    Saving s = EstimateSaving(c, 1'000'000, totals, CopyRates{}, work);
    EXPECT_EQ(s.basis.method, InfoOf(c).saving) << InfoOf(c).name;
  }
}

// The JSON fields a finding kind's row says it is written with.
std::set<std::string> DeclaredFields(const FindingKindInfo& k) {
  std::set<std::string> fields = {"kind"};
  for (std::string_view name :
       {k.ns, k.other_ns, k.bytes, k.count, k.other_count, k.of_count, k.calls, k.api}) {
    if (!name.empty()) fields.emplace(name);
  }
  if (k.rank) fields.insert("rank");
  if (k.pid) fields.insert("pid");
  if (k.nccl_op) fields.insert("op");
  if (k.activity) fields.insert("activity");
  if (k.waiting_ranks) fields.insert({"first_waiting_rank", "last_waiting_rank"});
  if (k.activity_evidence) fields.insert({"activity_cause", "stack_id", "object"});
  return fields;
}

TEST(FindingList, JsonWritesEachKindWithTheFieldsItsRowNames) {
  for (int i = 0; i < kFindingKindCount; ++i) {
    const FindingKind kind = static_cast<FindingKind>(i);
    const FindingKindInfo& info = InfoOf(kind);
    JobReport report;
    CauseReport& cause = report.causes.emplace_back();
    cause.cause = Cause::kCommunication;
    cause.ns = 1;
    cause.findings.push_back({.kind = kind});
    const std::string json = FormatJsonReport(report);
    // The finding's object: from its "kind" to its closing brace, one field per line.
    size_t at = json.find("\"kind\": \"" + std::string(info.name) + "\"");
    ASSERT_NE(at, std::string::npos) << info.name << "\n" << json;
    size_t end = json.find('}', at);
    size_t start = json.rfind('{', at);
    const std::string object = json.substr(start, end - start);
    std::set<std::string> written;
    std::regex key("\"([a-z_]+)\": ");
    for (auto it = std::sregex_iterator(object.begin(), object.end(), key);
         it != std::sregex_iterator(); ++it) {
      written.insert((*it)[1]);
    }
    EXPECT_EQ(written, DeclaredFields(info)) << info.name;
  }
}

TEST(FindingList, EveryKindIsARowOfTheDocsTableNamingItsFields) {
  const std::string findings = Section(ReadDoc("report-json.md"), "### Findings");
  ASSERT_FALSE(findings.empty());
  for (int i = 0; i < kFindingKindCount; ++i) {
    const FindingKindInfo& info = InfoOf(static_cast<FindingKind>(i));
    std::vector<std::string> row = Row(findings, "`" + std::string(info.name) + "`");
    ASSERT_EQ(row.size(), 3u) << "docs/report-json.md, Findings: no row for " << info.name;
    for (const std::string& field : DeclaredFields(info)) {
      if (field == "kind") continue;
      EXPECT_NE(row[2].find("`" + field + "`"), std::string::npos)
          << info.name << ": `" << field << "` is not documented";
    }
  }
}

// A shard's summary carries its cause list: its by-cause fields are read only by an idlescope
// with the same list, never shifted by a cause added or moved in between.
TEST(SummaryCauses, AreTheWritersListAndTheMergeRefusesAnother) {
  shard::Summary summary;
  for (Cause c : kAllCauses) summary.add_causes(std::string(InfoOf(c).name));
  EXPECT_TRUE(CheckCauses(summary).ok());
  summary.mutable_causes()->SwapElements(0, 1);
  EXPECT_FALSE(CheckCauses(summary).ok());
  summary.mutable_causes()->SwapElements(0, 1);
  summary.add_causes("cpu_preprocessing");
  absl::Status refused = CheckCauses(summary);
  EXPECT_NE(refused.message().find("another list of causes"), std::string_view::npos)
      << refused.message();
}

}  // namespace
}  // namespace idlescope
