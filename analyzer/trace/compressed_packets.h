// Format v4's Compressed packets (proto/trace.proto, "Versions"): one zstd frame whose content is
// packets framed as in the file (tag 0x0a, length, Packet). PacketInflater takes a frame apart
// for the readers (TraceFileReader, read/file_end.cc); CompressPackets makes frames for the tools
// that write traces, as the recorder does (interpose/packet_compressor.h, the same rules:
// proto/format_rules.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace idlescope {

// A frame that claims more content than this is corrupt, not a request to allocate: writers put
// at most about 1 MiB of packets in one (format::kCompressMaxFrameInput), and a reader refuses
// a plain packet above kMaxPacketBytes, 64 MiB, anyway.
inline constexpr uint64_t kMaxInflatedBytes = 64ull << 20;

// The packets of one frame at a time, in a buffer reused from frame to frame.
class PacketInflater {
 public:
  PacketInflater();
  ~PacketInflater();
  PacketInflater(const PacketInflater&) = delete;
  PacketInflater& operator=(const PacketInflater&) = delete;

  // Decompresses `frame` (Compressed.zstd), dropping what is left of the frame before. False,
  // with one line in *error, where it is not one whole zstd frame that states its content size,
  // claims more than kMaxInflatedBytes, or holds anything but whole Trace.packet fields.
  bool Inflate(std::string_view frame, std::string* error);
  // Packets of the frame not handed out yet.
  bool pending() const { return at_ < size_; }
  // The next packet's bytes (the Packet, without its framing); only while pending().
  std::string_view Next();
  // Drops the frame's packets and frees the buffers (the decompression context too).
  void Release();

 private:
  struct Context;
  std::unique_ptr<Context> context_;  // made at the first frame
  std::unique_ptr<char[]> content_;
  size_t capacity_ = 0;
  size_t size_ = 0;
  size_t at_ = 0;  // the next packet's framing
};

// `packets` (whole Trace.packet fields) as the recorder writes a flush's packets in format v4:
// Compressed packets where they are format::kCompressMinBytes or more and that makes them
// smaller, else as they are. Packets keep their order and are never split.
std::string CompressPackets(std::string_view packets);

// For a tool that writes format v4 packet by packet: compresses them by the recorder's flushes,
// which it tells from the packets' order (interpose/flush.cc writes a flush's DeviceInfo
// packets, then its Interned, ModuleMap and Notice packets, then its batches). So a DeviceInfo,
// Header or Footer packet, or a definition after a batch, begins another flush. DeviceInfo,
// Header and Footer packets are never compressed, as in the recorder's files.
class FlushCompressor {
 public:
  // `framed`: one Trace.packet field holding a packet of kind `kind` (Packet::DataCase). What
  // can be written now is appended to *out.
  void Add(int kind, std::string_view framed, std::string* out);
  // Appends the packets held back, compressed (the end of the file, or of a flush).
  void Finish(std::string* out);

 private:
  std::string flush_;     // the packets of the flush so far
  bool batches_ = false;  // whether it has batches
};

}  // namespace idlescope
