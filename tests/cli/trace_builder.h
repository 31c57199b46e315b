// Builds trace files with libprotobuf for the reader and CLI tests: the same framing the recorder
// writes (each packet as field 1 of idlescope.Trace), with the packet boundaries kept so tests can
// cut the bytes anywhere and know what a reader must keep.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace.pb.h"

namespace idlescope::testing {

// Serialized bytes of a trace and the file offset where each packet ends.
struct TraceBytes {
  std::string bytes;
  std::vector<uint64_t> packet_ends;    // packet_ends[i] = offset just past packet i
  std::vector<uint64_t> framing_bytes;  // tag + length prefix size of packet i
  std::vector<Packet> packets;          // as written (packet 0 is the header)
  // CompactToLatest only: per packet, what a reader gives back (v1's shape; the header says v2).
  std::vector<Packet> read_back;

  // What a reader gives back for packet i: read_back[i], or the packet itself (v1).
  const Packet& Expected(size_t i) const { return read_back.empty() ? packets[i] : read_back[i]; }

  void Add(const Packet& packet);
  // Appends `payload` as a framed packet without parsing it (for unknown or corrupt payloads).
  void AddRaw(const std::string& payload);
};

// A header as the recorder writes it (magic, version 1, pid/ppid, clock snapshot, ...).
Header MakeHeader(uint32_t pid, uint32_t ppid);

// A small realistic trace: header, interned strings/frames/stacks/streams/threads, event
// batches of CUDA copies, launches and file writes with stacks, a GPU batch, a notice and (when
// `footer`) a footer. Timestamps start at clock_ns + 1 ms.
TraceBytes MakeSampleTrace(bool footer = true);

// An EventBatch of `n` events of a typical mix, for benchmarks; ids refer to MakeSampleTrace's
// interned data.
EventBatch MakeEventBatch(uint32_t tid, uint64_t seq, int n, uint64_t seed);

// The same trace in the newest format, as the recorder writes it: every packet through
// FormatCompactor (analyzer/trace/trace_format.h), an Interned packet of communicator ids before a
// batch that uses new ones. `read_back` holds the v1 packets (an inserted Interned packet reads
// back as is).
TraceBytes CompactToLatest(const TraceBytes& v1);

// Varint encoding of `v` appended to `out`.
void AppendVarint(uint64_t v, std::string* out);

// Writes `bytes` to `path`; aborts the test on failure.
void WriteFile(const std::string& path, const std::string& bytes);

// A fresh empty directory under the test temp dir.
std::string MakeTempDir(const std::string& prefix);

}  // namespace idlescope::testing
