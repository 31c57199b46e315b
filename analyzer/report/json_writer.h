// JsonWriter: the one JSON writer of idlescope's outputs (report and diff). Streaming and
// deterministic: keys come out in the order they are written, one value per line, two spaces of
// indentation, integers exactly, ratios with 4 decimals, so the same data gives the same bytes
// (golden tests compare them).
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

class JsonWriter {
 public:
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

  // The document, with a final newline.
  std::string Finish();

 private:
  void Begin(char bracket);
  void End(char bracket);
  void Separate();
  void Newline();

  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
  int depth_ = 0;
};

}  // namespace idlescope
