// Traces that cannot be read where they are: compressed with zstd (`x.idlescope.zst`, or a
// directory holding such files), on standard input (`-`), or behind a pipe (`<(zstd -dc ...)`,
// a FIFO). The reader needs regular files it can reopen and seek (it suspends and resumes files
// of a large job, and reads the start of each file twice), so each such trace is decompressed, or
// copied, into one directory of the command's own under TMPDIR, named as the trace was named
// (without `.zst`; `stdin.idlescope` for standard input), and read from there. The directory is
// removed when the command ends, also when a signal ends it (temporary_paths.h). A file's
// content decides, not its name: a regular file, a pipe or standard input whose first bytes are
// zstd's frame magic is decompressed; anything else is taken as it is (a plain trace through a
// pipe is copied). The report names each trace as the user did (`-` for standard input).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "analyzer/model/job_report.h"

namespace idlescope {

class InputCopies {
 public:
  InputCopies() = default;
  InputCopies(const InputCopies&) = delete;
  InputCopies& operator=(const InputCopies&) = delete;
  ~InputCopies();  // removes the copies

  // The operands to read in place of `operands`: a plain trace file or a directory of plain
  // traces as given; a compressed file, standard input or a pipe as its copy; a directory that
  // holds compressed traces as itself (when it holds plain ones too) and the directory of the
  // copies. Errors (one line): standard input given twice, a file that cannot be read, a zstd
  // stream that does not decompress, TMPDIR that cannot be written.
  absl::StatusOr<std::vector<std::string>> Prepare(const std::vector<std::string>& operands);

  // Whether some input is read from a copy.
  bool any() const { return !original_.empty(); }
  // What the user named the trace that `path` (a copy, or any other file) is read from.
  const std::string& Original(const std::string& path) const;
  // The report names the traces as the user did: its files and the warnings about them.
  void Rename(JobReport& report) const;

 private:
  struct Dir {
    std::string path;
    int slot = -1;
    std::vector<std::string> names;  // files made in it
  };
  // A new directory of copies under TMPDIR (a directory operand's copies get one of their own,
  // read as a directory; the other copies share the first).
  absl::StatusOr<Dir*> NewDirectory();
  absl::StatusOr<Dir*> FilesDirectory();
  // Copies (decompressing) descriptor `fd`, read from its start, to a file named `name` in `dir`;
  // `what` names the input in errors.
  absl::StatusOr<std::string> CopyFrom(Dir& dir, int fd, const std::string& name,
                                       const std::string& what);

  std::vector<std::unique_ptr<Dir>> dirs_;
  absl::flat_hash_map<std::string, std::string> original_;  // copy -> the user's name
  Dir* files_ = nullptr;  // the copies of files, standard input and pipes
};

// Whether `path` is a trace file name the reader lists in a directory when compressed.
bool IsCompressedTraceName(const std::string& path);

}  // namespace idlescope
