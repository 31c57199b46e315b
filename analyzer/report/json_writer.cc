#include "analyzer/report/json_writer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace idlescope {

void JsonWriter::Key(std::string_view key) {
  Separate();
  Quoted(key);
  out_ += ": ";
  after_key_ = true;
}

void JsonWriter::String(std::string_view s) {
  Separate();
  Quoted(s);
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
  out_ += '\n';
  out_.append(static_cast<size_t>(depth_) * 2, ' ');
}

void JsonWriter::Quoted(std::string_view s) {
  out_ += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\t':
        out_ += "\\t";
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(&out_, "\\u%04x", c);
        } else {
          out_ += static_cast<char>(c);
        }
    }
  }
  out_ += '"';
}

}  // namespace idlescope
