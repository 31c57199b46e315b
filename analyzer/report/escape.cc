#include "analyzer/report/escape.h"

#include <cstdint>

namespace idlescope {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendHexByte(std::string* out, unsigned char c) {
  *out += "\\x";
  *out += kHex[c >> 4];
  *out += kHex[c & 0xf];
}

// The code point of the well-formed sequence of `n` bytes at s[at].
uint32_t CodePoint(std::string_view s, size_t at, size_t n) {
  const auto byte = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(s[i]));
  };
  if (n == 1) return byte(at);
  uint32_t code = byte(at) & (0x7fu >> n);
  for (size_t i = 1; i < n; ++i) code = (code << 6) | (byte(at + i) & 0x3f);
  return code;
}

bool EscapedCodePoint(uint32_t code) {
  return (code >= 0x80 && code <= 0x9f) || code == 0x2028 || code == 0x2029 ||
         (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
}

}  // namespace

size_t Utf8SequenceLength(std::string_view s, size_t at) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = byte(at);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (at + n > s.size() || byte(at + 1) < lo || byte(at + 1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
  }
  return n;
}

std::string EscapeControls(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t at = 0; at < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[at]);
    if (c >= 0x20 && c < 0x7f) {
      if (c == '\\') out += '\\';
      out += static_cast<char>(c);
      ++at;
      continue;
    }
    if (c < 0x80) {  // C0 controls and DEL
      if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else {
        AppendHexByte(&out, c);
      }
      ++at;
      continue;
    }
    const size_t n = Utf8SequenceLength(bytes, at);
    if (n == 0) {
      if (c <= 0x9f) {
        AppendHexByte(&out, c);
      } else {
        out += static_cast<char>(c);
      }
      ++at;
      continue;
    }
    if (EscapedCodePoint(CodePoint(bytes, at, n))) {
      for (size_t i = 0; i < n; ++i) AppendHexByte(&out, static_cast<unsigned char>(bytes[at + i]));
    } else {
      out.append(bytes, at, n);
    }
    at += n;
  }
  return out;
}

}  // namespace idlescope
