#include "analyzer/analysis/identities.h"

#include <algorithm>

#include "analyzer/analysis/event_classes.h"
#include "analyzer/model/socket_address.h"

namespace idlescope {
namespace {

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The program of a command line ("/usr/bin/ffmpeg -i x" -> "ffmpeg"), and the first word after
// it that is not an option (a subcommand: "aws s3 cp" -> "s3").
std::string_view ProgramOf(std::string_view cmdline) {
  return Basename(cmdline.substr(0, cmdline.find(' ')));
}
std::vector<std::string_view> Words(std::string_view cmdline) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < cmdline.size()) {
    size_t stop = cmdline.find(' ', pos);
    if (stop == std::string_view::npos) stop = cmdline.size();
    if (stop > pos) words.push_back(cmdline.substr(pos, stop - pos));
    pos = stop + 1;
  }
  return words;
}

bool OneOf(std::string_view word, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// Tools that fetch data from elsewhere. Of the ones with subcommands, only the subcommands that
// copy: "aws s3 cp", "gsutil cp", "git clone".
bool IsDownloadCommand(std::string_view cmdline) {
  std::vector<std::string_view> words = Words(cmdline);
  if (words.empty()) return false;
  std::string_view program = Basename(words[0]);
  if (OneOf(program, {"curl", "wget", "aria2c", "azcopy", "huggingface-cli", "scp", "rsync"})) {
    return true;
  }
  for (size_t i = 1; i < words.size(); ++i) {
    std::string_view w = words[i];
    if (program == "aws" && OneOf(w, {"cp", "sync"})) return true;
    if (OneOf(program, {"gsutil", "gcloud", "rclone"}) && OneOf(w, {"cp", "rsync", "copy", "sync"}))
      return true;
    if (program == "git" && OneOf(w, {"clone", "fetch", "pull", "lfs"})) return true;
  }
  return false;
}

// Tools that decode, convert or unpack data: a child running one prepares the job's data.
bool IsDataToolCommand(std::string_view cmdline) {
  return OneOf(
      ProgramOf(cmdline),
      {"ffmpeg",  "ffprobe", "sox",  "convert", "magick", "gm",     "vips",   "tar",  "unzip",
       "gzip",    "gunzip",  "zcat", "pigz",    "zstd",   "unzstd", "xz",     "unxz", "bzip2",
       "bunzip2", "lz4",     "7z",   "opusdec", "flac",   "lame",   "mogrify"});
}

// The host part of a job process's key: its host name (processes on one host with one name share
// loopback addresses and paths; containers have names of their own).
const std::string& HostKey(const std::vector<std::string>& hosts, uint32_t process) {
  static const std::string kNone;
  return process < hosts.size() ? hosts[process] : kNone;
}

bool InFamily(const JobProcess& p, uint32_t other) {
  return std::binary_search(p.family.begin(), p.family.end(), other);
}

}  // namespace

// --- ModelFiles

void ModelFiles::AddProcess(uint32_t process, const ProcessInfo& info) {
  if (process >= host_.size()) host_.resize(process + 1);
  host_[process] = info.host;
}

std::string ModelFiles::Key(uint32_t process, std::string_view path) const {
  std::string key = HostKey(host_, process);
  key += '\0';
  key.append(path);
  return key;
}

bool ModelFiles::IsModelFile(uint32_t process, std::string_view path) const {
  if (path.empty()) return false;
  if (IsModelCheckpointPath(path)) return true;
  if (model_.empty() && read_back_.empty()) return false;  // the common case: no lookup
  const std::string key = Key(process, path);
  if (model_.contains(key)) return true;
  auto it = read_back_.find(key);
  return it != read_back_.end() && it->second >= kReadBackBytes;
}

