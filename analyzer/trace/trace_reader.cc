#include "analyzer/trace/trace_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/unknown_field_set.h"

namespace idlescope {
namespace {

// Trace.packet: field 1, wire type 2 (length-delimited).
constexpr uint8_t kPacketTag = 0x0a;
// The longest framing: a tag varint and a length varint of 10 bytes each.
constexpr size_t kMaxFramingBytes = 20;

// Calls f(message) for the packet and every message nested in it that can carry unknown fields
// the reader should count. Typed (no reflection) so that it costs a pointer test per message.
// The unknown fields libprotobuf kept while parsing `m` (proto3 keeps them since 3.5). The
// generated classes of 3.21 have no unknown_fields() accessor; the per-type Reflection is looked
// up once, after which this is a pointer test.
template <typename M>
const google::protobuf::UnknownFieldSet& UnknownFieldsOf(const M& m) {
  static const google::protobuf::Reflection* const reflection = M::GetReflection();
  return reflection->GetUnknownFields(m);
}

template <typename F>
void ForEachMessage(const Packet& packet, F&& f) {
  f(packet);
  switch (packet.data_case()) {
    case Packet::kHeader: {
      const Header& h = packet.header();
      f(h);
      if (h.has_clock()) f(h.clock());
      if (h.has_config()) f(h.config());
      break;
    }
    case Packet::kInterned: {
      const Interned& in = packet.interned();
      f(in);
      for (const auto& m : in.strings()) f(m);
      for (const auto& m : in.frames()) f(m);
      for (const auto& m : in.stack_nodes()) f(m);
      for (const auto& m : in.streams()) f(m);
      for (const auto& m : in.threads()) f(m);
      for (const auto& m : in.comms()) f(m);
      break;
    }
    case Packet::kEvents: {
      const EventBatch& batch = packet.events();
      f(batch);
      for (const Event& e : batch.events()) {
        f(e);
        for (const LaunchRun& r : e.launches()) {
          f(r);
          for (const LaunchSite& s : r.sites()) f(s);
        }
      }
      break;
    }
    case Packet::kGpu: {
      const GpuBatch& batch = packet.gpu();
      f(batch);
      for (const GpuActivity& a : batch.activities()) {
        f(a);
        for (const KernelRun& r : a.kernels()) {
          f(r);
          for (const KernelSite& s : r.sites()) f(s);
        }
      }
      break;
    }
    case Packet::kDevice:
      f(packet.device());
      break;
    case Packet::kModules:
      f(packet.modules());
      for (const Module& m : packet.modules().modules()) f(m);
      break;
    case Packet::kNotice:
      f(packet.notice());
      break;
    case Packet::kFooter:
      f(packet.footer());
      break;
    case Packet::kCompressed:
      f(packet.compressed());
      break;
    case Packet::DATA_NOT_SET:
      break;
  }
}

std::string TailReason(TailProblem tail) {
  switch (tail) {
    case TailProblem::kNone:
      return "";
    case TailProblem::kCutInPacket:
      return "cut inside a packet";
    case TailProblem::kCutInFraming:
      return "cut inside a packet's length prefix";
    case TailProblem::kOversizedPacket:
      return "corrupt packet length";
    case TailProblem::kBadFraming:
      return "corrupt data: not a packet";
    case TailProblem::kUnparseablePacket:
      return "corrupt packet";
    case TailProblem::kReadError:
      return "read error";
  }
  return "";
}

// How the first bytes of a file compare with the start of a header packet as the recorder and
// libprotobuf write it: 0a <varint> (Trace.packet), 0a <varint> (Packet.header), then Header.magic,
// its first field: 0a 09 "IDLESCOPE".
enum class HeaderStart {
  kNo,      // some byte differs: not an idlescope trace
  kPrefix,  // every byte there matches, the file ends before the magic is complete
  kMagic,   // the magic is complete
};

HeaderStart CompareWithHeaderStart(std::string_view head) {
  size_t at = 0;
  for (int level = 0; level < 2; ++level) {  // Trace.packet, then Packet.header
    if (at == head.size()) return HeaderStart::kPrefix;
    if (static_cast<uint8_t>(head[at++]) != kPacketTag) return HeaderStart::kNo;
    for (int i = 0;; ++i) {  // the length varint
      if (at == head.size()) return HeaderStart::kPrefix;
      if (i == 10) return HeaderStart::kNo;
      if ((static_cast<uint8_t>(head[at++]) & 0x80) == 0) break;
    }
  }
  constexpr std::string_view kMagicField("\x0a\x09IDLESCOPE", 11);
  const std::string_view rest = head.substr(at, kMagicField.size());
  if (rest != kMagicField.substr(0, rest.size())) return HeaderStart::kNo;
  return rest.size() == kMagicField.size() ? HeaderStart::kMagic : HeaderStart::kPrefix;
}

}  // namespace

std::string TraceReadStats::TailDescription() const {
  if (tail == TailProblem::kNone) return "";
  const bool cut = tail == TailProblem::kCutInPacket || tail == TailProblem::kCutInFraming;
  std::string reason = TailReason(tail);
  if (!tail_detail.empty()) absl::StrAppend(&reason, ": ", tail_detail);
  return absl::StrFormat("%s: %d bytes after offset %d were dropped (%s)",
                         cut ? "truncated" : "corrupt", dropped_bytes, good_end_offset, reason);
}

TraceFileReader::TraceFileReader(std::string path, int fd, uint64_t file_bytes, size_t chunk_bytes)
    : path_(std::move(path)),
      fd_(fd),
      // No larger than the file (a job of many small files, a shard opening each again): the
      // buffer grows for a packet larger than it, a file written meanwhile included.
      chunk_bytes_(std::max<size_t>(std::min<uint64_t>(chunk_bytes, file_bytes), 64)) {
  stats_.file_bytes = file_bytes;
  buf_.resize(chunk_bytes_);
}

TraceFileReader::~TraceFileReader() {
  if (fd_ >= 0) close(fd_);
}

void TraceFileReader::Suspend() {
  if (fd_ < 0) return;
  // Go on from the first byte not consumed; what was read ahead is read again. In a Compressed
  // packet: from that packet, whose frame is decompressed again (its packets are not kept).
  if (inflated_.pending()) {
    buf_offset_ = inflated_offset_;
    inflated_skip_ = inflated_taken_;
  } else {
    buf_offset_ += pos_;
  }
  pos_ = end_ = 0;
  eof_ = false;
  Release();
}

void TraceFileReader::Release() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  decltype(buf_)().swap(buf_);
  inflated_.Release();
  // libprotobuf keeps the cleared elements of a repeated field for reuse: a batch's worth.
  own_pool_ = BatchPool();
}

