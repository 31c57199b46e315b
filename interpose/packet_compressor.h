// Format v4 (proto/trace.proto, "Versions"): a flush's packets written as Compressed packets,
// each one zstd frame that stands alone (no history from an earlier flush or frame), so a file
// cut anywhere still reads up to its last whole packet. What is compressed and how:
// proto/format_rules.h, shared with the analyzer's writer (analyzer/trace/compressed_packets.h).
//
// A flush may run in a signal handler or in a forked child that must not call malloc, so the
// compressor allocates nothing: zstd works in a static context (ZSTD_initStaticCCtx) over a
// workspace of ours, mapped once per process at the first flush large enough to compress, and
// writes each frame into an output buffer in the same mapping. Where the mapping cannot be had,
// the packets are written as they are (v4 allows both). Not thread-safe: one flush at a time
// (the flush lock), and none in flight at a fork (the fork handlers hold that lock), so a forked
// child's copy of the mapping is a context at rest, which it uses as its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "interpose/wire.h"

struct ZSTD_CCtx_s;

namespace idlescope {

class PacketCompressor {
 public:
  // The workspace's memory: `bytes` of zeroed, writable memory of ours, or nullptr. Never
  // unmapped (the process's life).
  using MapFunction = void* (*)(size_t bytes);
  static void* MapAnonymous(size_t bytes);

  constexpr PacketCompressor() = default;
  explicit constexpr PacketCompressor(MapFunction map) : map_(map) {}

  // Appends `packets` (whole Trace.packet fields) to `out`: as Compressed packets where they
  // are format::kCompressMinBytes or more and zstd makes them smaller, else as they are. Packets
  // keep their order and are never split. Neither zstd nor the mapping (a raw system call)
  // sets errno.
  void Append(const uint8_t* packets, size_t size, wire::Buffer* out);

  // The bytes the workspace maps (context and output buffer): 0 before the first use, or
  // where it could not be mapped.
  size_t mapped_bytes() const { return mapped_bytes_; }

 private:
  // Maps and initialises the workspace, once: false when it cannot be had (now or before).
  bool Ready();
  // One frame of `packets` into out_, then the Compressed packet holding it into `out`; false
  // (nothing appended) where zstd fails or the frame would not be smaller.
  bool AppendFrame(const uint8_t* packets, size_t size, wire::Buffer* out);

  MapFunction map_ = &MapAnonymous;
  bool tried_ = false;
  ZSTD_CCtx_s* cctx_ = nullptr;
  uint8_t* out_ = nullptr;  // room for one frame: format::kCompressMaxFrameInput bytes
  size_t mapped_bytes_ = 0;
};

}  // namespace idlescope
