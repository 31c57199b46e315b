// The offsets the recorder reads CPython's frames with (interpose/python/layout.cc) are those of
// each installed interpreter's own headers: layout_probe.c, compiled against every CPython
// 3.10-3.13 found (pyenv's, Debian's), prints them; for 3.13 it also prints _PyRuntime's
// _Py_DebugOffsets bytes, which the recorder parses instead of a table.
#include "interpose/python/layout.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "tests/python/python_test_support.h"

namespace idlescope::testing {
namespace {

std::string ProbePath(const std::string& label) {
  for (absl::string_view entry : absl::StrSplit(IDLESCOPE_LAYOUT_PROBES, ';', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    if (kv.first == label) return kv.second;
  }
  return "";
}

class LayoutTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LayoutTest, TablesMatchTheInterpretersHeaders) {
  const std::string probe = ProbePath(GetParam());
  if (probe.empty()) {
    GTEST_SKIP() << "no headers of CPython " << GetParam() << " on this machine: skipped";
  }
  int status = 0;
  std::string out = RunCapture("'" + probe + "'", &status);
  ASSERT_EQ(status, 0) << probe;
  std::map<std::string, int64_t> field;
  std::string debug_offsets;
  std::istringstream lines(out);
  std::string key, value;
  while (lines >> key >> value) {
    if (key == "debug_offsets") {
      debug_offsets = value;
    } else {
      field[key] = std::stoll(value);
    }
  }
  ASSERT_EQ(field["major"], 3);
  python::Layout l;
  if (field["minor"] >= 13) {
    ASSERT_FALSE(debug_offsets.empty());
    std::string bytes = absl::HexStringToBytes(debug_offsets);
    const char* why = "";
    ASSERT_TRUE(python::DebugOffsetsLayout(reinterpret_cast<const uint8_t*>(bytes.data()),
                                           bytes.size(), field["py_version"], &l, &why))
        << why;
  } else {
    ASSERT_TRUE(python::TableLayout(static_cast<uint32_t>(field["minor"]), &l));
  }
  EXPECT_EQ(l.minor, field["minor"]);
#define EXPECT_FIELD(name) EXPECT_EQ(static_cast<int64_t>(l.name), field.at(#name)) << #name
  EXPECT_FIELD(tstate_thread_id);
  EXPECT_FIELD(tstate_native_thread_id);
  EXPECT_FIELD(tstate_frame);
  EXPECT_FIELD(cframe_current_frame);
  EXPECT_FIELD(frame_previous);
  EXPECT_FIELD(frame_code);
  EXPECT_FIELD(frame_instr);
  EXPECT_FIELD(frame_owner);
  EXPECT_FIELD(frame_is_entry);
  EXPECT_FIELD(code_filename);
  EXPECT_FIELD(code_name);
  EXPECT_FIELD(code_firstlineno);
  EXPECT_FIELD(code_linetable);
  EXPECT_FIELD(code_adaptive);
  EXPECT_FIELD(code_firsttraceable);
  EXPECT_FIELD(ob_type);
  EXPECT_FIELD(unicode_state);
  EXPECT_FIELD(unicode_length);
  EXPECT_FIELD(unicode_ascii_size);
  EXPECT_FIELD(unicode_compact_size);
  EXPECT_FIELD(bytes_size);
  EXPECT_FIELD(bytes_data);
#undef EXPECT_FIELD
}

TEST(LayoutTest, VersionsWithoutATableAreRefused) {
  python::Layout l;
  EXPECT_FALSE(python::TableLayout(9, &l));
  EXPECT_FALSE(python::TableLayout(13, &l));  // read from _Py_DebugOffsets
  EXPECT_FALSE(python::TableLayout(14, &l));
  const char* why = "";
  uint8_t zeros[4096] = {};
  EXPECT_FALSE(python::DebugOffsetsLayout(zeros, sizeof(zeros), 0x030D00F0, &l, &why));
  EXPECT_NE(std::string(why).find("_Py_DebugOffsets"), std::string::npos) << why;
}

INSTANTIATE_TEST_SUITE_P(Interpreters, LayoutTest, ::testing::ValuesIn(InterpreterLabels()),
                         [](const auto& info) { return InterpreterTestName(info.param); });

}  // namespace
}  // namespace idlescope::testing
