#include "analyzer/shard/summary_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzer/shard/plan.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/wire_format_lite.h"

namespace idlescope {
namespace {

using google::protobuf::internal::WireFormatLite;

// Summary.cross_rank's field number (proto/summary.proto).
constexpr int kCrossRankField = shard::Summary::kCrossRankFieldNumber;

// Hashes the bytes a CodedInputStream reads from `in` as they pass, those it backs up excluded
// (it backs up what it buffered past its limit when it is destroyed): Digest() once it is.
class HashingInputStream : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit HashingInputStream(google::protobuf::io::ZeroCopyInputStream* in) : in_(in) {}
  bool Next(const void** data, int* size) override {
    HashLast();
    if (!in_->Next(data, size)) return false;
    last_ = *data;
    last_size_ = *size;
    return true;
  }
  void BackUp(int count) override {
    last_size_ -= count;
    in_->BackUp(count);
  }
  bool Skip(int count) override {
    const void* data;
    int size;
    while (count > 0) {
      if (!Next(&data, &size)) return false;
      if (size > count) BackUp(size - count);
      count -= std::min(size, count);
    }
    return true;
  }
  int64_t ByteCount() const override { return in_->ByteCount(); }
  uint64_t Digest() {
    HashLast();
    return hash_.Digest();
  }

 private:
  void HashLast() {
    if (last_size_ > 0) hash_.Update(last_, static_cast<size_t>(last_size_));
    last_size_ = 0;
  }
  google::protobuf::io::ZeroCopyInputStream* in_;
  const void* last_ = nullptr;
  int last_size_ = 0;
  ContentHash hash_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SummaryWriter>> SummaryWriter::Create(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "wbe");
  if (file == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<SummaryWriter>(new SummaryWriter(file));
}

absl::StatusOr<std::unique_ptr<SummaryWriter>> SummaryWriter::Create(int fd) {
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  std::FILE* file = copy >= 0 ? fdopen(copy, "wb") : nullptr;
  if (file == nullptr) {
    const int error = errno;
    if (copy >= 0) close(copy);
    return absl::InternalError(absl::StrCat("cannot write the summary: ", std::strerror(error)));
  }
  return std::unique_ptr<SummaryWriter>(new SummaryWriter(file));
}

SummaryWriter::~SummaryWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status SummaryWriter::Write(const std::string& bytes) {
  if (file_ == nullptr) return absl::FailedPreconditionError("summary already finished");
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    return absl::InternalError(absl::StrCat("cannot write the summary: ", std::strerror(errno)));
  }
  hash_.Update(bytes.data(), bytes.size());
  bytes_ += bytes.size();
  return absl::OkStatus();
}

absl::Status SummaryWriter::AddBatch(const std::string& batch) {
  shard::Summary part;
  part.add_cross_rank(batch);
  return Write(part.SerializeAsString());
}

absl::Status SummaryWriter::Finish(const shard::Summary& rest) {
  absl::Status status = Write(rest.SerializeAsString());
  if (status.ok()) status = Write(ChecksumField(hash_.Digest()));
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (status.ok() && !closed) {
    return absl::InternalError(absl::StrCat("cannot write the summary: ", std::strerror(errno)));
  }
  return status;
}

absl::StatusOr<std::unique_ptr<SummaryFile>> SummaryFile::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    const int error = errno;
    if (fd >= 0) close(fd);
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
  }
  auto file = std::make_unique<SummaryFile>();
  file->path_ = path;
  // The file's last field is its checksum (a file without one is an older idlescope's, which
  // its format tells, or was cut).
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  std::string tail(std::min<uint64_t>(size, kChecksumFieldSize), '\0');
  const bool sealed = pread(fd, tail.data(), tail.size(), static_cast<off_t>(size - tail.size())) ==
                          static_cast<ssize_t>(tail.size()) &&
                      HasChecksumField(tail);
  const uint64_t body = sealed ? size - kChecksumFieldSize : size;
  // Every top-level field but the record batches is copied into `state`; the batches are noted
  // with their hashes. Every byte read is hashed as it passes: what is checked is what was read.
  std::string state;
  bool ok = body <= static_cast<uint64_t>(std::numeric_limits<int>::max());
  uint64_t hash = 0;
  if (ok) {
    google::protobuf::io::FileInputStream raw(fd);
    HashingInputStream hashed(&raw);
    {
      google::protobuf::io::CodedInputStream in(&hashed);
      in.PushLimit(static_cast<int>(body));
      google::protobuf::io::StringOutputStream out_raw(&state);
      google::protobuf::io::CodedOutputStream out(&out_raw);
      std::string batch;
      while (ok) {
        const uint32_t tag = in.ReadTag();
        if (tag == 0) {
          ok = in.ConsumedEntireMessage();  // the end of the file, not a bad tag
          break;
        }
        if (WireFormatLite::GetTagFieldNumber(tag) == kCrossRankField &&
            WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
          uint32_t length = 0;
          if (!in.ReadVarint32(&length)) {
            ok = false;
            break;
          }
          const uint64_t offset = static_cast<uint64_t>(in.CurrentPosition());
          ok = in.ReadString(&batch, static_cast<int>(length));
          file->batches_.push_back({offset, length, HashBytes(batch)});
        } else {
          ok = WireFormatLite::SkipField(&in, tag, &out);
        }
      }
      file->bytes_ = size;
    }
    hash = hashed.Digest();
  }
  close(fd);
  if (sealed) {
    if (absl::Status s = CheckChecksumField(tail, hash, "summary"); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
    }
  }
  if (!ok) return absl::InvalidArgumentError(absl::StrCat(path, ": not an idlescope summary"));
  absl::Status status = ParseShardMessage(state, "summary", &file->state_);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.message()));
  if (!sealed) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", CheckChecksumField(tail, hash, "summary").message()));
  }
  return file;
}

std::string SummaryFile::Batch(size_t i) const {
  if (i >= batches_.size()) return {};
  std::string bytes(batches_[i].length, '\0');
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t got = pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(batches_[i].offset));
  close(fd);
  if (got != static_cast<ssize_t>(bytes.size()) || HashBytes(bytes) != batches_[i].hash) return {};
  return bytes;
}

}  // namespace idlescope