bool TraceFileReader::Resume() {
  int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  std::string problem;
  if (fd < 0) {
    problem = absl::StrCat("cannot reopen: ", std::strerror(errno));
  } else if (fstat(fd, &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) {
    problem = "the file was replaced while being read";
  } else if (lseek(fd, static_cast<off_t>(buf_offset_), SEEK_SET) < 0) {
    problem = absl::StrCat("cannot seek: ", std::strerror(errno));
  }
  if (!problem.empty()) {
    if (fd >= 0) close(fd);
    StopAt(TailProblem::kReadError, problem);
    return false;
  }
  fd_ = fd;
  buf_.resize(chunk_bytes_);
  return true;
}

absl::StatusOr<std::unique_ptr<TraceFileReader>> TraceFileReader::Open(const std::string& path,
                                                                       size_t chunk_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string msg = absl::StrCat("cannot open ", path, ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("cannot stat ", path, ": ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file",
                     S_ISDIR(st.st_mode) ? " (a directory; give a trace file)" : ""));
  }
  if (st.st_size == 0) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": empty file (0 bytes), not a trace: the process wrote nothing before it ended"));
  }
  std::unique_ptr<TraceFileReader> reader(
      new TraceFileReader(path, fd, static_cast<uint64_t>(st.st_size), chunk_bytes));
  reader->dev_ = st.st_dev;
  reader->ino_ = st.st_ino;

  Packet first;
  if (!reader->ReadPacket(&first)) {
    const TraceReadStats& s = reader->stats_;
    if (s.tail == TailProblem::kReadError) {
      return absl::DataLossError(absl::StrCat("cannot read ", path, ": ", s.tail_detail));
    }
    // A file cut inside its header packet (the process killed, or the disk full, while the
    // header was written) is a trace with nothing in it yet, not some other file: every byte it
    // has matches the start of a header. The buffer holds the whole first chunk of the file.
    const HeaderStart start = CompareWithHeaderStart(
        std::string_view(reader->buf_.data() + reader->pos_, reader->end_ - reader->pos_));
    const bool cut = s.tail == TailProblem::kCutInPacket || s.tail == TailProblem::kCutInFraming;
    if (start != HeaderStart::kNo && cut) {
      return absl::DataLossError(absl::StrFormat(
          "%s: trace header cut short (file of %d bytes): the process ended, or the disk filled, "
          "while the header was being written",
          path, s.file_bytes));
    }
    if (s.tail == TailProblem::kNone) {  // the file shrank to nothing after fstat
      return absl::InvalidArgumentError(absl::StrCat(path, ": empty file, not a trace"));
    }
    if (start == HeaderStart::kMagic) {
      return absl::DataLossError(
          absl::StrCat(path, ": corrupt trace header: ", s.TailDescription()));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an idlescope trace (no trace header at the start of the file)"));
  }
  if (first.data_case() != Packet::kHeader || first.header().magic() != kTraceMagic) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not an idlescope trace (the first packet is not a header with magic IDLESCOPE)"));
  }
  const uint32_t version = first.header().format_version();
  if (version < kTraceFormatV1 || version > kTraceFormatVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: unsupported trace format version %d (this idlescope reads versions %d to %d); "
        "use the idlescope that wrote it",
        path, version, kTraceFormatV1, kTraceFormatVersion));
  }
  reader->header_ = std::move(*first.mutable_header());
  reader->expander_ = FormatExpander(version);
  return reader;
}