void ModelFiles::NoteRead(uint32_t process, std::string_view path, uint64_t bytes,
                          bool before_first_kernel, std::vector<EvidenceKey>* out) {
  if (!before_first_kernel || bytes == 0 || !IsDataFilePath(path)) return;
  const std::string key = Key(process, path);
  uint64_t& read = read_back_[key];
  const bool was_model = read >= kReadBackBytes;
  read += bytes;
  if (was_model || read < kReadBackBytes) return;
  // Written before it was read back (a job that makes its state file, then resumes from it):
  // those writes were the same file's.
  auto it = written_.find(key);
  if (it == written_.end()) return;
  for (const Written& w : it->second) out->push_back({w.process, w.path_id});
  written_.erase(it);
}

void ModelFiles::NoteWrite(uint32_t process, std::string_view path, uint64_t path_id) {
  if (path.empty() || path_id == 0) return;
  if (written_.size() >= kMaxWritten) written_.clear();  // a job writing that many files: rare
  std::vector<Written>& writers = written_[Key(process, path)];
  for (const Written& w : writers) {
    if (w.process == process && w.path_id == path_id) return;
  }
  writers.push_back({process, path_id});
}

void ModelFiles::NoteModelWrite(uint32_t process, std::string_view path) {
  if (path.empty() || path.find('/') == std::string_view::npos) return;
  if (model_.size() >= kMaxWritten) return;  // a job writing that many model files: rare
  model_.insert(Key(process, path));
}

void ModelFiles::NoteRename(uint32_t process, std::string_view source, std::string_view destination,
                            std::vector<EvidenceKey>* out) {
  if (source.empty() || destination.empty()) return;
  const std::string from = Key(process, source);
  auto take = [&](auto it) {
    for (const Written& w : it->second) out->push_back({w.process, w.path_id});
    model_.insert(it->first);
    written_.erase(it);
  };
  // A file renamed to a model file's name.
  if (IsModelFile(process, destination)) {
    auto it = written_.find(from);
    if (it != written_.end()) take(it);
    model_.insert(from);
    return;
  }
  // A directory renamed: a checkpoint written under a temporary directory name when it held a
  // model file (written, or known as one).
  const std::string prefix = from + '/';
  std::vector<std::string> under;
  bool held_model = false;
  for (const auto& [key, writers] : written_) {
    if (key.starts_with(prefix)) under.push_back(key);
  }
  for (const std::string& key : model_) held_model = held_model || key.starts_with(prefix);
  if (!held_model) return;
  for (const std::string& key : under) take(written_.find(key));
}

// --- SocketPeers

void SocketPeers::AddProcess(uint32_t process, const ProcessInfo& info) {
  if (process >= host_.size()) {
    host_.resize(process + 1);
    pid_.resize(process + 1);
  }
  host_[process] = info.host;
  pid_[process] = info.pid;
}

void SocketPeers::AddAddress(uint32_t process, std::string key) {
  directory_.try_emplace(std::move(key), process);
}

void SocketPeers::NoteSocket(const HostEvent& e) {
  if (e.path_id == 0) return;
  Identity& id = identities_[{e.process, e.path_id}];
  id.local = std::string(e.local);
  id.peer_pid = e.peer_pid;
  // An unnamed unix socket ("unix:") names no one: only its peer pid tells.
  if (!e.local.empty() && e.local != "unix:") {
    seen_.try_emplace(SocketAddressKey(HostKey(host_, e.process), e.local), e.process);
  }
}

PeerRole SocketPeers::RoleOf(const HostEvent& e, const JobProcesses& processes) const {
  auto it = identities_.find({e.process, e.path_id});
  if (it == identities_.end()) return PeerRole::kUnknown;
  const Identity& id = it->second;
  const JobProcess& self = processes[e.process];
  int64_t owner = -1;
  if (e.path.empty() || e.path == "unix:") {
    // An unnamed unix socket: the kernel's peer pid, on this host.
    if (id.peer_pid == 0) return PeerRole::kUnknown;
    if (id.peer_pid == self.info.pid) return PeerRole::kSelf;
    for (uint32_t i = 0; i < processes.size(); ++i) {
      if (processes[i].info.pid == id.peer_pid && processes[i].info.host == self.info.host) {
        owner = i;  // the last one: an exec'd image after the fork()ed copy it replaced
      }
    }
  } else {
    const std::string key = SocketAddressKey(HostKey(host_, e.process), e.path);
    auto found = directory_.find(key);
    if (found != directory_.end()) {
      owner = found->second;
    } else if (auto s = seen_.find(key); s != seen_.end() && InFamily(self, s->second)) {
      owner = s->second;
    }
  }
  if (owner < 0) return PeerRole::kOutside;
  const uint32_t other = static_cast<uint32_t>(owner);
  if (other == e.process) return PeerRole::kSelf;
  const JobProcess& peer = processes[other];
  if ((peer.worker && peer.parent == static_cast<int64_t>(e.process)) ||
      (self.worker && self.parent == owner)) {
    return PeerRole::kWorker;
  }
  return PeerRole::kJobProcess;
}

