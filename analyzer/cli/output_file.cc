#include "analyzer/cli/output_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/temporary_paths.h"

namespace idlescope {
namespace {

int g_stdout_error = 0;  // the errno of stdout's first failed write

// Writes all of `bytes` to `fd`; 0 or the errno of the write that failed.
int WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path) {
  std::unique_ptr<OutputFile> out(new OutputFile(path));
  struct stat st;
  const bool exists = lstat(path.c_str(), &st) == 0;
  const bool replaced = exists ? S_ISREG(st.st_mode) && st.st_nlink == 1 : errno == ENOENT;
  if (replaced && out->OpenTemporary(exists ? &st : nullptr)) return out;
  out->fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (out->fd_ < 0) return out->Error(errno);
  return out;
}

bool OutputFile::OpenTemporary(const struct stat* existing) {
  std::string temporary = absl::StrCat(path_, ".tmp-XXXXXX");
  int slot = -1;
  const int fd = MakeTemporaryFile(temporary, &slot);
  if (fd < 0) return false;  // a directory we cannot write in, a name too long: in place
  mode_t mode;
  bool kept = true;
  if (existing != nullptr) {
    // The owner first: chown clears the set-user-ID and set-group-ID bits. Not root and not a
    // group of ours: the owner cannot be kept, and the file is written in place, as `>` would.
    kept = (existing->st_uid == geteuid() && existing->st_gid == getegid()) ||
           fchown(fd, existing->st_uid, existing->st_gid) == 0;
    mode = existing->st_mode & 07777;
  } else {
    // mkostemp made it 0600; a new output is 0666 less the umask, as open(O_CREAT) makes it.
    // (umask reads the mask only by setting it: no other thread makes files meanwhile.)
    const mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  if (!kept || fchmod(fd, mode) != 0) {
    close(fd);
    unlink(temporary.c_str());
    ForgetTemporaryPath(slot);
    return false;
  }
  fd_ = fd;
  temporary_ = std::move(temporary);
  temporary_slot_ = slot;
  return true;
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) close(fd_);
  if (!temporary_.empty()) {
    unlink(temporary_.c_str());
    ForgetTemporaryPath(temporary_slot_);
  }
}

absl::Status OutputFile::Error(int error) const {
  return absl::UnavailableError(absl::StrCat("cannot write ", path_, ": ", std::strerror(error)));
}

absl::Status OutputFile::Write(std::string_view bytes) {
  if (fd_ < 0) return Error(EBADF);
  if (const int error = WriteAll(fd_, bytes); error != 0) return Error(error);
  return absl::OkStatus();
}

absl::Status OutputFile::Commit() {
  if (fd_ < 0) return Error(EBADF);
  const int closed = close(fd_);
  fd_ = -1;
  if (closed != 0 && errno != EINTR) return Error(errno);
  if (temporary_.empty()) return absl::OkStatus();
  if (rename(temporary_.c_str(), path_.c_str()) != 0) return Error(errno);
  temporary_.clear();
  ForgetTemporaryPath(temporary_slot_);
  return absl::OkStatus();
}

bool WriteOutput(std::string_view command, const std::string& path, std::string_view bytes) {
  if (path.empty() || path == "-") return WriteStdout(bytes);
  absl::StatusOr<std::unique_ptr<OutputFile>> out = OutputFile::Open(path);
  absl::Status status = out.ok() ? (*out)->Write(bytes) : out.status();
  if (status.ok()) status = (*out)->Commit();
  if (!status.ok()) PrintError(command, status.message());
  return status.ok();
}

namespace {
constexpr size_t kPartBuffer = 1 << 20;
}  // namespace

absl::StatusOr<std::unique_ptr<OutputParts>> OutputParts::Open(const std::string& path) {
  std::unique_ptr<OutputParts> out(new OutputParts());
  out->base_ = path == "-" ? "" : path;
  out->paths_.push_back(out->base_);
  if (!out->base_.empty()) {
    absl::StatusOr<std::unique_ptr<OutputFile>> file = OutputFile::Open(out->base_);
    if (!file.ok()) return file.status();
    out->parts_.push_back(std::move(*file));
  }
  out->buffer_.reserve(kPartBuffer);
  return out;
}

OutputParts::~OutputParts() = default;

void OutputParts::Flush() {
  if (status_.ok() && !buffer_.empty()) {
    if (parts_.empty()) {
      if (!WriteStdout(buffer_)) status_ = absl::UnavailableError("");
    } else {
      status_ = parts_.back()->Write(buffer_);
    }
  }
  buffer_.clear();
}

void OutputParts::Write(std::string_view bytes) {
  if (buffer_.size() + bytes.size() > kPartBuffer) Flush();
  if (bytes.size() >= kPartBuffer) {
    buffer_.assign(bytes);
    Flush();
    return;
  }
  buffer_.append(bytes);
}

bool OutputParts::NextPart() {
  if (base_.empty()) return false;
  Flush();
  paths_.push_back(PartPath(base_, paths_.size()));
  absl::StatusOr<std::unique_ptr<OutputFile>> file = OutputFile::Open(paths_.back());
  if (!file.ok()) {
    if (status_.ok()) status_ = file.status();
    return true;  // what follows is dropped: Commit says why
  }
  parts_.push_back(std::move(*file));
  return true;
}

absl::Status OutputParts::Commit() {
  Flush();
  if (!status_.ok()) return status_;
  if (parts_.empty()) return StdoutFailed() ? absl::UnavailableError("") : absl::OkStatus();
  for (auto& part : parts_) {
    if (absl::Status s = part->Commit(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string PartPath(const std::string& path, size_t index) {
  if (index == 0) return path;
  const size_t slash = path.rfind('/');
  const size_t name = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.rfind('.');  // the extension's, not a hidden file's first byte
  const std::string number = absl::StrCat(".", index);
  if (dot == std::string::npos || dot <= name) return path + number;
  return absl::StrCat(path.substr(0, dot), number, path.substr(dot));
}

bool WriteStdout(std::string_view bytes) {
  if (g_stdout_error != 0) return false;
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) {
    g_stdout_error = errno != 0 ? errno : EIO;
  }
  return g_stdout_error == 0;
}

bool StdoutFailed() { return g_stdout_error != 0 || std::ferror(stdout); }

int FinishStdout(std::string_view command, int status) {
  int error = g_stdout_error;
  errno = 0;
  if (std::fflush(stdout) != 0 && error == 0) error = errno != 0 ? errno : EIO;
  if (error == 0 && std::ferror(stdout)) error = EIO;
  if (error != 0) {
    PrintError(command, absl::StrCat("cannot write stdout: ", std::strerror(error)));
    if (status == 0) status = 1;
  }
  if (std::fflush(stderr) != 0 || std::ferror(stderr)) {
    if (status == 0) status = 1;
  }
  return status;
}

}  // namespace idlescope
