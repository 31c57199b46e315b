// trace_convert: rewrites an idlescope trace in another format version (proto/trace.proto,
// "Versions"), e.g. a v1 trace in v2 to see what v2 saves on it, or a v2 trace in v1 for a tool
// that reads only v1. The events are the same (the reader expands v2 into v1's shape; v2 is
// written by FormatCompactor, as the recorder would write it); packet boundaries are kept. v4's
// Compressed packets hold the packets of one flush each, as the recorder's (FlushCompressor).
//
//   trace_convert [--format 1|2|3|4] IN OUT     (default: --format 4)
//
// Prints the sizes of both files and where the bytes are, per packet kind. A cut or corrupt input
// is converted up to its last good packet (said on stderr); the output then has no footer either.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "analyzer/trace/compressed_packets.h"
#include "analyzer/trace/trace_format.h"
#include "analyzer/trace/trace_reader.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace idlescope {
namespace {

const char* KindName(Packet::DataCase kind) {
  switch (kind) {
    case Packet::kHeader:
      return "header";
    case Packet::kInterned:
      return "interned";
    case Packet::kEvents:
      return "host events";
    case Packet::kGpu:
      return "gpu activities";
    case Packet::kDevice:
      return "devices";
    case Packet::kModules:
      return "modules";
    case Packet::kNotice:
      return "notices";
    case Packet::kFooter:
      return "footer";
    case Packet::kCompressed:
      return "compressed";
    case Packet::DATA_NOT_SET:
      break;
  }
  return "other";
}

struct Sizes {
  std::map<Packet::DataCase, uint64_t> bytes;
  uint64_t total = 0;
};

// Writes packets, in format v4 compressed by the recorder's flushes (FlushCompressor).
class Writer {
 public:
  Writer(int fd, uint32_t format) : stream_(fd), compress_(format >= kTraceFormatV4) {}
  // Writes what is held back, flushes and closes the file; false on a write error.
  bool Close() {
    std::string bytes;
    compressor_.Finish(&bytes);
    Emit(bytes);
    return stream_.Close();
  }

  void Write(const Packet& p) {
    std::string framed;
    google::protobuf::io::StringOutputStream string_stream(&framed);
    {
      google::protobuf::io::CodedOutputStream out(&string_stream);
      out.WriteVarint32(0x0a);  // Trace.packet, length-delimited
      out.WriteVarint64(p.ByteSizeLong());
      p.SerializeWithCachedSizes(&out);
    }
    if (!compress_) {
      Emit(framed);
      return;
    }
    std::string bytes;
    compressor_.Add(p.data_case(), framed, &bytes);
    Emit(bytes);
  }

  Sizes sizes;

 private:
  // Writes whole packets (ours: their framing is sound), counted by kind: their Packet's first
  // field, the oneof member.
  void Emit(std::string_view bytes) {
    google::protobuf::io::CodedOutputStream out(&stream_);
    out.WriteRaw(bytes.data(), static_cast<int>(bytes.size()));
    size_t at = 0;
    while (at < bytes.size()) {
      const size_t start = at++;  // Trace.packet's tag
      uint64_t length = 0;
      for (int shift = 0;; shift += 7) {
        const uint8_t byte = static_cast<uint8_t>(bytes[at++]);
        length |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) break;
      }
      const int field = length > 0 ? static_cast<uint8_t>(bytes[at]) >> 3 : 0;
      at += length;
      sizes.bytes[static_cast<Packet::DataCase>(field)] += at - start;
      sizes.total += at - start;
    }
  }

  google::protobuf::io::FileOutputStream stream_;
  const bool compress_;
  FlushCompressor compressor_;
};

