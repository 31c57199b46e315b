#include "analyzer/shard/integrity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "analyzer/shard/plan.h"

namespace idlescope {
namespace {

// XXH64's constants and steps, as its specification (xxhash_spec.md, "XXH64 algorithm
// description") names them.
constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

constexpr uint64_t RotateLeft(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian loads, whatever the host's order (memcpy: no unaligned access).
uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
uint32_t Load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

uint64_t Round(uint64_t lane, uint64_t input) {
  lane += input * kPrime2;
  lane = RotateLeft(lane, 31);
  return lane * kPrime1;
}

uint64_t MergeLane(uint64_t hash, uint64_t lane) {
  hash ^= Round(0, lane);
  return hash * kPrime1 + kPrime4;
}

// The 32-byte stripes of `data`, into the four lanes; returns the bytes consumed.
size_t Stripes(uint64_t lanes[4], const unsigned char* data, size_t size) {
  size_t at = 0;
  for (; at + 32 <= size; at += 32) {
    lanes[0] = Round(lanes[0], Load64(data + at));
    lanes[1] = Round(lanes[1], Load64(data + at + 8));
    lanes[2] = Round(lanes[2], Load64(data + at + 16));
    lanes[3] = Round(lanes[3], Load64(data + at + 24));
  }
  return at;
}

// The checksum field's tag: field kChecksumField, wire type fixed64 (1), as a varint.
constexpr unsigned kChecksumTag = (kChecksumField << 3) | 1;
static_assert(kChecksumTag >= 128 && kChecksumTag < 16384, "the tag is two bytes");
static_assert(shard::FileIndexSet::kChecksumFieldNumber == kChecksumField &&
                  shard::Plan::kChecksumFieldNumber == kChecksumField &&
                  shard::Summary::kChecksumFieldNumber == kChecksumField,
              "every shard file ends with the same field");

int64_t ModificationTime(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

ContentHash::ContentHash() : lanes_{kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1}, pending_{} {}

void ContentHash::Update(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  total_ += size;
  if (pending_size_ > 0) {
    const size_t take = std::min(size, sizeof pending_ - pending_size_);
    std::memcpy(pending_ + pending_size_, bytes, take);
    pending_size_ += take;
    bytes += take;
    size -= take;
    if (pending_size_ < sizeof pending_) return;
    Stripes(lanes_, pending_, sizeof pending_);
    pending_size_ = 0;
  }
  const size_t done = Stripes(lanes_, bytes, size);
  std::memcpy(pending_, bytes + done, size - done);
  pending_size_ = size - done;
}

uint64_t ContentHash::Digest() const {
  uint64_t hash;
  if (total_ >= 32) {
    hash = RotateLeft(lanes_[0], 1) + RotateLeft(lanes_[1], 7) + RotateLeft(lanes_[2], 12) +
           RotateLeft(lanes_[3], 18);
    for (uint64_t lane : lanes_) hash = MergeLane(hash, lane);
  } else {
    hash = kPrime5;  // the seed, 0, + kPrime5
  }
  hash += total_;
  const unsigned char* p = pending_;
  size_t left = pending_size_;
  for (; left >= 8; p += 8, left -= 8) {
    hash ^= Round(0, Load64(p));
    hash = RotateLeft(hash, 27) * kPrime1 + kPrime4;
  }
  if (left >= 4) {
    hash ^= static_cast<uint64_t>(Load32(p)) * kPrime1;
    hash = RotateLeft(hash, 23) * kPrime2 + kPrime3;
    p += 4;
    left -= 4;
  }
  for (; left > 0; ++p, --left) {
    hash ^= *p * kPrime5;
    hash = RotateLeft(hash, 11) * kPrime1;
  }
  hash ^= hash >> 33;
  hash *= kPrime2;
  hash ^= hash >> 29;
  hash *= kPrime3;
  hash ^= hash >> 32;
  return hash;
}

uint64_t HashBytes(std::string_view bytes) {
  ContentHash hash;
  hash.Update(bytes.data(), bytes.size());
  return hash.Digest();
}

absl::StatusOr<uint64_t> HashFile(int fd, uint64_t size, const std::string& path) {
  // pread, not mmap: a file cut short while it is hashed is an error here, a SIGBUS there. The
  // copy from the page cache bounds the rate (3-3.5 GB/s against 10 GB/s in memory), still a few
  // percent of a map's time (docs/scale-out.md).
  std::vector<char> buffer(1 << 20);
  ContentHash hash;
  for (uint64_t at = 0; at < size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - at));
    const ssize_t got = pread(fd, buffer.data(), want, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return absl::DataLossError(absl::StrFormat("cannot read %s: %s", path, std::strerror(errno)));
    }
    if (got == 0) {
      return absl::DataLossError(
          absl::StrFormat("%s changed while it was read: %u bytes, not %u", path, at, size));
    }
    hash.Update(buffer.data(), static_cast<size_t>(got));
    at += static_cast<uint64_t>(got);
  }
  return hash.Digest();
}

absl::StatusOr<shard::FileIdentity> IdentifyFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    const int error = errno;
    if (fd >= 0) close(fd);
    return absl::NotFoundError(absl::StrFormat("cannot read %s: %s", path, std::strerror(error)));
  }
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  shard::FileIdentity identity;
  identity.set_size(static_cast<uint64_t>(st.st_size));
  identity.set_mtime(ModificationTime(st));
  absl::StatusOr<uint64_t> hash = HashFile(fd, identity.size(), path);
  close(fd);
  if (!hash.ok()) return hash.status();
  identity.set_content_hash(*hash);
  return identity;
}

