#include "analyzer/read/file_end.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/trace/compressed_packets.h"
#include "analyzer/trace/trace_format.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope {
namespace {

// A packet's place in the file and what it is (the Packet field its bytes begin with).
struct Framed {
  uint64_t offset = 0;  // of the packet's bytes
  uint64_t length = 0;
  uint32_t field = 0;
};

// Batches decoded from the end of a file without a footer, for its latest time: the writer
// flushes every thread's batches together, so the last flush is among the last few packets (v4:
// in the last Compressed packet or two, which are counted as batches: all but the footer and
// DeviceInfo packets may be in them, and those two never are).
constexpr size_t kLastBatches = 32;

// Times far from overflow whatever a corrupt file says (as the reader's RecordTimes).
constexpr uint64_t kMaxDur = uint64_t{1} << 50;
constexpr Ns kMaxAbs = Ns{1} << 62;

Ns Clamp(uint64_t t) { return std::clamp(static_cast<Ns>(t), -kMaxAbs, kMaxAbs); }

class FileEndReader {
 public:
  explicit FileEndReader(int fd) : fd_(fd) {}

  ProcessEnd Read() {
    ProcessEnd end;
    struct stat st;
    if (fstat(fd_, &st) != 0) return end;
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    std::deque<Framed> batches;  // the last kLastBatches event and GPU batches
    Framed header, last;
    uint64_t offset = 0;
    while (offset < size) {
      unsigned char prefix[12];
      const ssize_t got = pread(fd_, prefix, sizeof(prefix), static_cast<off_t>(offset));
      if (got < 2 || prefix[0] != 0x0a) break;
      uint64_t length = 0;
      size_t at = 1;
      bool complete = false;
      for (int shift = 0; at < static_cast<size_t>(got) && shift < 64 && !complete; shift += 7) {
        const unsigned char b = prefix[at++];
        length |= uint64_t{b & 0x7fu} << shift;
        complete = (b & 0x80) == 0;
      }
      if (!complete || length > kMaxPacketBytes || offset + at + length > size) break;
      Framed f{offset + at, length, at < static_cast<size_t>(got) ? uint32_t{prefix[at]} >> 3 : 0};
      if (f.field == Packet::kHeader && header.length == 0) header = f;
      if (f.field == Packet::kDevice) end.drove_gpu = true;
      if (f.field == Packet::kEvents || f.field == Packet::kGpu || f.field == Packet::kCompressed) {
        batches.push_back(f);
        if (batches.size() > kLastBatches) batches.pop_front();
      }
      if (length > 0) last = f;
      offset += at + length;
    }
    Packet packet;
    if (header.length == 0 || !Decode(header, &packet) || !packet.has_header()) return end;
    FormatExpander expander(packet.header().format_version());
    if (last.length > 0 && Decode(last, &packet) && packet.has_footer()) {
      const Footer& footer = packet.footer();
      end.reason = footer.reason() != EXIT_UNSPECIFIED ? footer.reason() : EXIT_NORMAL;
      end.status = footer.exit_status();
      end.at = Clamp(footer.end_ns());
    }
    // The PROC_EXIT (its stack) is in the last flush; without a footer, the latest time too.
    bool exit_found = false;
    std::vector<Packet> decoded;  // of one framed packet, in file order
    for (auto it = batches.rbegin(); it != batches.rend(); ++it) {
      if (!DecodeBatches(*it, &decoded)) continue;
      for (auto p = decoded.rbegin(); p != decoded.rend(); ++p) {
        Take(*p, expander, &end, &exit_found);
        if (exit_found && end.footer()) break;
      }
      if (exit_found && end.footer()) break;
    }
    return end;
  }

 private:
  // What a batch says of the end: the PROC_EXIT's stack (the latest batch's), and without a
  // footer the latest time.
  static void Take(Packet& packet, FormatExpander& expander, ProcessEnd* end, bool* exit_found) {
    std::string error;
    if (!expander.Expand(&packet, &error)) return;
    if (packet.has_events()) {
      uint64_t t = 0;
      for (const Event& ev : packet.events().events()) {
        t += static_cast<uint64_t>(ev.ts());
        if (!end->footer()) end->at = std::max(end->at, Clamp(t + std::min(ev.dur(), kMaxDur)));
        if (ev.type() == PROC_EXIT && !*exit_found) {
          end->stack = ev.stack();
          *exit_found = true;
        }
      }
    } else if (packet.has_gpu() && !end->footer()) {
      uint64_t t = 0;
      for (const GpuActivity& a : packet.gpu().activities()) {
        t += static_cast<uint64_t>(a.start());
        end->at = std::max(end->at, Clamp(t + std::min(a.dur(), kMaxDur)));
      }
    }
  }

  bool Decode(const Framed& f, Packet* packet) {
    bytes_.resize(f.length);
    if (pread(fd_, bytes_.data(), f.length, static_cast<off_t>(f.offset)) !=
        static_cast<ssize_t>(f.length)) {
      return false;
    }
    return packet->ParseFromString(bytes_);
  }

  // The batches of framed packet `f` into *batches, in file order: the packet itself, or those a
  // Compressed packet holds. False where it does not decode (a corrupt frame: nothing from it).
  bool DecodeBatches(const Framed& f, std::vector<Packet>* batches) {
    batches->resize(1);
    if (!Decode(f, &batches->front())) return false;
    if (!batches->front().has_compressed()) return true;
    std::string error;
    if (!inflater_.Inflate(batches->front().compressed().zstd(), &error)) return false;
    batches->clear();
    while (inflater_.pending()) {
      const std::string_view bytes = inflater_.Next();
      Packet inner;
      if (!inner.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
      if (inner.has_events() || inner.has_gpu()) batches->push_back(std::move(inner));
    }
    return true;
  }

  int fd_;
  std::string bytes_;
  PacketInflater inflater_;
};

}  // namespace

ProcessEnd ReadFileEnd(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  ProcessEnd end = FileEndReader(fd).Read();
  close(fd);
  return end;
}

}  // namespace idlescope
