// Streaming reader of one idlescope trace file (proto/trace.proto, formats v1 to v4).
//
// A trace file is a stream of `Trace.packet` fields: tag 0x0a, varint length, Packet bytes
// (Perfetto's framing). The reader reads the file in chunks and decodes one Packet at a time,
// so memory stays bounded by the chunk size and the largest packet, never the file size.
//
// A file cut by a crash or SIGKILL ends in a partial packet. The reader keeps every complete
// packet, stops at the first packet it cannot decode, and reports the rest in stats(): the offset
// where the good data ends, how many bytes were dropped and why. That is never an error: only a
// file that cannot be opened, is empty, or does not start with an idlescope Header is.
//
// Packets of a v2 file come out in v1's shape (analyzer/trace/trace_format.h): one Event per call,
// absolute correlation ids, communicator hashes (KeepRuns: runs as stored). A v4 Compressed
// packet is never handed out: the packets it holds are, one by one, as if they were in the file.
// Callers never look at the version.
//
// Typical use:
//   ASSIGN_OR_RETURN(auto reader, TraceFileReader::Open(path));
//   const idlescope::Header& header = reader->header();
//   idlescope::Packet packet;
//   while (reader->Next(&packet)) { ... }
//   if (reader->stats().truncated()) { ... reader->stats().TailDescription() ... }
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzer/trace/compressed_packets.h"
#include "analyzer/trace/trace_format.h"
#include "trace.pb.h"

namespace idlescope {

// Header.magic.
inline constexpr char kTraceMagic[] = "IDLESCOPE";
// File name suffix of trace files written by the recorder.
inline constexpr char kTraceFileSuffix[] = ".idlescope";
// A length prefix above this is treated as corruption, not as a request to allocate: the
// recorder flushes at least every second with bounded per-thread buffers, so real packets are a
// few MiB at most.
inline constexpr uint64_t kMaxPacketBytes = 64ull << 20;

// Why the reader stopped before the end of the file.
enum class TailProblem {
  kNone,               // the file ends exactly at a packet boundary
  kCutInPacket,        // the last packet's length reaches past the end of the file
  kCutInFraming,       // the file ends inside a packet's tag or length prefix
  kOversizedPacket,    // a length prefix above kMaxPacketBytes
  kBadFraming,         // bytes that are not a Trace field (wrong tag/wire type)
  kUnparseablePacket,  // a complete packet whose bytes are not a valid Packet (or a v2 batch
                       // whose launch runs are inconsistent, or a v4 frame that does not
                       // decompress into whole packets)
  kReadError,          // read(2) failed
};

struct TraceReadStats {
  uint64_t file_bytes = 0;          // size of the file when opened (fstat), or bytes seen if larger
  uint64_t packets = 0;             // complete packets decoded, the header included (v4: those in
                                    // Compressed packets, not the Compressed packets themselves)
  uint64_t compressed_packets = 0;  // v4 Compressed packets whose packets were all handed out
  // Bytes consumed by complete packets (framing included), and the file offset where the last
  // of them ends: a Compressed packet's once its last packet was handed out.
  uint64_t bytes_read = 0;
  uint64_t good_end_offset = 0;
  uint64_t dropped_bytes = 0;         // bytes after good_end_offset that were not decoded
  uint64_t unknown_fields = 0;        // unknown fields seen (Trace, Packet and message levels)
  uint64_t skipped_trace_fields = 0;  // Trace-level fields other than `packet` (skipped)
  bool footer_seen = false;
  uint64_t launch_runs = 0;         // v2 LaunchRuns expanded into their launches
  uint64_t run_launches = 0;        // the launches they held
  uint64_t kernel_runs = 0;         // v2 KernelRuns expanded into their kernel records
  uint64_t run_kernels = 0;         // the kernel records they held
  uint64_t undefined_comm_ids = 0;  // v2 communicator ids used without an InternedComm (comm 0)
  TailProblem tail = TailProblem::kNone;
  std::string tail_detail;  // extra detail for the tail problem (e.g. the length prefix)

