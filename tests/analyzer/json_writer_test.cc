// Every JSON idlescope writes is UTF-8 (RFC 8259) whatever bytes the program's names hold: a
// byte that is not part of well-formed UTF-8 becomes U+FFFD, the rest is copied or escaped.
#include "analyzer/report/json_writer.h"

#include <gtest/gtest.h>

#include <string>

namespace idlescope::testing {
namespace {

std::string Json(std::string_view s, bool in_script = false) {
  std::string out;
  AppendJsonString(&out, s, in_script);
  return out;
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Json("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Json("l1\nl2\tx\x01"), "\"l1\\nl2\\tx\\u0001\"");
  EXPECT_EQ(Json("</script>&"), "\"</script>&\"");
  EXPECT_EQ(Json("</script>&", /*in_script=*/true), "\"\\u003c/script\\u003e\\u0026\"");
}

TEST(JsonString, KeepsWellFormedUtf8) {
  // 2, 3 and 4 byte sequences, the highest code point and the last before the surrogates.
  std::string text = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80 \xf4\x8f\xbf\xbf \xed\x9f\xbf";
  EXPECT_EQ(Json(text), "\"" + text + "\"");
  EXPECT_EQ(ValidUtf8(text), text);
}

TEST(JsonString, ALatin1ByteOfAFileNameBecomesTheReplacementCharacter) {
  EXPECT_EQ(Json("caf\xe9-0.bin"), "\"caf\xef\xbf\xbd-0.bin\"");
  EXPECT_EQ(ValidUtf8("caf\xe9-0.bin"), "caf\xef\xbf\xbd-0.bin");
}

TEST(JsonString, IllFormedSequencesLoseOnlyTheirBadBytes) {
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(ValidUtf8("\xc0\xaf"), r + r);                  // overlong '/'
  EXPECT_EQ(ValidUtf8("\xe0\x80\xaf"), r + r + r);          // overlong, 3 bytes
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), r + r + r);          // a UTF-16 surrogate
  EXPECT_EQ(ValidUtf8("\xf4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(ValidUtf8("\xf5"), r);
  EXPECT_EQ(ValidUtf8("ab\xe2\x82"), "ab" + r + r);  // cut at the end
  EXPECT_EQ(ValidUtf8("\xe2\x82x"), r + r + "x");    // cut by an ASCII byte
  EXPECT_EQ(ValidUtf8("\x80x"), r + "x");            // a lone continuation byte
}

TEST(JsonWriter, KeysAndValuesAreValidUtf8) {
  JsonWriter j;
  j.BeginObject();
  j.String("path\xff", "/data/caf\xe9.bin");
  j.EndObject();
  EXPECT_EQ(j.Finish(), "{\n  \"path\xef\xbf\xbd\": \"/data/caf\xef\xbf\xbd.bin\"\n}\n");
}

TEST(JsonWriter, CompactHasNoWhitespaceButTheLineBreaksAskedFor) {
  // The Chrome trace's shape: one event per line.
  JsonWriter j(JsonLayout::kCompact);
  j.BeginObject();
  j.String("unit", "ns");
  j.Key("events");
  j.BeginArray();
  for (int i = 0; i < 2; ++i) {
    j.LineBreak();
    j.BeginObject();
    j.Int("id", i);
    j.Key("args");
    j.BeginObject();
    j.EndObject();
    j.EndObject();
  }
  j.LineBreak();
  j.EndArray();
  j.EndObject();
  EXPECT_EQ(j.Finish(),
            "{\"unit\":\"ns\",\"events\":[\n{\"id\":0,\"args\":{}},\n{\"id\":1,\"args\":{}}\n]}\n");
}

TEST(JsonWriter, DecimalIsTheUnitsScaledExactly) {
  JsonWriter j(JsonLayout::kCompact);
  j.BeginArray();
  j.Decimal(1'234'567, 3);
  j.Decimal(-500, 3);
  j.Decimal(7, 3);
  j.Decimal(0, 3);
  j.Decimal(42, 0);
  // Beyond a double's 53 bits: still every digit.
  j.Decimal(9'007'199'254'740'993, 3);
  j.Decimal(INT64_MIN, 3);
  j.EndArray();
  EXPECT_EQ(j.Finish(),
            "[1234.567,-0.500,0.007,0.000,42,9007199254740.993,-9223372036854775.808]\n");
}

TEST(JsonWriter, InScriptEscapesKeysAndValuesForAScriptElement) {
  JsonWriter j(JsonLayout::kCompact, /*in_script=*/true);
  j.BeginObject();
  j.String("a<b", "</script>");
  j.EndObject();
  EXPECT_EQ(j.Finish(), "{\"a\\u003cb\":\"\\u003c/script\\u003e\"}\n");
}

}  // namespace
}  // namespace idlescope::testing