// --- Children

Cause ChildCause(uint32_t child, const JobProcesses& processes) {
  const JobProcess& p = processes[child];
  if (p.in_installer) return Cause::kLibraryInstallation;
  // The child and its descendants (a shell runs the real program as its child).
  bool download = false, data = false;
  for (uint32_t member : p.family) {
    const JobProcess& m = processes[member];
    bool descendant = member == child;
    int64_t up = m.parent;
    for (size_t hops = 0; !descendant && up >= 0 && hops < processes.size(); ++hops) {
      descendant = up == static_cast<int64_t>(child);
      up = processes[static_cast<uint32_t>(up)].parent;
    }
    if (!descendant) continue;
    if (m.in_installer) return Cause::kLibraryInstallation;
    const std::string& cmd = m.info.cmdline.empty() ? m.info.exe : m.info.cmdline;
    download = download || IsDownloadCommand(cmd);
    data = data || IsDataToolCommand(cmd);
  }
  if (download) return Cause::kExternalDownload;
  if (data) return Cause::kDataLoading;
  return Cause::kChildProcess;
}

int64_t WaitedChild(uint32_t process, uint32_t child_pid, const JobProcesses& processes) {
  if (child_pid == 0) return -1;
  const JobProcess& parent = processes[process];
  int64_t found = -1;
  for (uint32_t i = 0; i < processes.size(); ++i) {
    const JobProcess& c = processes[i];
    if (c.info.pid != child_pid || c.info.host != parent.info.host) continue;
    if (c.parent != static_cast<int64_t>(process) && c.info.ppid != parent.info.pid) continue;
    // The exec'd image (not forked) over the fork()ed copy it replaced.
    if (found < 0 || !c.info.forked) found = i;
  }
  return found;
}

void MappedFiles::Map(const HostEvent& e) {
  // Not code, not system state. A file named like a model's counts too: nanoGPT's dataset is
  // train.bin, and weights read through their pages are read all the same.
  if (e.writable || e.bytes == 0 || e.path_id == 0 || e.path.empty() || IsCodeFilePath(e.path) ||
      IsSystemPath(e.path)) {
    return;
  }
  std::vector<Mapping>& mappings = by_process_[e.process];
  if (mappings.size() >= kMaxPerProcess) mappings.erase(mappings.begin());
  mappings.push_back({e.addr, e.bytes, e.path_id, {e.start, kForever}});
}

void MappedFiles::Unmap(const HostEvent& e) {
  auto it = by_process_.find(e.process);
  if (it == by_process_.end()) return;
  for (Mapping& m : it->second) {
    if (m.when.end == kForever && m.addr >= e.addr &&
        m.addr - e.addr < std::max<uint64_t>(e.bytes, 1)) {
      m.when.end = e.end;
    }
  }
}

const MappedFiles::Mapping* MappedFiles::LargestAt(uint32_t process, Interval run) const {
  auto it = by_process_.find(process);
  if (it == by_process_.end()) return nullptr;
  const Mapping* largest = nullptr;
  for (const Mapping& m : it->second) {
    if (m.when.start >= run.end || m.when.end <= run.start) continue;
    if (largest == nullptr || m.bytes > largest->bytes) largest = &m;
  }
  return largest;
}

}  // namespace idlescope