  bool truncated() const { return tail != TailProblem::kNone; }
  // One line for the user, empty when the file ends cleanly, e.g.
  // "truncated: 118 bytes after offset 4096 were dropped (cut inside a packet)".
  std::string TailDescription() const;
};

// Event and GPU batch messages not held by a packet, kept with the messages they contain for the
// next batch of their kind (TraceFileReader::ParsePacket).
struct BatchPool {
  // Per kind: more are freed. A job's readers hold one batch each, of either kind: the pool
  // needs as many as there are readers never to allocate again (JobReader sets it so).
  size_t max_kept = 16;
  std::vector<std::unique_ptr<EventBatch>> events;
  std::vector<std::unique_ptr<GpuBatch>> gpu;
};

class TraceFileReader {
 public:
  // Default read size; packets larger than this grow the buffer up to the packet's size.
  static constexpr size_t kDefaultChunkBytes = 1 << 20;

  // Opens `path` and reads its Header packet. Errors (one line each, naming the file):
  // cannot open (strerror), not a regular file, empty file, "not an idlescope trace" (the first
  // packet is not a Header with magic IDLESCOPE), "trace header cut short" (every byte of the file
  // matches the start of a header, even before the magic is complete), "corrupt trace header"
  // (the magic is there, the header does not parse), unsupported format_version (not 1 to 4).
  static absl::StatusOr<std::unique_ptr<TraceFileReader>> Open(
      const std::string& path, size_t chunk_bytes = kDefaultChunkBytes);

  ~TraceFileReader();
  TraceFileReader(const TraceFileReader&) = delete;
  TraceFileReader& operator=(const TraceFileReader&) = delete;

  // The next packet after the header. Returns false at the end of the file, or at the first
  // packet that cannot be decoded (see stats().tail); every packet before it was returned. The
  // file is closed and its buffers freed when it returns false. A suspended reader reopens the
  // file here first (a file that cannot be reopened, or is another file now, ends as a read
  // error).
  bool Next(Packet* packet);

  // Closes the file and frees the read buffers, keeping the header, the stats and where to go
  // on: what a job of many more files than it may hold open (RLIMIT_NOFILE) or in memory asks.
  // The bytes read ahead are read again on resume.
  void Suspend();
  bool suspended() const { return fd_ < 0 && !done_; }

  // Batch messages kept for reuse, shared by the readers of a job (nullptr: the reader's own).
  // It must outlive the reader's reads.
  void ShareBatchPool(BatchPool* pool) { pool_ = pool != nullptr ? pool : &own_pool_; }
  bool done() const { return done_; }
  // Packets keep their LaunchRuns and KernelRuns as stored (FormatExpander::KeepRuns): for a
  // caller that reads the runs' columns itself, saving a message per launch and kernel.
  void KeepRuns() { expander_.KeepRuns(); }
  bool keeps_runs() const { return expander_.keeps_runs(); }

  const Header& header() const { return header_; }
  uint32_t format_version() const { return header_.format_version(); }
  const TraceReadStats& stats() const { return stats_; }
  const std::string& path() const { return path_; }
  // File offset of the packet most recently returned by Next() (its tag byte); of the
  // Compressed packet that held it, where one did.
  uint64_t last_packet_offset() const { return last_packet_offset_; }
  // Whether the packet most recently returned by Next() was in a Compressed packet.
  bool last_packet_compressed() const { return last_packet_compressed_; }
  // Bytes the reader holds for reading: the chunk size, or the packet being read when larger.
  size_t buffer_bytes() const { return buf_.capacity(); }

 private:
  TraceFileReader(std::string path, int fd, uint64_t file_bytes, size_t chunk_bytes);

  // Reopens a suspended file at resume_offset_; false (the read stopped) when it cannot.
  bool Resume();
  // Closes the file and frees the buffers and the reused messages.
  void Release();

