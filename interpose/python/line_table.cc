#include "interpose/python/line_table.h"

namespace idlescope::python {

namespace {

// 3.10: the ranges are in bytes of bytecode; each pair moves the end of the range by its first
// byte and the line by its second (signed). Empty ranges only accumulate their line delta.
int LinePairs310(const uint8_t* table, size_t size, int first_line, int64_t unit) {
  const int64_t addr = unit * 2;
  int64_t end = 0;
  int line = first_line;
  for (size_t i = 0; i + 1 < size; i += 2) {
    const int64_t start = end;
    end += table[i];
    const int8_t delta = static_cast<int8_t>(table[i + 1]);
    int range_line = -1;
    if (delta != -128) {
      line += delta;
      range_line = line;
    }
    if (addr >= start && addr < end) return range_line;
  }
  return -1;
}

// Varints of the location table: 6-bit chunks, least significant first, bit 6 = more follow.
// Stops at the end of the table or at the next entry's start byte (bit 7) of a corrupt table.
uint32_t ReadVarint(const uint8_t* table, size_t size, size_t* i) {
  uint32_t value = 0;
  for (uint32_t shift = 0; *i < size && shift < 32; shift += 6) {
    const uint8_t b = table[(*i)++];
    value |= static_cast<uint32_t>(b & 63) << shift;
    if ((b & 64) == 0) break;
  }
  return value;
}

int ReadSignedVarint(const uint8_t* table, size_t size, size_t* i) {
  const uint32_t u = ReadVarint(table, size, i);
  return (u & 1) != 0 ? -static_cast<int>(u >> 1) : static_cast<int>(u >> 1);
}

constexpr int kNoLocation = 15;  // PY_CODE_LOCATION_INFO_NONE
constexpr int kLongForm = 14;    // PY_CODE_LOCATION_INFO_LONG
constexpr int kNoColumns = 13;   // PY_CODE_LOCATION_INFO_NO_COLUMNS
constexpr int kOneLine0 = 10;    // PY_CODE_LOCATION_INFO_ONE_LINE0 (then ONE_LINE1, ONE_LINE2)

// 3.11+: each entry covers (b & 7) + 1 code units; codes 0-9 (short forms) keep the line, 10-12
// add 0-2, 13 and 14 carry a signed varint delta, 15 has no line (and keeps the running line).
int LineLocations311(const uint8_t* table, size_t size, int first_line, int64_t unit) {
  int64_t end = 0;
  int line = first_line;
  size_t i = 0;
  while (i < size) {
    const uint8_t head = table[i++];
    if ((head & 0x80) == 0) continue;  // not an entry start: a corrupt table, resynchronize
    const int code = (head >> 3) & 15;
    const int64_t start = end;
    end += (head & 7) + 1;
    if (code == kLongForm || code == kNoColumns) {
      line += ReadSignedVarint(table, size, &i);
    } else if (code >= kOneLine0 && code < kNoColumns) {
      line += code - kOneLine0;
    }
    if (unit >= start && unit < end) return code == kNoLocation ? -1 : line;
    while (i < size && (table[i] & 0x80) == 0) ++i;  // the entry's column bytes
  }
  return -1;
}

}  // namespace

int LineForOffset(LineTableFormat format, const uint8_t* table, size_t size, int first_line,
                  int64_t unit) {
  if (unit < 0) return first_line;
  switch (format) {
    case LineTableFormat::kPairs310:
      return LinePairs310(table, size, first_line, unit);
    case LineTableFormat::kLocations311:
      return LineLocations311(table, size, first_line, unit);
  }
  return -1;
}

}  // namespace idlescope::python
