// Lines from copied line tables (interpose/python/line_table.cc) are the lines CPython itself gives
// each instruction: every CPython 3.10-3.13 found prints the tables of ~800 code objects with
// co_lines() for every code unit (programs/dump_line_tables.py), and each unit is compared. Plus
// the formats' edge cases on hand-made tables.
#include "interpose/python/line_table.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "tests/python/python_test_support.h"

namespace idlescope::testing {
namespace {

using python::LineForOffset;
using python::LineTableFormat;

class LineTableTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LineTableTest, EveryInstructionGetsCPythonsLine) {
  const std::string python = InterpreterPath(GetParam());
  if (python.empty())
    GTEST_SKIP() << "CPython " << GetParam() << " is not on this machine: skipped";
  int status = 0;
  std::string out = RunCapture("'" + python + "' '" + DUMP_LINE_TABLES_PY + "'", &status);
  ASSERT_EQ(status, 0);
  std::istringstream in(out);
  std::string word;
  int major = 0, minor = 0;
  ASSERT_TRUE(in >> word >> major >> minor);
  ASSERT_EQ(word, "version");
  const LineTableFormat format =
      minor == 10 ? LineTableFormat::kPairs310 : LineTableFormat::kLocations311;
  size_t codes = 0, units_checked = 0, mismatches = 0;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream code_line(line);
    int first_line = 0;
    size_t units = 0;
    std::string hex;
    ASSERT_TRUE(code_line >> word >> first_line >> units) << line;
    ASSERT_EQ(word, "code");
    code_line >> hex;  // empty for a code object without lines
    const std::string table = absl::HexStringToBytes(hex);
    ASSERT_TRUE(std::getline(in, line));
    std::istringstream lines_line(line);
    ASSERT_TRUE(lines_line >> word);
    ASSERT_EQ(word, "lines");
    const auto* bytes = reinterpret_cast<const uint8_t*>(table.data());
    for (size_t unit = 0; unit < units; ++unit) {
      int expected = 0;
      ASSERT_TRUE(lines_line >> expected);
      int got = LineForOffset(format, bytes, table.size(), first_line, static_cast<int64_t>(unit));
      if (got != expected && ++mismatches <= 10) {
        ADD_FAILURE() << "code starting at line " << first_line << ", unit " << unit
                      << ": expected line " << expected << ", got " << got;
      }
      ++units_checked;
    }
    // Not started yet: the first line.
    EXPECT_EQ(LineForOffset(format, bytes, table.size(), first_line, -1), first_line);
    ++codes;
  }
  EXPECT_GT(codes, 500u);
  EXPECT_GT(units_checked, 20000u);
  EXPECT_EQ(mismatches, 0u);
}

INSTANTIATE_TEST_SUITE_P(Interpreters, LineTableTest, ::testing::ValuesIn(InterpreterLabels()),
                         [](const auto& info) { return InterpreterTestName(info.param); });

TEST(LineTable, Pairs310) {
  // (bytes, line delta): 4 bytes at +0, 6 bytes at +2, 2 bytes with no line, 4 bytes at -1.
  const uint8_t table[] = {4, 0, 6, 2, 2, 0x80, 4, 0xFF};
  EXPECT_EQ(LineForOffset(LineTableFormat::kPairs310, table, sizeof(table), 10, 0), 10);
  EXPECT_EQ(LineForOffset(LineTableFormat::kPairs310, table, sizeof(table), 10, 1), 10);
  EXPECT_EQ(LineForOffset(LineTableFormat::kPairs310, table, sizeof(table), 10, 2), 12);
  EXPECT_EQ(LineForOffset(LineTableFormat::kPairs310, table, sizeof(table), 10, 4), 12);
  EXPECT_EQ(LineForOffset(LineTableFormat::kPairs310, table, sizeof(table), 10, 5), -1);
  EXPECT_EQ(LineForOffset(LineTableFormat::kPairs310, table, sizeof(table), 10, 6), 11);
  EXPECT_EQ(LineForOffset(LineTableFormat::kPairs310, table, sizeof(table), 10, 8), -1);  // past
  EXPECT_EQ(LineForOffset(LineTableFormat::kPairs310, table, 0, 10, 0), -1);
}

TEST(LineTable, Locations311) {
  // Short form (same line, 2 units), one-line form +2 (1 unit, 2 column bytes), no-columns -3
  // (svarint 7: 3 units), long form +100 (varint chunks: 200 = 8 | 3 << 6 -> 0x48 0x03; then end
  // line delta, columns), no location (1 unit).
  const uint8_t table[] = {0x80 | (0 << 3) | 1,
                           0x05,
                           0x80 | (12 << 3) | 0,
                           4,
                           9,
                           0x80 | (13 << 3) | 2,
                           7,
                           0x80 | (14 << 3) | 0,
                           0x48,
                           0x03,
                           0,
                           1,
                           5,
                           0x80 | (15 << 3) | 0};
  const size_t n = sizeof(table);
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, table, n, 20, 0), 20);
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, table, n, 20, 1), 20);
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, table, n, 20, 2), 22);
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, table, n, 20, 3), 19);
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, table, n, 20, 5), 19);
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, table, n, 20, 6), 119);
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, table, n, 20, 7), -1);
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, table, n, 20, 8), -1);  // past the end
  // A table cut inside a varint ends there.
  EXPECT_EQ(LineForOffset(LineTableFormat::kLocations311, table, 9, 20, 6), 20 + 2 - 3 + 4);
}

}  // namespace
}  // namespace idlescope::testing
