#include "analyzer/cli/input_copies.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analyzer/cli/temporary_paths.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope {
namespace {

constexpr char kZstdSuffix[] = ".zst";
constexpr unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};  // a zstd frame, little endian

std::string Basename(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Errno(const std::string& what) { return absl::StrCat(what, ": ", strerror(errno)); }

// Reads up to `n` bytes (fewer only at the end of the input); -1 on an error (errno).
ssize_t ReadFull(int fd, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

bool WriteFull(int fd, const char* buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    buf += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

struct DctxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// Whether the regular file `path` starts with zstd's magic.
bool StartsCompressed(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char head[sizeof(kZstdMagic)];
  const ssize_t n = ReadFull(fd, reinterpret_cast<char*>(head), sizeof(head));
  close(fd);
  return n == static_cast<ssize_t>(sizeof(head)) && memcmp(head, kZstdMagic, sizeof(head)) == 0;
}

}  // namespace

bool IsCompressedTraceName(const std::string& path) {
  return absl::EndsWith(path, absl::StrCat(kTraceFileSuffix, kZstdSuffix));
}

InputCopies::~InputCopies() {
  for (const std::unique_ptr<Dir>& dir : dirs_) {
    for (const std::string& name : dir->names) unlink(absl::StrCat(dir->path, "/", name).c_str());
    rmdir(dir->path.c_str());
    if (dir->slot >= 0) ForgetTemporaryPath(dir->slot);
  }
}

absl::StatusOr<InputCopies::Dir*> InputCopies::NewDirectory() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/idlescope-inputs-XXXXXX");
  int slot = -1;
  if (!MakeTemporaryDirectory(pattern, &slot)) {
    return absl::PermissionDeniedError(Errno(absl::StrCat(
        "cannot create a directory for the decompressed traces (", pattern, "); set TMPDIR")));
  }
  auto dir = std::make_unique<Dir>();
  dir->path = pattern;
  dir->slot = slot;
  dirs_.push_back(std::move(dir));
  return dirs_.back().get();
}

absl::StatusOr<std::string> InputCopies::CopyFrom(Dir& dir, int fd, const std::string& name,
                                                  const std::string& what) {
  // Two inputs of one name (x.idlescope.zst of two directories): the later one is numbered.
  std::string file = name;
  for (int n = 2; std::find(dir.names.begin(), dir.names.end(), file) != dir.names.end(); ++n) {
    file = absl::StrCat(n, ".", name);
  }
  const std::string path = absl::StrCat(dir.path, "/", file);
  int out = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) return absl::PermissionDeniedError(Errno(absl::StrCat("cannot create ", path)));
  dir.names.push_back(file);
  const size_t in_size = ZSTD_DStreamInSize(), out_size = ZSTD_DStreamOutSize();
  std::unique_ptr<char[]> in(new char[in_size]), buf(new char[out_size]);
  std::unique_ptr<ZSTD_DCtx, DctxFree> dctx;
  bool first = true, compressed = false;
  size_t last = 0;  // ZSTD_decompressStream's last hint: 0 when a frame was completed
  std::string problem;
  while (problem.empty()) {
    const ssize_t n = ReadFull(fd, in.get(), in_size);
    if (n < 0) {
      problem = Errno(absl::StrCat("cannot read ", what));
      break;
    }
    if (n == 0) break;
    if (first) {
      first = false;
      compressed = n >= static_cast<ssize_t>(sizeof(kZstdMagic)) &&
                   memcmp(in.get(), kZstdMagic, sizeof(kZstdMagic)) == 0;
      if (compressed) dctx.reset(ZSTD_createDCtx());
    }
    if (!compressed) {
      if (!WriteFull(out, in.get(), static_cast<size_t>(n)))
        problem = Errno("cannot write " + path);
      continue;
    }
    ZSTD_inBuffer input{in.get(), static_cast<size_t>(n), 0};
    while (input.pos < input.size && problem.empty()) {
      ZSTD_outBuffer output{buf.get(), out_size, 0};
      last = ZSTD_decompressStream(dctx.get(), &output, &input);
      if (ZSTD_isError(last)) {
        problem = absl::StrCat(what, ": not a valid zstd stream (", ZSTD_getErrorName(last), ")");
      } else if (!WriteFull(out, buf.get(), output.pos)) {
        problem = Errno("cannot write " + path);
      }
    }
  }
  // The end of a frame may still be inside the decoder.
  while (problem.empty() && compressed) {
    ZSTD_inBuffer input{nullptr, 0, 0};
    ZSTD_outBuffer output{buf.get(), out_size, 0};
    const size_t r = ZSTD_decompressStream(dctx.get(), &output, &input);
    if (ZSTD_isError(r)) {
      problem = absl::StrCat(what, ": not a valid zstd stream (", ZSTD_getErrorName(r), ")");
    } else if (!WriteFull(out, buf.get(), output.pos)) {
      problem = Errno("cannot write " + path);
    } else if (output.pos == 0) {
      break;
    }
  }
  if (problem.empty() && compressed && last != 0) {
    problem = absl::StrCat(what, ": the zstd stream is cut short");
  }
  if (close(out) != 0 && problem.empty()) problem = Errno("cannot write " + path);
  if (!problem.empty()) return absl::DataLossError(problem);
  return path;
}

