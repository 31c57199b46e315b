// Where the commands write: `-o FILE` (report, export, diff, merge, index, plan, map) and stdout.
//
// `-o FILE` writes FILE as a shell's `> FILE` would, except that a regular file is replaced whole
// or not at all:
//   - FILE missing, or a regular file with one name whose owner can be kept: the bytes go into a
//     temporary file beside it (FILE.tmp-XXXXXX, with FILE's mode and owner, or 0666 less the
//     umask for a new file; removed if a signal ends the command: temporary_paths.h), renamed
//     over FILE once they are all written: a failed or interrupted run leaves FILE as it was.
//   - anything else is opened and written in place (O_WRONLY|O_CREAT|O_TRUNC, what `>` does): a
//     device (/dev/null, /dev/stdout), a FIFO (its reader gets the bytes), a symlink (its target
//     is written, the link stays), a file with hard links (every name sees the new bytes), a
//     file whose directory cannot take the temporary file or whose owner cannot be kept. A rename
//     would replace each of these with a new regular file (as root, `-o /dev/null` turned the
//     system's /dev/null into a file holding a report).
// Extended attributes and ACLs of a replaced file are not kept (a rename never keeps them).
//
// stdout is written and checked as a file is: a failed write (a full disk, /dev/full, a pipe
// whose reader has gone: SIGPIPE is ignored, main.cc) ends the command with one line and exit
// status 1, never with exit 0 and the output cut.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analyzer/report/exporter.h"

namespace idlescope {

class OutputFile {
 public:
  // Opens what the output to `path` is written to (the temporary file, or `path` itself in
  // place). Errors (one line): "cannot write PATH: REASON".
  static absl::StatusOr<std::unique_ptr<OutputFile>> Open(const std::string& path);
  // An output never committed: its temporary file is removed.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  int fd() const { return fd_; }
  // Writes all of `bytes` at the file's end. Errors: "cannot write PATH: REASON".
  absl::Status Write(std::string_view bytes);
  // Closes the file (where NFS reports a write's failure) and renames a temporary file over the
  // path. Errors: "cannot write PATH: REASON".
  absl::Status Commit();

 private:
  explicit OutputFile(std::string path) : path_(std::move(path)) {}
  // A temporary file beside path_ with the mode and owner of `existing` (nullptr: a new file's);
  // false (nothing left behind) when it cannot be made so.
  bool OpenTemporary(const struct stat* existing);
  absl::Status Error(int error) const;

  std::string path_;
  std::string temporary_;  // "": written in place
  int temporary_slot_ = -1;
  int fd_ = -1;
};

// Writes `bytes` to `path` ("" or "-": stdout) as above. On failure prints one line,
// "idlescope COMMAND: cannot write FILE: REASON" (for stdout: FinishStdout does), and returns
// false.
bool WriteOutput(std::string_view command, const std::string& path, std::string_view bytes);

// The output of a command written as it is made (report/exporter.h's Output), to `-o FILE` as
// OutputFile writes it, or to stdout ("" or "-"), through a buffer. A file may be split into parts
// (NextPart, `idlescope export --max-bytes`): FILE, then FILE with ".1", ".2", ... before its
// extension (PartPath), each replaced whole once every part is written (Commit); stdout is one
// part. A failed write keeps its error (Commit returns it) and drops what follows.
class OutputParts : public Output {
 public:
  // Errors: the first part cannot be opened ("cannot write PATH: REASON").
  static absl::StatusOr<std::unique_ptr<OutputParts>> Open(const std::string& path);
  ~OutputParts() override;

  void Write(std::string_view bytes) override;
  bool NextPart() override;
  // Every part written out and renamed into place. Errors: the first failure ("cannot write
  // PATH: REASON"; "" for stdout, which FinishStdout reports).
  absl::Status Commit();
  // The parts' paths ("" for stdout).
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  OutputParts() = default;
  void Flush();

  std::string base_;
  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<OutputFile>> parts_;  // written, the last one open
  std::string buffer_;
  absl::Status status_;
};

// Part `index` of an output split into parts: `path` itself for 0, else ".INDEX" before the
// extension of its file name: job.pftrace, job.1.pftrace, job.2.pftrace; out -> out.1.
std::string PartPath(const std::string& path, size_t index);

// Writes `bytes` to stdout; false once any write to it has failed (the first failure's errno is
// kept, and later writes are skipped: a reader that has gone reads nothing more).
bool WriteStdout(std::string_view bytes);
bool StdoutFailed();

// The end of every command but run (main.cc): stdout flushed and checked, and stderr. A failure
// of stdout is one line ("idlescope COMMAND: cannot write stdout: REASON") and exit status 1 (or
// the command's own non-zero status); one of stderr (nowhere left to say it) exit status 1.
// Returns the status to exit with.
int FinishStdout(std::string_view command, int status);

}  // namespace idlescope
