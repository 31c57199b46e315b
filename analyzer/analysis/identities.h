// What a file, a socket or a child process is, by what the job does with it rather than by its
// name or address range (docs/attribution.md, "Identity"):
//   - ModelFiles: a file is a model file by its name (IsModelCheckpointPath), or because the job
//     renamed it to a model file's name (a checkpoint written to a temporary file, then renamed:
//     atomic-write libraries, tempfile), renamed a directory it wrote a model file under (a
//     checkpoint directory written under a temporary name), or read it back, at least
//     kReadBackBytes of it, before its first kernel and wrote it later (a resumed job's
//     checkpoint). Not because a directory above it is called "ckpt";
//   - SocketPeers: who is at the other end of a socket: a worker of this process (or the process
//     whose worker this is), another process of the job (a rank, a launcher's store), or no
//     process of the job (an outside server), found from the sockets' own addresses
//     (NET_SOCKET: each end names the other's);
//   - ChildCause: what a wait for a child process is, by the child's command;
//   - MappedFiles: the data files a process has mapped for reading, what its page faults read.
// Every answer depends only on records read in the same order in one pass and in shards: the
// processes' headers, the socket addresses read from the start of every file before the analysis
// (read/socket_addresses.h), and the records of the asking process's own family.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "analyzer/analysis/attribution.h"
#include "analyzer/analysis/processes.h"
#include "analyzer/model/causes.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

// A file read back before the first kernel counts as the job's own checkpoint once this much of
// it was read: a model's weights, not a configuration file or a tokenizer's vocabulary.
inline constexpr uint64_t kReadBackBytes = 1 << 20;

class ModelFiles {
 public:
  // Written files remembered for a later rename, at most (the oldest are forgotten).
  static constexpr size_t kMaxWritten = 1 << 16;

  void AddProcess(uint32_t process, const ProcessInfo& info);

  // Whether `path` (written or synced by `process`) is a model file: by name, or by identity.
  bool IsModelFile(uint32_t process, std::string_view path) const;

  // A read of `path` by `process` before its first kernel (`before_first_kernel`), or a mapping
  // of it (FILE_MMAP): how much of it was read back at start. When that makes it a model file, the
  // writes of it seen before (the job made the file, then resumed from it) as (process, path id),
  // appended to `out`.
  void NoteRead(uint32_t process, std::string_view path, uint64_t bytes, bool before_first_kernel,
                std::vector<EvidenceKey>* out);

  // A write (or sync) of `path`, string id `path_id` in `process`, that is no model file (yet).
  void NoteWrite(uint32_t process, std::string_view path, uint64_t path_id);

  // A write (or sync) of `path` by `process` that is a model file by its name: a directory renamed
  // with it inside makes the directory's other files model files too.
  void NoteModelWrite(uint32_t process, std::string_view path);

  // A rename of `source` to `destination` by `process`. The files it makes model files (the source
  // renamed to a model file's name; every file written under a renamed directory that held one)
  // as (process, path id) of their writes, appended to `out`; from now on they are model files.
  void NoteRename(uint32_t process, std::string_view source, std::string_view destination,
                  std::vector<EvidenceKey>* out);

 private:
  struct Written {
    uint32_t process;
    uint64_t path_id;
  };
  std::string Key(uint32_t process, std::string_view path) const;

  std::vector<std::string> host_;           // per process: its host's key (boot id, else host name)
  absl::flat_hash_set<std::string> model_;  // by host and path
  absl::flat_hash_map<std::string, uint64_t> read_back_;  // bytes read before the first kernel
  absl::flat_hash_map<std::string, std::vector<Written>> written_;  // not (yet) model files
};

// Who is at the other end of a socket.
enum class PeerRole : uint8_t {
  kUnknown,     // no identity recorded for the socket (a trace of an older recorder): judge by the
                // address range, as before
  kSelf,        // a socket of the process's own (a socketpair it made): judge as a pipe
  kWorker,      // a worker of this process, or the process this worker belongs to
  kJobProcess,  // another process of the job: a rank, a launcher (its store), their workers
  kOutside,     // no process of the job: a server outside it (or not traced)
};

class SocketPeers {
 public:
  void AddProcess(uint32_t process, const ProcessInfo& info);
  // Before the records: a socket address `process` had (SocketAddressKey form,
  // model/socket_address.h), from the start of its file.
  void AddAddress(uint32_t process, std::string key);
  // A NET_SOCKET event: the process's own identity of the socket whose peer is `e.path`.
  void NoteSocket(const HostEvent& e);
  // Who is at the other end of socket I/O event `e` (its path is the peer's address).
  PeerRole RoleOf(const HostEvent& e, const JobProcesses& processes) const;

 private:
  struct Identity {
    std::string local;
    uint32_t peer_pid = 0;
  };
  std::vector<std::string> host_;  // per process
  std::vector<uint32_t> pid_;      // per process
  // Addresses from the start of every file: owners by key.
  absl::flat_hash_map<std::string, uint32_t> directory_;
  // Addresses from the records read so far: owners by key (used only for the owner's family).
  absl::flat_hash_map<std::string, uint32_t> seen_;
  // Each process's own sockets, by (process, peer address string id).
  absl::flat_hash_map<std::pair<uint32_t, uint64_t>, Identity> identities_;
};

// The data files each process has mapped for reading (FILE_MMAP without write access of a file
// that is neither code nor system state; one named like a model file too), from the mapping until
// it is unmapped (FILE_MUNMAP of a range that holds the mapping's start). A sampled run of a
// thread blocked outside every system call is a wait in a page fault; in a process with such a
// mapping at the time, it is a read of the largest (the sampler reads no fault address: a process
// that maps several data files has its faults named by the largest). The runs reach the analysis
// with the writer's flush, after the calls around them (an unmap at the job's end comes before
// the runs of the reads it ends), so mappings are kept with their times, the last
// kMaxPerProcess of each process.
class MappedFiles {
 public:
  static constexpr size_t kMaxPerProcess = 64;
  struct Mapping {
    uint64_t addr = 0;
    uint64_t bytes = 0;
    uint64_t path_id = 0;
    Interval when;  // end: when it was unmapped (kForever: not yet)
  };

  void Map(const HostEvent& e);
  void Unmap(const HostEvent& e);
  // The largest data file `process` had mapped during `run`; nullptr when none.
  const Mapping* LargestAt(uint32_t process, Interval run) const;

 private:
  absl::flat_hash_map<uint32_t, std::vector<Mapping>> by_process_;
};

// The cause of waiting for child process `child` (JobProcesses index; its descendants' commands
// too: `sh -c "ffmpeg ..."`): library_installation for an installer, external_download for a
// download tool (curl, wget, aws/gsutil/azcopy/rclone copies, git clone), data_loading for a data
// or media tool (ffmpeg, sox, ImageMagick, tar, unzip, decompressors), else child_process (a
// compiler Triton or torch.compile started, a script, a monitor).
Cause ChildCause(uint32_t child, const JobProcesses& processes);

// The child a PROC_WAIT (or a system() PROC_SPAWN without a child pid: -1 then) of `process`
// waited for: the last process of the job with that pid whose parent is `process`, an exec'd
// image preferred to the fork()ed copy it replaced; -1 when it is not traced.
int64_t WaitedChild(uint32_t process, uint32_t child_pid, const JobProcesses& processes);

}  // namespace idlescope