const std::string& InputCopies::Original(const std::string& path) const {
  auto it = original_.find(path);
  return it == original_.end() ? path : it->second;
}

void InputCopies::Rename(JobReport& report) const {
  if (!any()) return;
  for (FileReport& f : report.files) f.path = Original(f.path);
  for (ReportWarning& w : report.warnings) w.subject = Original(w.subject);
}

absl::StatusOr<InputCopies::Dir*> InputCopies::FilesDirectory() {
  if (files_ != nullptr) return files_;
  absl::StatusOr<Dir*> dir = NewDirectory();
  if (dir.ok()) files_ = *dir;
  return dir;
}

absl::StatusOr<std::vector<std::string>> InputCopies::Prepare(
    const std::vector<std::string>& operands) {
  std::vector<std::string> out;
  bool stdin_taken = false;
  for (const std::string& operand : operands) {
    if (operand == "-") {
      if (stdin_taken) return absl::InvalidArgumentError("standard input (-) given twice");
      stdin_taken = true;
      absl::StatusOr<Dir*> dir = FilesDirectory();
      if (!dir.ok()) return dir.status();
      absl::StatusOr<std::string> copy = CopyFrom(**dir, STDIN_FILENO, "stdin.idlescope", "stdin");
      if (!copy.ok()) return copy.status();
      original_[*copy] = operand;
      out.push_back(*copy);
      continue;
    }
    struct stat st;
    if (stat(operand.c_str(), &st) != 0) {
      out.push_back(operand);  // the reader says what is wrong with it
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      // Its compressed traces are copied; its plain ones are read in place.
      DIR* d = opendir(operand.c_str());
      if (d == nullptr) {
        out.push_back(operand);
        continue;
      }
      std::vector<std::string> compressed;
      bool plain = false;
      while (struct dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (IsCompressedTraceName(name)) compressed.push_back(name);
        if (absl::EndsWith(name, kTraceFileSuffix)) plain = true;
      }
      closedir(d);
      if (compressed.empty() || plain) out.push_back(operand);
      if (compressed.empty()) continue;
      std::sort(compressed.begin(), compressed.end());
      absl::StatusOr<Dir*> dir = NewDirectory();
      if (!dir.ok()) return dir.status();
      for (const std::string& name : compressed) {
        const std::string path = absl::StrCat(operand, "/", name);
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return absl::NotFoundError(Errno(absl::StrCat("cannot open ", path)));
        absl::StatusOr<std::string> copy =
            CopyFrom(**dir, fd, name.substr(0, name.size() - strlen(kZstdSuffix)), path);
        close(fd);
        if (!copy.ok()) return copy.status();
        original_[*copy] = path;
      }
      original_[(*dir)->path] = operand;
      out.push_back((*dir)->path);
      continue;
    }
    const bool pipe = S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode);
    if (!pipe && !(S_ISREG(st.st_mode) && StartsCompressed(operand))) {
      out.push_back(operand);
      continue;
    }
    int fd = open(operand.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return absl::NotFoundError(Errno(absl::StrCat("cannot open ", operand)));
    std::string name = Basename(operand);
    if (absl::EndsWith(name, kZstdSuffix)) name.resize(name.size() - strlen(kZstdSuffix));
    if (!absl::EndsWith(name, kTraceFileSuffix)) name += kTraceFileSuffix;  // /dev/fd/63
    absl::StatusOr<Dir*> dir = FilesDirectory();
    if (!dir.ok()) {
      close(fd);
      return dir.status();
    }
    absl::StatusOr<std::string> copy = CopyFrom(**dir, fd, name, operand);
    close(fd);
    if (!copy.ok()) return copy.status();
    original_[*copy] = operand;
    out.push_back(*copy);
  }
  return out;
}

}  // namespace idlescope