bool TraceFileReader::Next(Packet* packet) {
  if (done_) return false;
  if (fd_ < 0 && !Resume()) {
    Release();
    return false;
  }
  if (ReadPacket(packet)) return true;
  Release();
  return false;
}

bool TraceFileReader::Fill(size_t n) {
  if (end_ - pos_ >= n) return true;
  if (pos_ > 0) {
    // Move the unread bytes to the front so the buffer never grows past chunk or packet size.
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    buf_offset_ += pos_;
    end_ -= pos_;
    pos_ = 0;
  }
  if (buf_.size() < n) {
    buf_.resize(n);
  } else if (buf_.size() > chunk_bytes_ && n <= chunk_bytes_ && end_ <= chunk_bytes_) {
    // Back to the chunk size after an oversized packet: one large packet early in a long trace
    // must not keep its buffer for the rest of the read.
    buf_.resize(chunk_bytes_);
    buf_.shrink_to_fit();
  }
  while (end_ < n && !eof_) {
    ssize_t got = read(fd_, buf_.data() + end_, buf_.size() - end_);
    if (got < 0) {
      if (errno == EINTR) continue;
      StopAt(TailProblem::kReadError, std::strerror(errno));
      eof_ = true;
      return false;
    }
    if (got == 0) {
      eof_ = true;
      // The file may have grown since fstat (a live trace): count what is really there.
      stats_.file_bytes = std::max<uint64_t>(stats_.file_bytes, buf_offset_ + end_);
      break;
    }
    end_ += static_cast<size_t>(got);
  }
  return end_ >= n;
}

