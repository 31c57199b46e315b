#include "analyzer/report/json_writer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzer/report/escape.h"

namespace idlescope {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// An ASCII character a JSON string holds as it is (in a <script> element: not < > & either).
bool WrittenAsIs(unsigned char c, bool in_script) {
  if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') return false;
  return !in_script || (c != '<' && c != '>' && c != '&');
}

}  // namespace

std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t at = 0; at < s.size();) {
    size_t n = Utf8SequenceLength(s, at);
    if (n == 0) {
      out += kReplacement;
      ++at;
    } else {
      out.append(s, at, n);
      at += n;
    }
  }
  return out;
}

void AppendJsonString(std::string* out, std::string_view s, bool in_script) {
  *out += '"';
  for (size_t at = 0; at < s.size();) {
    // The run of characters written as they are, appended at once: most strings (names, paths,
    // keys) are one such run.
    size_t plain = at;
    while (plain < s.size() && WrittenAsIs(static_cast<unsigned char>(s[plain]), in_script)) {
      ++plain;
    }
    if (plain > at) {
      out->append(s, at, plain - at);
      at = plain;
      if (at == s.size()) break;
    }
    unsigned char c = static_cast<unsigned char>(s[at]);
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(s, at);
      if (n == 0) {
        *out += kReplacement;
        ++at;
      } else {
        out->append(s, at, n);
        at += n;
      }
      continue;
    }
    ++at;
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '\t') {
      *out += "\\t";
    } else if (c < 0x20 || (in_script && (c == '<' || c == '>' || c == '&'))) {
      absl::StrAppendFormat(out, "\\u%04x", c);
    } else {
      *out += static_cast<char>(c);
    }
  }
  *out += '"';
}

void JsonWriter::Key(std::string_view key) {
  Separate();
  AppendJsonString(&out_, key, in_script_);
  out_ += compact_ ? ":" : ": ";
  after_key_ = true;
}

void JsonWriter::String(std::string_view s) {
  Separate();
  AppendJsonString(&out_, s, in_script_);
}

void JsonWriter::Int(int64_t v) {
  Separate();
  absl::StrAppend(&out_, v);
}

void JsonWriter::Uint(uint64_t v) {
  Separate();
  absl::StrAppend(&out_, v);
}

void JsonWriter::Ratio(double v) { Fixed(v, 4); }

void JsonWriter::Fixed(double v, int decimals) {
  Separate();
  if (!std::isfinite(v)) v = 0;
  absl::StrAppendFormat(&out_, "%.*f", decimals, v);
}

void JsonWriter::Decimal(int64_t units, int decimals) {
  Separate();
  // The magnitude as unsigned, so that INT64_MIN has one too.
  const uint64_t magnitude =
      units < 0 ? 0 - static_cast<uint64_t>(units) : static_cast<uint64_t>(units);
  uint64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  absl::StrAppend(&out_, units < 0 ? "-" : "", magnitude / scale);
  if (decimals == 0) return;
  out_ += '.';
  const size_t at = out_.size();
  out_.append(static_cast<size_t>(decimals), '0');
  for (uint64_t rest = magnitude % scale, i = 0; rest > 0; rest /= 10, ++i) {
    out_[at + static_cast<size_t>(decimals) - 1 - i] = static_cast<char>('0' + rest % 10);
  }
}

void JsonWriter::Bool(bool v) {
  Separate();
  out_ += v ? "true" : "false";
}

void JsonWriter::Null() {
  Separate();
  out_ += "null";
}

std::string JsonWriter::Finish() {
  out_ += '\n';
  return std::move(out_);
}

void JsonWriter::Begin(char bracket) {
  Separate();
  out_ += bracket;
  first_ = true;
  ++depth_;
}

void JsonWriter::End(char bracket) {
  --depth_;
  Newline();
  out_ += bracket;
  first_ = false;
}

void JsonWriter::Separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_ && depth_ > 0) out_ += ',';
  first_ = false;
  if (depth_ > 0) Newline();
}

void JsonWriter::Newline() {
  if (compact_) {
    if (line_break_) out_ += '\n';
    line_break_ = false;
    return;
  }
  out_ += '\n';
  out_.append(static_cast<size_t>(depth_) * 2, ' ');
}

}  // namespace idlescope
