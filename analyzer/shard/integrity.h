// What lets the shard files (proto/summary.proto) travel between machines and be trusted: every
// index, plan and summary file ends with a checksum of its own bytes, and a plan made from
// `idlescope index` carries each trace file's identity (size, modification time, a hash of its
// content), which every map checks before it reads the file and again after. A summary carries
// its plan's job digest (the files' identities and the analysis options), which the merge
// compares with its plan's. So a trace changed or swapped after the index, a corrupt plan,
// index or summary, or a summary of another plan is a one-line error, never a report.
//
// The hash is XXH64 (Yann Collet's xxHash, 64-bit variant; the reference vectors are checked in
// tests/analyzer/integrity_test.cc): several GB/s on one core, so hashing a shard's files costs
// a few percent of the map's time (docs/scale-out.md, "Shard files are checked", has the
// figures), and a single bit flip or a swapped file goes unnoticed with odds of 2^-64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "summary.pb.h"

namespace idlescope {

// XXH64 with seed 0, of bytes given in pieces.
class ContentHash {
 public:
  ContentHash();
  void Update(const void* data, size_t size);
  uint64_t Digest() const;

 private:
  uint64_t lanes_[4];
  uint64_t total_ = 0;
  unsigned char pending_[32];
  size_t pending_size_ = 0;
};

uint64_t HashBytes(std::string_view bytes);

// XXH64 of the first `size` bytes of `fd`, read with pread. Errors: a read error, or the file
// shorter than `size` (one line naming `path`).
absl::StatusOr<uint64_t> HashFile(int fd, uint64_t size, const std::string& path);

// The identity of the trace file at `path`, now: its size and modification time, and the hash of
// its content. Errors (one line): cannot read it.
absl::StatusOr<shard::FileIdentity> IdentifyFile(const std::string& path);

// Whether the file at `path` is the one `indexed` identifies (size, time, content; with
// `content` false, size and time only: the cheap check after a map read it). Errors (one line):
// what changed, or that it cannot be read.
absl::Status CheckIdentity(const std::string& path, const shard::FileIdentity& indexed,
                           bool content);

// The plan's job digest: what each of its summaries carries (Summary.job), a hash of the plan
// without what the merge may change (its shards and their owners, the end hint), that is of its
// files' paths, identities, processes and clocks and of the analysis options.
uint64_t JobDigest(const shard::Plan& plan);

// The checksum field that ends every index, plan and summary file (proto/summary.proto: field
// `checksum`, number kChecksumField in each): its tag and the XXH64 of every byte before it.
inline constexpr int kChecksumField = 100;
inline constexpr size_t kChecksumFieldSize = 10;  // a two-byte tag and a fixed64
std::string ChecksumField(uint64_t hash);
// Whether `tail`, a file's last kChecksumFieldSize bytes, is a checksum field (of any hash).
bool HasChecksumField(std::string_view tail);
// Serialized message `bytes` followed by its checksum field: the file's content.
std::string Sealed(std::string bytes);
// Whether `tail`, a file's last kChecksumFieldSize bytes, is the checksum field of `hash` (the
// hash of the bytes before it): OK, or why not (one line; `what`: "plan", "summary", "index").
absl::Status CheckChecksumField(std::string_view tail, uint64_t hash, const char* what);

// Message `what` read from a whole file's `bytes`: its checksum checked, then its format
// (ParseShardMessage). A file of another format says so, not that it is corrupt.
absl::Status ParseShardFile(std::string_view bytes, const char* what,
                            google::protobuf::Message* out);

}  // namespace idlescope