bool TraceFileReader::ReadVarint(size_t* at, uint64_t* value, bool* cut) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ + *at >= end_) {
      *cut = true;
      return false;
    }
    uint8_t byte = static_cast<uint8_t>(buf_[pos_ + *at]);
    ++*at;
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  *cut = false;
  return false;
}

void TraceFileReader::StopAt(TailProblem problem, std::string detail) {
  done_ = true;
  if (stats_.tail != TailProblem::kNone) return;  // keep the first problem
  stats_.tail = problem;
  stats_.tail_detail = std::move(detail);
  if (problem != TailProblem::kNone) {
    stats_.dropped_bytes =
        stats_.file_bytes > stats_.good_end_offset ? stats_.file_bytes - stats_.good_end_offset : 0;
  }
}

bool TraceFileReader::ReadPacket(Packet* packet) {
  if (inflated_.pending()) return ReadInflatedPacket(packet);
  while (!done_) {
    Fill(kMaxFramingBytes);
    if (done_) return false;  // read error
    if (pos_ == end_) {       // clean end at a packet boundary
      done_ = true;
      return false;
    }
    const uint64_t offset = buf_offset_ + pos_;
    size_t at = 0;
    uint64_t tag = 0;
    bool cut = false;
    if (!ReadVarint(&at, &tag, &cut)) {
      StopAt(cut ? TailProblem::kCutInFraming : TailProblem::kBadFraming,
             cut ? "" : "overlong tag varint");
      return false;
    }
    const uint64_t field = tag >> 3;
    const int wire_type = static_cast<int>(tag & 7);
    if (field == 0 || (field == 1 && tag != kPacketTag) ||
        !(wire_type == 0 || wire_type == 1 || wire_type == 2 || wire_type == 5)) {
      StopAt(TailProblem::kBadFraming,
             absl::StrFormat("byte 0x%02x is not a packet tag", static_cast<uint8_t>(buf_[pos_])));
      return false;
    }
    uint64_t length = 0;
    if (wire_type == 0 || wire_type == 2) {
      if (!ReadVarint(&at, &length, &cut)) {
        StopAt(cut ? TailProblem::kCutInFraming : TailProblem::kBadFraming,
               cut ? "" : "overlong length varint");
        return false;
      }
      if (wire_type == 0) length = 0;  // the varint was the value itself
    } else {
      length = wire_type == 1 ? 8 : 4;
    }
    if (length > kMaxPacketBytes) {
      StopAt(TailProblem::kOversizedPacket,
             absl::StrFormat("length %d exceeds the %d MiB limit", length, kMaxPacketBytes >> 20));
      return false;
    }
    const uint64_t total = at + length;
    if (offset + total > stats_.file_bytes) {
      // Check the real size before deciding: a live trace may have grown since fstat.
      struct stat st;
      if (fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) > stats_.file_bytes) {
        stats_.file_bytes = static_cast<uint64_t>(st.st_size);
      }
      if (offset + total > stats_.file_bytes) {
        StopAt(TailProblem::kCutInPacket,
               absl::StrFormat("a packet of %d bytes at offset %d, the file ends %d bytes into it",
                               total, offset, stats_.file_bytes - offset));
        return false;
      }
    }
    if (!Fill(total)) {
      if (stats_.tail == TailProblem::kNone) {
        StopAt(TailProblem::kCutInPacket, "the file shrank while being read");
      }
      return false;
    }
    if (tag != kPacketTag) {
      // Another Trace field: unknown to formats v1 and v2, skipped and counted (readers ignore
      // unknown fields, proto/trace.proto "Compatibility").
      pos_ += total;
      stats_.bytes_read += total;
      stats_.good_end_offset = offset + total;
      ++stats_.skipped_trace_fields;
      ++stats_.unknown_fields;
      continue;
    }
    if (!ParsePacket(buf_.data() + pos_ + at, static_cast<size_t>(length), packet)) {
      StopAt(TailProblem::kUnparseablePacket,
             absl::StrFormat("a packet of %d bytes at offset %d does not parse", length, offset));
      return false;
    }
    // Counted before expansion: a v2 run's own messages disappear in it.
    const uint64_t unknown = CountUnknownFields(*packet);
    if (packet->has_compressed()) {
      stats_.unknown_fields += unknown;
      if (!Inflate(*packet, offset, total)) return false;
      pos_ += total;
      if (inflated_.pending()) return ReadInflatedPacket(packet);
      ++stats_.compressed_packets;  // a frame of no packets
      Count(*packet, 0, offset + total, total);
      continue;
    }
    std::string error;
    if (!expander_.Expand(packet, &error)) {
      StopAt(TailProblem::kUnparseablePacket,
             absl::StrFormat("a packet of %d bytes at offset %d: %s", length, offset, error));
      return false;
    }
    pos_ += total;
    last_packet_offset_ = offset;
    last_packet_compressed_ = false;
    ++stats_.packets;
    Count(*packet, unknown, offset + total, total);
    return true;
  }
  return false;
}

