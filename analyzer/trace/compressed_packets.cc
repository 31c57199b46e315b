#include "analyzer/trace/compressed_packets.h"

#include <zstd.h>

#include "absl/strings/str_format.h"
#include "proto/format_rules.h"
#include "trace.pb.h"

namespace idlescope {
namespace {

// Trace.packet: field 1, length-delimited; Packet.compressed: field 9.
constexpr uint8_t kPacketTag = 0x0a;
constexpr uint8_t kCompressedTag = 0x4a;
constexpr uint8_t kZstdTag = (format::kCompressedZstdField << 3) | 2;

// Decodes the varint at p[*at], below `size`; false if it is cut or longer than 10 bytes.
bool ReadVarint(const char* p, size_t size, size_t* at, uint64_t* value) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && *at < size; shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(p[(*at)++]);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  return false;
}

// Whether `p` is whole Trace.packet fields; else where it stops being so, in *error.
bool WholePackets(const char* p, size_t size, std::string* error) {
  size_t at = 0;
  while (at < size) {
    const size_t start = at;
    uint64_t length = 0;
    if (static_cast<uint8_t>(p[at++]) != kPacketTag || !ReadVarint(p, size, &at, &length) ||
        length > size - at) {
      *error = absl::StrFormat("its content is not whole packets from byte %d of %d", start, size);
      return false;
    }
    at += length;
  }
  return true;
}

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

}  // namespace

struct PacketInflater::Context {
  ~Context() { ZSTD_freeDCtx(dctx); }
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
};

PacketInflater::PacketInflater() = default;
PacketInflater::~PacketInflater() = default;

bool PacketInflater::Inflate(std::string_view frame, std::string* error) {
  size_ = at_ = 0;
  const size_t frame_size = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_size) || frame_size != frame.size()) {
    *error = ZSTD_isError(frame_size)
                 ? absl::StrFormat("not a zstd frame (%s)", ZSTD_getErrorName(frame_size))
                 : absl::StrFormat("%d bytes after its zstd frame", frame.size() - frame_size);
    return false;
  }
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR) {
    *error = "its zstd frame does not state its content size";
    return false;
  }
  if (content > kMaxInflatedBytes) {
    *error = absl::StrFormat("its zstd frame claims %d bytes, above the %d MiB limit", content,
                             kMaxInflatedBytes >> 20);
    return false;
  }
  if (context_ == nullptr) context_ = std::make_unique<Context>();
  if (content > capacity_) {
    content_.reset(new char[content]);  // not zeroed: the frame fills it
    capacity_ = content;
  }
  const size_t got =
      ZSTD_decompressDCtx(context_->dctx, content_.get(), content, frame.data(), frame.size());
  if (ZSTD_isError(got) || got != content) {
    *error =
        ZSTD_isError(got)
            ? absl::StrFormat("its zstd frame does not decompress (%s)", ZSTD_getErrorName(got))
            : absl::StrFormat("its zstd frame holds %d bytes, not the %d it states", got, content);
    return false;
  }
  if (!WholePackets(content_.get(), got, error)) return false;
  size_ = got;
  return true;
}

std::string_view PacketInflater::Next() {
  size_t at = at_ + 1;
  uint64_t length = 0;
  ReadVarint(content_.get(), size_, &at, &length);  // checked whole by Inflate
  at_ = at + length;
  return std::string_view(content_.get() + at, length);
}

void PacketInflater::Release() {
  context_.reset();
  content_.reset();
  capacity_ = size_ = at_ = 0;
}

std::string CompressPackets(std::string_view packets) {
  if (packets.size() < format::kCompressMinBytes) return std::string(packets);
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, format::kZstdLevel);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_windowLog, format::kZstdWindowLog);
  std::string out, frame(format::kCompressMaxFrameInput, '\0');
  const auto* p = reinterpret_cast<const uint8_t*>(packets.data());
  size_t left = packets.size();
  while (left > 0) {
    const size_t part = format::CompressedFrameInputEnd(p, left);
    const size_t n = ZSTD_compress2(cctx.get(), frame.data(), frame.size(), p, part);
    if (ZSTD_isError(n) || !format::CompressedFrameGains(n, part)) {
      out.append(reinterpret_cast<const char*>(p), part);
    } else {
      // Trace.packet { Packet.compressed { Compressed.zstd } }, minimal lengths as libprotobuf's.
      const size_t zstd_field = 1 + VarintSize(n) + n;
      const size_t packet = 1 + VarintSize(zstd_field) + zstd_field;
      out.push_back(static_cast<char>(kPacketTag));
      AppendVarint(packet, &out);
      out.push_back(static_cast<char>(kCompressedTag));
      AppendVarint(zstd_field, &out);
      out.push_back(static_cast<char>(kZstdTag));
      AppendVarint(n, &out);
      out.append(frame.data(), n);
    }
    p += part;
    left -= part;
  }
  return out;
}

void FlushCompressor::Add(int kind, std::string_view framed, std::string* out) {
  switch (kind) {
    case Packet::kEvents:
    case Packet::kGpu:
      batches_ = true;
      break;
    case Packet::kInterned:
    case Packet::kModules:
    case Packet::kNotice:
      if (batches_) Finish(out);
      break;
    default:  // header, device, footer
      Finish(out);
      out->append(framed);
      return;
  }
  flush_.append(framed);
}

void FlushCompressor::Finish(std::string* out) {
  out->append(CompressPackets(flush_));
  flush_.clear();
  batches_ = false;
}

}  // namespace idlescope
