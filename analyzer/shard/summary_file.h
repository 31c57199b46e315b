// A shard's summary as a file (proto/summary.proto, Summary), written and read in bounded memory.
//
// The cross-rank records grow with the job's length (a few bytes per collective and per blamed
// call of each rank), the rest of a summary does not. So the map writes each batch of records into
// the file as soon as it is full, as a Summary holding only that `cross_rank` entry, and the rest
// of the summary last: protobuf reads concatenated messages as one (repeated fields append), so
// the file is one Summary for `protoc --decode` and for any reader. The merge reads a file's
// state (every field but the records) up front and the records one batch at a time when the
// replay reaches them, by offset: its memory is the shards' states and one batch per shard.
//
// The file ends with its checksum (integrity.h): the writer hashes every byte it writes, and the
// reader checks the whole file before it reads the state, and each batch again when it reads it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analyzer/shard/integrity.h"
#include "summary.pb.h"

namespace idlescope {

class SummaryWriter {
 public:
  // Writes to `path` (created, or truncated).
  static absl::StatusOr<std::unique_ptr<SummaryWriter>> Create(const std::string& path);
  // Writes to the open file `fd` (a copy of it: the caller closes its own).
  static absl::StatusOr<std::unique_ptr<SummaryWriter>> Create(int fd);
  ~SummaryWriter();

  // One serialized CrossRankBatch; Finish: the rest of the summary. Errors: the file's write.
  absl::Status AddBatch(const std::string& batch);
  absl::Status Finish(const shard::Summary& rest);
  uint64_t bytes() const { return bytes_; }

 private:
  explicit SummaryWriter(std::FILE* file) : file_(file) {}
  absl::Status Write(const std::string& bytes);
  std::FILE* file_;
  uint64_t bytes_ = 0;
  ContentHash hash_;  // of every byte written
};

class SummaryFile {
 public:
  // Reads the state of the summary at `path` and where its record batches lie. Errors (one line):
  // cannot read, not a summary, corrupt (its checksum), another format.
  static absl::StatusOr<std::unique_ptr<SummaryFile>> Open(const std::string& path);

  // Every field but cross_rank (empty there).
  const shard::Summary& state() const { return state_; }
  size_t batches() const { return batches_.size(); }
  // Batch `i`, read from the file; "" when it cannot be read or is not what was checked (the
  // file changed).
  std::string Batch(size_t i) const;
  uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  struct Span {
    uint64_t offset;
    uint32_t length;
    uint64_t hash;  // of its bytes, when the file was checked
  };
  std::string path_;
  shard::Summary state_;
  std::vector<Span> batches_;
  uint64_t bytes_ = 0;
};

}  // namespace idlescope