absl::Status CheckIdentity(const std::string& path, const shard::FileIdentity& indexed,
                           bool content) {
  shard::FileIdentity now;
  if (content) {
    absl::StatusOr<shard::FileIdentity> identity = IdentifyFile(path);
    if (!identity.ok()) return identity.status();
    now = *identity;
  } else {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return absl::NotFoundError(absl::StrFormat("cannot read %s: %s", path, std::strerror(errno)));
    }
    now.set_size(static_cast<uint64_t>(st.st_size));
    now.set_mtime(ModificationTime(st));
  }
  if (now.size() != indexed.size()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s changed since it was indexed: %u bytes, indexed %u", path, now.size(), indexed.size()));
  }
  if (now.mtime() != indexed.mtime()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s changed since it was indexed: modified at %d.%09d s, indexed at %d.%09d s", path,
        now.mtime() / 1'000'000'000, now.mtime() % 1'000'000'000, indexed.mtime() / 1'000'000'000,
        indexed.mtime() % 1'000'000'000));
  }
  if (content && now.content_hash() != indexed.content_hash()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s changed since it was indexed: the same size and time, another content (hash %016x, "
        "indexed %016x)",
        path, now.content_hash(), indexed.content_hash()));
  }
  return absl::OkStatus();
}

uint64_t JobDigest(const shard::Plan& plan) {
  shard::Plan job = plan;
  job.clear_shards();
  job.clear_job_end_hint();
  job.clear_job();
  for (shard::PlannedFile& f : *job.mutable_files()) f.clear_owner();
  return HashBytes(job.SerializeAsString());
}

bool HasChecksumField(std::string_view tail) {
  return tail.size() == kChecksumFieldSize &&
         static_cast<unsigned char>(tail[0]) == ((kChecksumTag & 0x7f) | 0x80) &&
         static_cast<unsigned char>(tail[1]) == (kChecksumTag >> 7);
}

std::string ChecksumField(uint64_t hash) {
  std::string field(kChecksumFieldSize, '\0');
  field[0] = static_cast<char>((kChecksumTag & 0x7f) | 0x80);
  field[1] = static_cast<char>(kChecksumTag >> 7);
  for (int i = 0; i < 8; ++i) field[2 + i] = static_cast<char>(hash >> (8 * i));
  return field;
}

std::string Sealed(std::string bytes) {
  const uint64_t hash = HashBytes(bytes);
  bytes += ChecksumField(hash);
  return bytes;
}

absl::Status CheckChecksumField(std::string_view tail, uint64_t hash, const char* what) {
  if (!HasChecksumField(tail)) {
    return absl::DataLossError(absl::StrFormat("corrupt %s: no checksum at its end", what));
  }
  if (tail != ChecksumField(hash)) {
    return absl::DataLossError(
        absl::StrFormat("corrupt %s: its checksum does not match its content", what));
  }
  return absl::OkStatus();
}

absl::Status ParseShardFile(std::string_view bytes, const char* what,
                            google::protobuf::Message* out) {
  if (bytes.size() < kChecksumFieldSize ||
      !HasChecksumField(bytes.substr(bytes.size() - kChecksumFieldSize))) {
    // No checksum: a file of an older idlescope says which format it is; anything else is not
    // this message, or was cut.
    absl::Status parsed = ParseShardMessage(std::string(bytes), what, out);
    if (!parsed.ok()) return parsed;
    return absl::DataLossError(absl::StrFormat("corrupt %s: no checksum at its end", what));
  }
  const std::string_view body = bytes.substr(0, bytes.size() - kChecksumFieldSize);
  absl::Status sealed = CheckChecksumField(bytes.substr(body.size()), HashBytes(body), what);
  if (!sealed.ok()) return sealed;
  return ParseShardMessage(std::string(body), what, out);
}

}  // namespace idlescope
