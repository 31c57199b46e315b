#include "analyzer/shard/summary_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (status.ok() && !closed) {
    return absl::InternalError(absl::StrCat("cannot write the summary: ", std::strerror(errno)));
  }
  return status;
}

absl::StatusOr<std::unique_ptr<SummaryFile>> SummaryFile::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  auto file = std::make_unique<SummaryFile>();
  file->path_ = path;
  // Every top-level field but the record batches is copied into `state`; the batches are noted.
  std::string state;
  {
    google::protobuf::io::FileInputStream raw(fd);
    google::protobuf::io::CodedInputStream in(&raw);
    google::protobuf::io::StringOutputStream out_raw(&state);
    google::protobuf::io::CodedOutputStream out(&out_raw);
    bool ok = true;
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
        file->batches_.push_back({static_cast<uint64_t>(in.CurrentPosition()), length});
        ok = in.Skip(static_cast<int>(length));
      } else {
        ok = WireFormatLite::SkipField(&in, tag, &out);
      }
    }
    file->bytes_ = static_cast<uint64_t>(in.CurrentPosition());
    if (!ok) {
      close(fd);
      return absl::InvalidArgumentError(absl::StrCat(path, ": not an idlescope summary"));
    }
  }
  close(fd);
  absl::Status status = ParseShardMessage(state, "summary", &file->state_);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.message()));
  return file;
}

std::string SummaryFile::Batch(size_t i) const {
  if (i >= batches_.size()) return {};
  std::string bytes(batches_[i].length, '\0');
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t got = pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(batches_[i].offset));
  close(fd);
  if (got != static_cast<ssize_t>(bytes.size())) return {};
  return bytes;
}

}  // namespace idlescope
