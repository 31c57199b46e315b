#include "interpose/packet_compressor.h"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_initStaticCCtx, ZSTD_estimateCCtxSize_usingCParams
#include <sys/mman.h>
#include <sys/syscall.h>
#include <zstd.h>

#include <string_view>

#include "interpose/raw_syscall.h"
#include "interpose/trace_encoder.h"
#include "proto/format_rules.h"

namespace idlescope {
namespace {

// What the context takes with the level's largest tables (those of an input of unknown size) and
// our window. From the parameters, not ZSTD_estimateCCtxSize_usingCCtxParams: making a
// ZSTD_CCtx_params mallocs, and the first mapping may be in a signal handler's flush.
size_t ContextBytes() {
  ZSTD_compressionParameters c = ZSTD_getCParams(format::kZstdLevel, 0, 0);
  c.windowLog = format::kZstdWindowLog;
  return (ZSTD_estimateCCtxSize_usingCParams(c) + 63) & ~size_t{63};
}

}  // namespace

void* PacketCompressor::MapAnonymous(size_t bytes) {
  // The system call itself: mmap is one of our hooks, and errno stays the program's.
  const long p = RawSyscall(SYS_mmap, 0, static_cast<long>(bytes), PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p < 0 && p > -4096 ? nullptr : reinterpret_cast<void*>(p);
}

bool PacketCompressor::Ready() {
  if (tried_) return cctx_ != nullptr;
  tried_ = true;
  const size_t context = ContextBytes();
  const size_t bytes = context + format::kCompressMaxFrameInput;
  void* memory = map_(bytes);
  if (memory == nullptr) return false;
  ZSTD_CCtx* cctx = ZSTD_initStaticCCtx(memory, context);
  // A static context starts with its parameters zeroed (zstd 1.5), the frame's content size
  // flag included, which readers need: the defaults first.
  if (cctx == nullptr || ZSTD_isError(ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, format::kZstdLevel)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, format::kZstdWindowLog))) {
    return false;
  }
  cctx_ = cctx;
  out_ = static_cast<uint8_t*>(memory) + context;
  mapped_bytes_ = bytes;
  return true;
}

bool PacketCompressor::AppendFrame(const uint8_t* packets, size_t size, wire::Buffer* out) {
  const size_t n = ZSTD_compress2(cctx_, out_, format::kCompressMaxFrameInput, packets, size);
  if (ZSTD_isError(n) || !format::CompressedFrameGains(n, size)) return false;
  trace::PacketScope packet(*out, trace::kCompressed);
  out->Bytes(format::kCompressedZstdField,
             std::string_view(reinterpret_cast<const char*>(out_), n));
  return true;
}

void PacketCompressor::Append(const uint8_t* packets, size_t size, wire::Buffer* out) {
  if (size < format::kCompressMinBytes || !Ready()) {
    out->Raw(packets, size);
    return;
  }
  while (size > 0) {
    const size_t part = format::CompressedFrameInputEnd(packets, size);
    if (!AppendFrame(packets, part, out)) out->Raw(packets, part);
    packets += part;
    size -= part;
  }
}

}  // namespace idlescope