void PrintSizes(const char* label, const std::string& path, uint32_t version, const Sizes& s,
                uint64_t events, uint64_t activities) {
  std::printf("%s %s: format v%u, %llu bytes", label, path.c_str(), version,
              static_cast<unsigned long long>(s.total));
  if (events + activities > 0) {
    std::printf(", %.1f bytes per event or activity",
                static_cast<double>(s.total) / static_cast<double>(events + activities));
  }
  std::printf("\n");
  for (const auto& [kind, bytes] : s.bytes) {
    std::printf("  %-15s %10llu bytes", KindName(kind), static_cast<unsigned long long>(bytes));
    if (kind == Packet::kEvents && events > 0) {
      std::printf("  %6.1f per host event", static_cast<double>(bytes) / events);
    }
    if (kind == Packet::kGpu && activities > 0) {
      std::printf("  %6.1f per activity", static_cast<double>(bytes) / activities);
    }
    std::printf("\n");
  }
}

int Main(int argc, char** argv) {
  uint32_t format = kTraceFormatVersion;
  std::string in, out;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--format" && i + 1 < argc) {
      format = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (in.empty() && arg.substr(0, 1) != "-") {
      in = argv[i];
    } else if (out.empty() && arg.substr(0, 1) != "-") {
      out = argv[i];
    } else {
      in.clear();
      break;
    }
  }
  if (in.empty() || out.empty() || format < kTraceFormatV1 || format > kTraceFormatVersion) {
    std::fprintf(stderr, "usage: trace_convert [--format 1|2|3|4] IN OUT\n");
    return 2;
  }
  auto reader = TraceFileReader::Open(in);
  if (!reader.ok()) {
    std::fprintf(stderr, "trace_convert: %s\n", std::string(reader.status().message()).c_str());
    return 1;
  }
  int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(out.c_str());
    return 1;
  }
  Sizes in_sizes;
  uint64_t events = 0, activities = 0;
  {
    Writer writer(fd, format);
    FormatCompactor compactor(format);
    Packet p;
    *p.mutable_header() = (*reader)->header();
    p.mutable_header()->set_format_version(format);
    writer.Write(p);
    uint64_t offset = (*reader)->stats().good_end_offset;
    in_sizes.bytes[Packet::kHeader] = offset;
    while ((*reader)->Next(&p)) {
      // A Compressed packet's bytes count once its last packet is read.
      const uint64_t end = (*reader)->stats().good_end_offset;
      in_sizes.bytes[(*reader)->last_packet_compressed() ? Packet::kCompressed : p.data_case()] +=
          end - offset;
      offset = end;
      if (p.has_events()) events += static_cast<uint64_t>(p.events().events_size());
      if (p.has_gpu()) activities += static_cast<uint64_t>(p.gpu().activities_size());
      if (format == kTraceFormatV1) {
        // v1 has no communicator ids: the reader has put the hashes back into the events.
        if (p.has_interned()) {
          p.mutable_interned()->clear_comms();
          if (p.interned().ByteSizeLong() == 0) continue;
        }
        writer.Write(p);
        continue;
      }
      Interned comms;
      compactor.Compact(&p, &comms);
      if (comms.comms_size() > 0) {
        Packet defs;
        *defs.mutable_interned() = std::move(comms);
        writer.Write(defs);
      }
      writer.Write(p);
    }
    in_sizes.total = offset;
    if (!writer.Close()) {
      std::fprintf(stderr, "trace_convert: cannot write %s\n", out.c_str());
      return 1;
    }
    const TraceReadStats& s = (*reader)->stats();
    if (s.truncated()) {
      std::fprintf(stderr, "trace_convert: %s: %s; converted up to there\n", in.c_str(),
                   s.TailDescription().c_str());
    }
    PrintSizes("in ", in, (*reader)->format_version(), in_sizes, events, activities);
    PrintSizes("out", out, format, writer.sizes, events, activities);
    std::printf("out/in: %.3f\n",
                static_cast<double>(writer.sizes.total) / static_cast<double>(in_sizes.total));
  }
  return 0;
}

}  // namespace
}  // namespace idlescope

int main(int argc, char** argv) { return idlescope::Main(argc, argv); }