bool TraceFileReader::Inflate(const Packet& packet, uint64_t offset, uint64_t total) {
  std::string error;
  if (expander_.version() < kTraceFormatV4) {
    error = absl::StrFormat("format v%d has no compressed packets", expander_.version());
  } else if (inflated_.Inflate(packet.compressed().zstd(), &error)) {
    inflated_offset_ = offset;
    inflated_bytes_ = total;
    inflated_taken_ = 0;
    for (; inflated_skip_ > 0 && inflated_.pending(); --inflated_skip_) {
      inflated_.Next();
      ++inflated_taken_;
    }
    return true;
  }
  StopAt(
      TailProblem::kUnparseablePacket,
      absl::StrFormat("the compressed packet of %d bytes at offset %d: %s", total, offset, error));
  return false;
}

bool TraceFileReader::ReadInflatedPacket(Packet* packet) {
  const std::string_view bytes = inflated_.Next();
  const bool parsed = ParsePacket(bytes.data(), bytes.size(), packet);
  const uint64_t unknown = parsed ? CountUnknownFields(*packet) : 0;
  std::string error;
  if (!parsed || packet->has_compressed() || !expander_.Expand(packet, &error)) {
    if (error.empty()) error = parsed ? "compressed again" : "does not parse";
    StopAt(TailProblem::kUnparseablePacket,
           absl::StrFormat("packet %d of the compressed packet at offset %d: %s",
                           inflated_taken_ + 1, inflated_offset_, error));
    return false;
  }
  ++inflated_taken_;
  last_packet_offset_ = inflated_offset_;
  last_packet_compressed_ = true;
  ++stats_.packets;
  if (inflated_.pending()) {
    Count(*packet, unknown, stats_.good_end_offset, 0);
  } else {
    ++stats_.compressed_packets;
    Count(*packet, unknown, inflated_offset_ + inflated_bytes_, inflated_bytes_);
  }
  return true;
}

void TraceFileReader::Count(const Packet& packet, uint64_t unknown, uint64_t end,
                            uint64_t framed_bytes) {
  stats_.bytes_read += framed_bytes;
  stats_.good_end_offset = end;
  stats_.unknown_fields += unknown;
  stats_.launch_runs = expander_.launch_runs();
  stats_.run_launches = expander_.run_launches();
  stats_.kernel_runs = expander_.kernel_runs();
  stats_.run_kernels = expander_.run_kernels();
  stats_.undefined_comm_ids = expander_.undefined_comm_ids();
  if (packet.data_case() == Packet::kFooter) stats_.footer_seen = true;
}

namespace {

template <typename Batch>
void Keep(std::vector<std::unique_ptr<Batch>>* kept, Batch* batch, size_t max_kept) {
  if (kept->size() < max_kept) {
    kept->emplace_back(batch);
  } else {
    delete batch;
  }
}

}  // namespace

