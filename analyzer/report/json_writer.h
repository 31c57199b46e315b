// JsonWriter: the one JSON writer of idlescope's outputs (the report, the diff, the Chrome trace,
// the data of the HTML pages). Streaming and deterministic: keys come out in the order they are
// written, integers exactly, ratios with 4 decimals, so the same data gives the same bytes (golden
// tests compare them). Two layouts: indented (the reports: one value per line, two spaces of
// indentation) and compact (no whitespace but the line breaks the caller asks for: a Chrome trace
// of millions of events, one per line).
//
//   JsonWriter j;
//   j.BeginObject();
//   j.Key("span_ns");
//   j.Int(report.span);
//   j.EndObject();
//   std::string text = j.Finish();  // ends with a newline
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace idlescope {

// Every output idlescope writes is UTF-8; the names it writes are the program's bytes (a file
// name in Latin-1, say). A byte that is not part of a well-formed UTF-8 sequence is written as
// U+FFFD; the trace and the text report keep the bytes.
std::string ValidUtf8(std::string_view s);

// Appends `s` as a JSON string literal (RFC 8259): '"', '\\' and control characters escaped,
// ValidUtf8's text. `in_script` also escapes '<', '>' and '&' as \u003c..., for a literal inside
// an HTML <script> element: no "</script>" can end it early.
void AppendJsonString(std::string* out, std::string_view s, bool in_script = false);

enum class JsonLayout : uint8_t {
  kIndented,  // one value per line, two spaces of indentation per level
  kCompact,   // no whitespace; a newline only where LineBreak asks for one
};

class JsonWriter {
 public:
  // `in_script`: strings are escaped for an HTML <script> element (AppendJsonString).
  explicit JsonWriter(JsonLayout layout = JsonLayout::kIndented, bool in_script = false)
      : compact_(layout == JsonLayout::kCompact), in_script_(in_script) {}

  void BeginObject() { Begin('{'); }
  void EndObject() { End('}'); }
  void BeginArray() { Begin('['); }
  void EndArray() { End(']'); }
  // The next value is this key's (inside an object).
  void Key(std::string_view key);

  void String(std::string_view s);
  void Int(int64_t v);
  void Uint(uint64_t v);
  // A ratio with 4 decimals (a non-finite one is written as 0).
  void Ratio(double v);
  // A number with `decimals` decimals (a non-finite one is written as 0).
  void Fixed(double v, int decimals);
  // `units` / 10^decimals, exactly, with `decimals` decimals (ns as microseconds: Decimal(ns, 3)).
  void Decimal(int64_t units, int decimals);
  // kCompact: the next value, or the closing bracket, starts a new line.
  void LineBreak() { line_break_ = compact_; }
  void Bool(bool v);
  void Null();

  // A key and its value: j.Int("span_ns", span) is j.Key("span_ns"); j.Int(span).
  void String(std::string_view key, std::string_view s) {
    Key(key);
    String(s);
  }
  void Int(std::string_view key, int64_t v) {
    Key(key);
    Int(v);
  }
  void Uint(std::string_view key, uint64_t v) {
    Key(key);
    Uint(v);
  }
  void Ratio(std::string_view key, double v) {
    Key(key);
    Ratio(v);
  }
  void Bool(std::string_view key, bool v) {
    Key(key);
    Bool(v);
  }
  void Null(std::string_view key) {
    Key(key);
    Null();
  }
  void Decimal(std::string_view key, int64_t units, int decimals) {
    Key(key);
    Decimal(units, decimals);
  }

  // The document, with a final newline.
  std::string Finish();

 private:
  void Begin(char bracket);
  void End(char bracket);
  void Separate();
  void Newline();

  bool compact_;
  bool in_script_;
  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
  bool line_break_ = false;
  int depth_ = 0;
};

}  // namespace idlescope
