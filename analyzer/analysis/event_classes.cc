#include "analyzer/analysis/event_classes.h"

#include <algorithm>
#include <string>

namespace idlescope {
namespace {

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// `text` ends with / contains the lower-case `word`, ignoring the case of `text` (no copy: these
// run for every file event the analyzer reads).
bool EndsWithNoCase(std::string_view text, std::string_view word) {
  if (text.size() < word.size()) return false;
  text.remove_prefix(text.size() - word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    if (Lower(text[i]) != word[i]) return false;
  }
  return true;
}
bool ContainsNoCase(std::string_view text, std::string_view word) {
  for (size_t at = 0; at + word.size() <= text.size(); ++at) {
    if (EndsWithNoCase(text.substr(0, at + word.size()), word)) return true;
  }
  return false;
}

bool IsInstallerName(std::string_view name) {
  static constexpr std::string_view kInstallers[] = {"pip",        "pip3", "conda",   "mamba",
                                                     "micromamba", "apt",  "apt-get", "yum",
                                                     "dnf",        "uv",   "poetry"};
  for (std::string_view installer : kInstallers) {
    if (name == installer) return true;
  }
  // pip3.11, pip-3.11
  return name.starts_with("pip3.") || name.starts_with("pip-");
}

bool IsInstallVerb(std::string_view word) {
  return word == "install" || word == "add" || word == "sync" || word == "create" ||
         word == "update" || word == "upgrade";
}

// Sends (and writes to sockets) by where the peer is: results leaving the cluster are uploads
// (experiment trackers, object stores); a cluster-local peer is the job's own data exchange
// (gloo collectives, a TCPStore, parameter servers), the paper's communication.
EventClassification ClassifySend(NetScope scope) {
  if (scope == NET_PUBLIC) return {EventClass::kUploadWrite, Cause::kIntermediateUpload};
  return {EventClass::kPeerSend, Cause::kCommunication};
}

// A copy between descriptors (sendfile, copy_file_range, splice: shutil.copy, cp) by what it
// moves: a model file (either end) is a checkpoint copied; to a socket, a send to its peer; from
// a socket, a download; anything else a write of the destination.
EventClassification ClassifyCopy(const HostEvent& event) {
  if (IsModelCheckpointPath(event.path) || IsModelCheckpointPath(event.source)) {
    return {EventClass::kCheckpointWrite, Cause::kCheckpointing};
  }
  if (event.fs_type == FS_SOCKET) {
    if (event.net_scope == NET_PUBLIC || event.net_scope == NET_PRIVATE) {
      return ClassifySend(event.net_scope);
    }
    return {EventClass::kIpcWrite, Cause::kUnknown};
  }
  // The source is a file (an absolute path), a pipe ("pipe:[N]") or a socket's peer address
  // ("10.0.0.5:80", "unix:/run/x.sock"): data received from it.
  const bool from_socket =
      !event.source.empty() && event.source[0] != '/' && !event.source.starts_with("pipe:");
  if (from_socket) return {EventClass::kDownload, Cause::kExternalDownload};
  return {EventClass::kUploadWrite, Cause::kIntermediateUpload};
}

}  // namespace

bool IsStdinPipe(const HostEvent& event) { return event.fd == 0 && event.fs_type == FS_PIPE; }

bool IsModelCheckpointPath(std::string_view path) {
  static constexpr std::string_view kSuffixes[] = {
      ".pt",  ".pth",     ".ckpt",   ".safetensors", ".h5",   ".hdf5",   ".pkl",
      ".npz", ".msgpack", ".distcp", ".keras",       ".onnx", ".pt.tmp", ".pth.tmp"};
  for (std::string_view suffix : kSuffixes) {
    if (EndsWithNoCase(path, suffix)) return true;
  }
  // ".bin" is also the suffix of raw dataset shards (sample00001.bin): it names a model file
  // only with a model word in the name (pytorch_model.bin, adapter_model.bin, optimizer.bin).
  if (EndsWithNoCase(path, ".bin")) {
    std::string_view name = Basename(path);
    for (std::string_view word : {"model", "weight", "optim", "adapter", "ckpt", "checkpoint",
                                  "state", "rng", "scheduler"}) {
      if (ContainsNoCase(name, word)) return true;
    }
  }
  // Not a directory's name: a job run from ~/ckpt-experiments/ writes its logs there too. Files
  // without a model file's name are model files by what the job does with them
  // (analysis/identities.h).
  return false;
}

bool IsDataFilePath(std::string_view path) {
  return !path.empty() && !IsModelCheckpointPath(path) && !IsSystemPath(path) &&
         !IsCodeFilePath(path);
}

bool IsSystemPath(std::string_view path) {
  return path.starts_with("/proc/") || path.starts_with("/sys/") ||
         path.starts_with("anon_inode:") ||  // eventfd, timerfd, epoll (driver threads' wakeups)
         (path.starts_with("/dev/") && !path.starts_with("/dev/shm/")) ||  // shm holds data
         path.starts_with("/etc/") || path.starts_with("/usr/share/") ||
         path.starts_with("/usr/lib/locale/") || Basename(path) == ".inputrc";
}

bool IsCodeFilePath(std::string_view path) {
  std::string_view name = Basename(path);
  for (std::string_view code : {".py", ".pyc", ".so"}) {
    if (name.ends_with(code)) return true;
  }
  return name.find(".so.") != std::string_view::npos;  // libfoo.so.1
}

bool IsInstallerCommand(std::string_view program, std::string_view argv) {
  if (IsInstallerName(Basename(program))) return true;
  // "python -m pip install", "sh -c 'pip install x'", "/usr/bin/env conda create ...": an
  // installer token followed (later) by an install verb.
  bool installer_seen = false;
  size_t pos = 0;
  while (pos < argv.size()) {
    size_t stop = argv.find_first_of(std::string_view("\0 ", 2), pos);
    if (stop == std::string_view::npos) stop = argv.size();
    std::string_view arg = argv.substr(pos, stop - pos);
    pos = stop + 1;
    if (arg.empty()) continue;
    if (installer_seen && IsInstallVerb(arg)) return true;
    if (IsInstallerName(Basename(arg))) installer_seen = true;
  }
  return false;
}

bool IsRemoteFs(FsType fs) {
  return fs == FS_NFS || fs == FS_FUSE || fs == FS_CIFS || fs == FS_LUSTRE || fs == FS_OTHER_REMOTE;
}

bool IsTerminalEvent(const HostEvent& event) {
  return event.path.starts_with("/dev/pts/") || event.path.starts_with("/dev/tty") ||
         (event.fd == 0 && event.fs_type == FS_DEVICE);
}

bool IsIdleWait(const HostEvent& event) {
  if (event.type != WAIT || IsTerminalEvent(event)) return false;
  if (event.fd < 0) return true;  // a sleep, a signal wait, a poll or select given no descriptor
  // Pipes only, or connected sockets only (they have a peer address): the read that follows.
  return !(event.fs_type == FS_PIPE || (event.fs_type == FS_SOCKET && !event.path.empty()));
}

EventClassification ClassifySample(const HostEvent& event) {
  switch (SampledStateOf(event)) {
    case SampledState::kWaitingForCpu:
      return {EventClass::kCpuWait, Cause::kCpuStarvation};
    case SampledState::kOnCpu:
      return {EventClass::kCpuWork, Cause::kCpuWork};
    case SampledState::kBlocked:
      break;
  }
  return {};
}

EventClassification ClassifyHostEvent(const HostEvent& event) {
  auto is = [](EventClass c, Cause cause) { return EventClassification{c, cause}; };
  switch (event.type) {
    case CUDA_MEMCPY:
    case CUDA_MEMSET:
      // CUPTI's srcKind/dstKind are the ground truth on the GPU side; on the host side the hook
      // records the host memory kind at call time. Unknown host memory is not called pageable.
      if (event.type == CUDA_MEMCPY && event.host_mem == MEM_PAGEABLE) {
        return is(EventClass::kCopyPageable, Cause::kHostGpuTransfer);
      }
      return is(EventClass::kCopyPinned, Cause::kHostGpuTransfer);
    case CUDA_SYNC:
      return is(EventClass::kSync, Cause::kSynchronization);
    case NCCL_COLLECTIVE:
    case NCCL_GROUP:
    case NCCL_COMM_INIT:
    case NCCL_COMM_DESTROY:
      return is(EventClass::kNccl, Cause::kCommunication);
    case FILE_COPY:
      return ClassifyCopy(event);
    case FILE_WRITE:
    case FILE_SYNC:
    case FILE_RENAME:
    case FILE_CLOSE:
      // close() only blocks where it flushes (NFS close-to-open consistency); a close of a local
      // model file is no stall, and is as often the end of a read (loading weights, a dataset).
      if (event.type == FILE_CLOSE && !IsRemoteFs(event.fs_type)) return {};
      if (IsModelCheckpointPath(event.path)) {
        return is(EventClass::kCheckpointWrite, Cause::kCheckpointing);
      }
      // Pipes and sockets are not files that results are uploaded to: a socket is classified by
      // its peer's address like a send, a pipe (or a socket with a loopback/unknown peer) leads to
      // another process of the job (docs/attribution.md, "Pipes and sockets").
      if (event.fs_type == FS_SOCKET &&
          (event.net_scope == NET_PUBLIC || event.net_scope == NET_PRIVATE)) {
        return ClassifySend(event.net_scope);
      }
      if (event.fs_type == FS_PIPE || event.fs_type == FS_SOCKET) {
        return event.type == FILE_WRITE ? is(EventClass::kIpcWrite, Cause::kUnknown)
                                        : EventClassification{};
      }
      return is(EventClass::kUploadWrite, Cause::kIntermediateUpload);
    case FILE_READ:
      // stdin or a terminal: the job waits for a person (the paper's interactive jobs).
      if (IsTerminalEvent(event)) return is(EventClass::kTerminalRead, Cause::kInteractive);
      // stdin from a pipe: the job's input comes from the program before it in a pipeline (or
      // the parent that started it), not from DataLoader workers.
      if (IsStdinPipe(event)) return is(EventClass::kStdinPipe, Cause::kDataLoading);
      if (event.fs_type == FS_PIPE || event.fs_type == FS_SOCKET) {
        return is(EventClass::kReadWorkerQueue, Cause::kDataLoading);
      }
      if (IsRemoteFs(event.fs_type)) return is(EventClass::kReadRemote, Cause::kDataLoading);
      return is(EventClass::kReadLocal, Cause::kDataLoading);
    case NET_CONNECT:
    case NET_RECV:
      if (event.net_scope == NET_PUBLIC) return is(EventClass::kDownload, Cause::kExternalDownload);
      // Cluster-local receives feed the job (data services, parameter servers); connects to
      // cluster addresses are rendezvous, which NCCL_COMM_INIT already covers.
      if (event.type == NET_RECV) return is(EventClass::kReadWorkerQueue, Cause::kDataLoading);
      return {};
    case NET_SEND:
      if (event.net_scope == NET_PUBLIC || event.net_scope == NET_PRIVATE) {
        return ClassifySend(event.net_scope);
      }
      // Loopback and unix sockets lead to another process of the job, like a pipe.
      return is(EventClass::kIpcWrite, Cause::kUnknown);
    case WAIT:
      // On a terminal: waiting for a person, on any thread, like its read (GNU readline, hence pdb
      // and input(), select()s stdin before reading it).
      if (IsTerminalEvent(event)) return is(EventClass::kTerminalRead, Cause::kInteractive);
      // Any other wait says something about a GPU only on a thread that feeds one. A helper
      // thread's or another process's waits are for their own work: a library's loop, a launcher's
      // monitor, an idle DataLoader worker polling its index queue, a thread waiting on a long
      // poll of a tracker's server.
      if (event.device < 0) return {};
      if (IsStdinPipe(event)) return is(EventClass::kStdinPipe, Cause::kDataLoading);
      // The thread idles, holding the GPU doing nothing (a script's sleep, a notebook's kernel
      // between cells, a server between requests): the paper's interactive job.
      if (IsIdleWait(event)) return is(EventClass::kIdleWait, Cause::kInteractive);
      // Waiting to read pipes or connected sockets (poll before read: multiprocessing queues and
      // so DataLoader workers' results, subprocess output, Python sockets with a timeout): that
      // read's.
      if (event.fs_type == FS_SOCKET && event.net_scope == NET_PUBLIC) {
        return is(EventClass::kDownload, Cause::kExternalDownload);
      }
      return is(EventClass::kReadWorkerQueue, Cause::kDataLoading);
    case PROC_EXEC:
    case PROC_SPAWN:
      if (IsInstallerCommand(event.path, event.argv)) {
        return is(EventClass::kInstaller, Cause::kLibraryInstallation);
      }
      // system() returns when its command did: the caller waited for the child all along (the
      // analysis gives the wait the child's cause, identities.h).
      if (event.type == PROC_SPAWN && event.api == "system") {
        return is(EventClass::kChildWait, Cause::kChildProcess);
      }
      return {};
    case PROC_WAIT:
      return is(EventClass::kChildWait, Cause::kChildProcess);
    case SIGNAL_HANDLER:
      return is(EventClass::kSignalHandler, Cause::kSignalHandler);
    case THREAD_SAMPLE:
      return ClassifySample(event);
    default:
      return {};
  }
}

}  // namespace idlescope