  // Makes at least `n` bytes available at buf_[pos_]; false at end of file (or read error).
  bool Fill(size_t n);
  // Decodes a varint at buf_[pos_ + *at]; advances *at. Returns false if the varint is cut by the
  // end of the file (*cut = true) or is longer than 10 bytes (*cut = false).
  bool ReadVarint(size_t* at, uint64_t* value, bool* cut);
  // Reads the next framed packet into `packet`; false (with stats_.tail set) when none.
  bool ReadPacket(Packet* packet);
  // Parses one packet's bytes into `packet`. Event and GPU batches (nearly every packet) are
  // parsed into the batch `packet` holds, whose cleared messages libprotobuf reuses. A batch of
  // the other kind, or held when another packet comes (interned data, every few batches), is not
  // cleared through the oneof (libprotobuf would free it with every Event it keeps, and allocate
  // them all again for the next batch of that kind): it is released into the pool, and a batch
  // of the right kind taken from it.
  bool ParsePacket(const char* data, size_t length, Packet* packet);
  // A Compressed packet of `total` bytes at `offset`, parsed into `packet`: its frame
  // decompressed, and the packets a suspended read handed out already skipped. False (stopped)
  // for a frame that is corrupt or in a file of a version without them.
  bool Inflate(const Packet& packet, uint64_t offset, uint64_t total);
  // The next packet of the frame Inflate took apart; false (stopped) when it is corrupt.
  bool ReadInflatedPacket(Packet* packet);
  // Counts a packet handed out, which ends at file offset `end`; `framed_bytes` more bytes of the
  // file were consumed.
  void Count(const Packet& packet, uint64_t unknown, uint64_t end, uint64_t framed_bytes);
  void StopAt(TailProblem problem, std::string detail);

  std::string path_;
  int fd_ = -1;
  bool eof_ = false;
  bool done_ = false;
  size_t chunk_bytes_;
  // Not zeroed when it grows (read(2) fills it): a job of many files opens and resumes each.
  template <typename T>
  struct Uninitialized : std::allocator<T> {
    template <typename U>
    struct rebind {
      using other = Uninitialized<U>;
    };
    template <typename U>
    void construct(U* p) noexcept {
      ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  };
  std::vector<char, Uninitialized<char>> buf_;
  size_t pos_ = 0;           // next unread byte in buf_
  size_t end_ = 0;           // end of valid bytes in buf_
  uint64_t buf_offset_ = 0;  // file offset of buf_[0]
  dev_t dev_ = 0;            // the file's identity, checked on resume
  ino_t ino_ = 0;
  uint64_t last_packet_offset_ = 0;
  bool last_packet_compressed_ = false;
  // v4: the packets of the Compressed packet being handed out, where it is in the file, and how
  // many of its packets were handed out (a suspended read resumes at the Compressed packet and
  // skips as many: inflated_skip_).
  PacketInflater inflated_;
  uint64_t inflated_offset_ = 0;
  uint64_t inflated_bytes_ = 0;
  uint64_t inflated_taken_ = 0;
  uint64_t inflated_skip_ = 0;
  Header header_;
  BatchPool own_pool_;
  BatchPool* pool_ = &own_pool_;
  FormatExpander expander_{kTraceFormatV1};
  TraceReadStats stats_;
};

// Counts unknown fields in a packet: on the Packet itself, its payload message, and the messages
// nested in it (events, GPU activities, interned entries, modules, header clock/config).
uint64_t CountUnknownFields(const Packet& packet);

// The field numbers of the unknown fields counted by CountUnknownFields, for reports
// ("field 99 in Event"). Appends "Message:number" strings.
void DescribeUnknownFields(const Packet& packet, std::vector<std::string>* out);

// Trace files (*.idlescope) in `dir`, as full paths, sorted by name. Errors: cannot open the
// directory (strerror). An empty result is not an error.
absl::StatusOr<std::vector<std::string>> ListTraceFiles(const std::string& dir);

// Absolute timestamps (trace clock, ns) of a batch's events / activities, undoing the delta
// encoding: the first `ts` is absolute, each later one relative to the previous start. For a v2
// batch, after the reader expanded it (each launch of a run is one Event).
std::vector<int64_t> EventStartTimes(const EventBatch& batch);
std::vector<int64_t> GpuActivityStartTimes(const GpuBatch& batch);

}  // namespace idlescope