bool TraceFileReader::ParsePacket(const char* data, size_t length, Packet* packet) {
  // A Packet that is one batch: the tag of Packet.events (0x1a) or Packet.gpu (0x22), a varint
  // length, the batch to the end.
  const uint8_t tag = length >= 2 ? static_cast<uint8_t>(data[0]) : 0;
  if (tag == 0x1a || tag == 0x22) {
    uint64_t batch_length = 0;
    size_t at = 1;
    for (int shift = 0; at < length && shift < 35; shift += 7) {
      const uint8_t byte = static_cast<uint8_t>(data[at++]);
      batch_length |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        if (at + batch_length != length) break;  // more fields: the general way below
        const int size = static_cast<int>(batch_length);
        if (!UnknownFieldsOf(*packet).empty()) packet->Clear();
        if (tag == 0x1a) {
          if (packet->has_gpu()) Keep(&pool_->gpu, packet->release_gpu(), pool_->max_kept);
          if (!packet->has_events() && !pool_->events.empty()) {
            packet->set_allocated_events(pool_->events.back().release());
            pool_->events.pop_back();
          }
          return packet->mutable_events()->ParseFromArray(data + at, size);
        }
        if (packet->has_events()) Keep(&pool_->events, packet->release_events(), pool_->max_kept);
        if (!packet->has_gpu() && !pool_->gpu.empty()) {
          packet->set_allocated_gpu(pool_->gpu.back().release());
          pool_->gpu.pop_back();
        }
        return packet->mutable_gpu()->ParseFromArray(data + at, size);
      }
    }
  }
  // Any other packet (interned data comes every few batches) would free the batch held with it.
  if (packet->has_events()) Keep(&pool_->events, packet->release_events(), pool_->max_kept);
  if (packet->has_gpu()) Keep(&pool_->gpu, packet->release_gpu(), pool_->max_kept);
  return packet->ParseFromArray(data, static_cast<int>(length));
}

uint64_t CountUnknownFields(const Packet& packet) {
  uint64_t n = 0;
  ForEachMessage(packet, [&n](const auto& m) { n += UnknownFieldsOf(m).field_count(); });
  return n;
}

void DescribeUnknownFields(const Packet& packet, std::vector<std::string>* out) {
  ForEachMessage(packet, [out](const auto& m) {
    const google::protobuf::UnknownFieldSet& unknown = UnknownFieldsOf(m);
    for (int i = 0; i < unknown.field_count(); ++i) {
      out->push_back(absl::StrCat(m.GetDescriptor()->name(), ":", unknown.field(i).number()));
    }
  });
}

absl::StatusOr<std::vector<std::string>> ListTraceFiles(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    int err = errno;
    return absl::NotFoundError(
        absl::StrCat("cannot open directory ", dir, ": ", std::strerror(err)));
  }
  std::vector<std::string> files;
  const std::string suffix = kTraceFileSuffix;
  while (struct dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix) {
      continue;
    }
    std::string full = absl::StrCat(dir, dir.empty() || dir.back() == '/' ? "" : "/", name);
    if (entry->d_type != DT_REG) {
      struct stat st;  // DT_UNKNOWN on some filesystems; symlinks to files count too
      if (stat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    }
    files.push_back(std::move(full));
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<int64_t> EventStartTimes(const EventBatch& batch) {
  std::vector<int64_t> times;
  times.reserve(batch.events_size());
  // Unsigned sums: a corrupt file must not cause signed overflow (wraps like the encoder's deltas).
  uint64_t t = 0;
  for (const Event& e : batch.events()) {
    t += static_cast<uint64_t>(e.ts());
    times.push_back(static_cast<int64_t>(t));
  }
  return times;
}

std::vector<int64_t> GpuActivityStartTimes(const GpuBatch& batch) {
  std::vector<int64_t> times;
  times.reserve(batch.activities_size());
  uint64_t t = 0;
  for (const GpuActivity& a : batch.activities()) {
    t += static_cast<uint64_t>(a.start());
    times.push_back(static_cast<int64_t>(t));
  }
  return times;
}

}  // namespace idlescope
