// The choices a writer of formats v3 and v4 makes (proto/trace.proto, "Versions"), in one place
// for both writers: the recorder's hand encoder (interpose/trace_encoder.cc) and FormatCompactor
// (analyzer/trace/trace_format.cc), whose bytes a test compares (tests/interpose/wire_test.cc).
// Plain C++ and the standard library only: the preload library includes it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace idlescope::format {

// Stack nodes in the order a writer defines them: `id` continues the chain whose last node is
// `last` when it is the next id and that node is its parent.
inline bool ContinuesChain(uint64_t last, uint64_t id, uint64_t parent) {
  return last != 0 && id == last + 1 && parent == last;
}

// A string written as the start of an earlier one and a tail (InternedString.prefix).
struct Prefix {
  uint64_t id = 0;  // 0: none, the string is written whole
  size_t size = 0;  // bytes of string `id` it starts with
};

// The directories of the strings a file defined so far: a string is written as the longest of
// them it starts with (up to one of its '/'), when that is at least kMinPrefix bytes (a prefix
// costs its id and size, 4-6 bytes) and at most kMaxPrefix (PATH_MAX: a reader refuses longer
// ones, which would let a few bytes of a corrupt file stand for any amount of memory). One per
// file, cleared when a new file starts.
class PathPrefixes {
 public:
  static constexpr size_t kMinPrefix = 8;
  static constexpr size_t kMaxPrefix = 4096;

  // What string `id`, defined now, is written as; its directories are remembered for the
  // strings after it.
  Prefix Define(uint64_t id, std::string_view s) {
    Prefix found;
    // Longest first: once one is known, every shorter one is too (they were remembered together).
    size_t end = s.size();
    size_t known = 0;
    while (end > 0) {
      size_t slash = s.rfind('/', end - 1);
      if (slash == std::string_view::npos || slash == 0) break;
      auto it = dirs_.find(s.substr(0, slash));
      if (it != dirs_.end()) {
        if (slash >= kMinPrefix && slash <= kMaxPrefix) found = {it->second, slash};
        known = slash;
        break;
      }
      end = slash;
    }
    // Remember the directories longer than the longest known one, as prefixes of `id`.
    for (size_t at = s.size(); at > known + 1;) {
      size_t slash = s.rfind('/', at - 1);
      if (slash == std::string_view::npos || slash <= known) break;
      dirs_.emplace(std::string(s.substr(0, slash)), id);
      at = slash;
    }
    return found;
  }
  void Clear() { dirs_.clear(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  // directory -> a string that starts with it
  std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>> dirs_;
};

// v4: which packets a writer compresses together (the recorder: those of one flush, but for
// its DeviceInfo packets) and how. Packets below kCompressMinBytes together are written as they
// are: a frame costs its header (about 20 bytes), and what a small flush repeats (a thread's few
// events) zstd hardly shrinks. A frame holds whole packets of at most kCompressMaxFrameInput
// bytes together, or one larger packet: that bounds the writer's output buffer and what a reader
// holds for one frame. Level 1 and a window of 128 KB: docs/architecture.md, "Trace format", has
// the sizes and CPU costs that chose them.
inline constexpr size_t kCompressMinBytes = 2048;
inline constexpr size_t kCompressMaxFrameInput = 1 << 20;
inline constexpr int kZstdLevel = 1;
inline constexpr int kZstdWindowLog = 17;
// Compressed.zstd's field number.
inline constexpr uint32_t kCompressedZstdField = 1;
// The most bytes a Compressed packet's framing takes before its frame: Trace.packet's tag and
// length, Packet.compressed's, Compressed.zstd's.
inline constexpr size_t kCompressedFramingBytes = 3 * (1 + 5);

// Where the first frame's input ends in `packets` (whole Trace.packet fields): after the first
// packets that make at most kCompressMaxFrameInput bytes, at least one. Past a framing that does
// not parse (no writer makes one), the rest is one input.
inline size_t CompressedFrameInputEnd(const uint8_t* packets, size_t size) {
  size_t end = 0;
  while (end < size) {
    size_t at = end + 1;  // past the tag
    uint64_t length = 0;
    for (int shift = 0; at < size && shift < 64; shift += 7) {
      const uint8_t byte = packets[at++];
      length |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) break;
    }
    const size_t next = length <= size - at ? at + length : size;
    if (end > 0 && next > kCompressMaxFrameInput) break;
    end = next;
  }
  return end;
}

// A frame of `frame_bytes` for `input_bytes` of packets is written only when it is smaller,
// framing included.
inline bool CompressedFrameGains(size_t frame_bytes, size_t input_bytes) {
  return frame_bytes + kCompressedFramingBytes < input_bytes;
}

}  // namespace idlescope::format
