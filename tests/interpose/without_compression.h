// Test readers that parse a whole trace file with libprotobuf (trace_read.h, tests/io, tests/cuda)
// read a v4 file's Compressed packets as the packets they hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "analyzer/trace/compressed_packets.h"
#include "trace.pb.h"

namespace idlescope::testing {

inline bool ReadFramingVarint(const std::string& s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= s.size()) return false;
    const uint8_t b = static_cast<uint8_t>(s[(*pos)++]);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// A trace's bytes with each v4 Compressed packet replaced by the packets it holds, framed as in
// the file, for the readers below that parse whole packets with libprotobuf. A frame that does not
// decompress ends the bytes there (as a cut would); *compressed counts those that did.
inline std::string WithoutCompression(const std::string& data, size_t* compressed = nullptr) {
  std::string out;
  idlescope::PacketInflater inflater;
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t start = pos;
    uint64_t tag, len;
    if (!ReadFramingVarint(data, &pos, &tag) || !ReadFramingVarint(data, &pos, &len) ||
        len > data.size() - pos) {
      out.append(data, start);  // the cut packet as it is
      break;
    }
    pos += len;
    idlescope::Packet p;
    if (tag != 0x0a || static_cast<uint8_t>(data[pos - len]) != 0x4a ||
        !p.ParseFromArray(data.data() + pos - len, static_cast<int>(len)) || !p.has_compressed()) {
      out.append(data, start, pos - start);
      continue;
    }
    std::string error;
    if (!inflater.Inflate(p.compressed().zstd(), &error)) break;
    if (compressed != nullptr) ++*compressed;
    while (inflater.pending()) {
      const std::string_view inner = inflater.Next();
      out.push_back('\x0a');
      for (uint64_t v = inner.size();; v >>= 7) {
        out.push_back(static_cast<char>(v >= 0x80 ? (v & 0x7f) | 0x80 : v));
        if (v < 0x80) break;
      }
      out.append(inner);
    }
  }
  return out;
}

}  // namespace idlescope::testing
