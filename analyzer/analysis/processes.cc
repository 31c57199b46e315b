#include "analyzer/analysis/processes.h"

#include <signal.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "analyzer/analysis/event_classes.h"

namespace idlescope {
namespace {

// Longest command line kept for a program label.
constexpr size_t kProgramLabelMax = 200;

}  // namespace

std::string ProgramLabel(std::string_view program, std::string_view argv) {
  std::string label;
  size_t pos = 0;
  while (pos < argv.size() && label.size() < kProgramLabelMax) {
    size_t stop = argv.find('\0', pos);
    if (stop == std::string_view::npos) stop = argv.size();
    if (stop > pos) {
      if (!label.empty()) label += ' ';
      label.append(argv.substr(pos, stop - pos));
    }
    pos = stop + 1;
  }
  if (label.empty()) label = std::string(program);
  // The program by its name (argv[0] is "python3" or "/usr/bin/python3" depending on the caller).
  size_t space = label.find(' ');
  size_t slash = label.rfind('/', space == std::string::npos ? label.size() : space);
  if (slash != std::string::npos && slash + 1 < label.size()) label.erase(0, slash + 1);
  if (label.size() > kProgramLabelMax) label.resize(kProgramLabelMax);
  return label;
}

std::string CommandLabel(const ProcessInfo& info) {
  std::string argv = info.cmdline;  // joined by spaces: as a NUL-separated argv, in effect
  std::replace(argv.begin(), argv.end(), ' ', '\0');
  return ProgramLabel(info.exe, argv);
}

void JobProcesses::Add(const ProcessInfo& info) {
  JobProcess p;
  p.info = info;
  p.last_seen = info.start;
  processes_.push_back(std::move(p));
}

void JobProcesses::BuildFamilies() {
  const uint32_t n = static_cast<uint32_t>(processes_.size());
  // Processes by (host, pid), in index order: a parent is the first process with the child's
  // ppid and host; a fork()ed copy that exec'd has a twin of the same pid.
  absl::flat_hash_map<std::pair<std::string_view, uint32_t>, std::vector<uint32_t>> by_pid;
  for (uint32_t i = 0; i < n; ++i) {
    by_pid[{processes_[i].info.host, processes_[i].info.pid}].push_back(i);
  }
  for (uint32_t i = 0; i < n; ++i) {
    const ProcessInfo& info = processes_[i].info;
    processes_[i].parent = -1;
    auto it = by_pid.find({info.host, info.ppid});
    if (it == by_pid.end()) continue;
    for (uint32_t j : it->second) {
      if (j != i) {
        processes_[i].parent = j;
        break;
      }
    }
  }
  // Each process's ancestors, nearest first (a pid reused into a cycle stops the walk).
  std::vector<std::vector<uint32_t>> ancestors(n);
  for (uint32_t i = 0; i < n; ++i) {
    int64_t at = processes_[i].parent;
    for (uint32_t hops = 0; hops < n && at >= 0 && static_cast<uint32_t>(at) != i; ++hops) {
      const uint32_t a = static_cast<uint32_t>(at);
      if (std::find(ancestors[i].begin(), ancestors[i].end(), a) != ancestors[i].end()) break;
      ancestors[i].push_back(a);
      at = processes_[a].parent;
    }
  }
  installer_spans_.clear();
  installer_pids_.clear();
  for (JobProcess& p : processes_) {
    p.installer = IsInstallerCommand(p.info.exe, p.info.cmdline);
    if (p.installer) installer_pids_.emplace(p.info.host, p.info.pid);
    p.has_workers = false;
    p.family.clear();
  }
  // Families: itself, its ancestors and its descendants, in index order.
  for (uint32_t i = 0; i < n; ++i) {
    processes_[i].family.push_back(i);
    for (uint32_t a : ancestors[i]) {
      processes_[i].family.push_back(a);
      processes_[a].family.push_back(i);
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    JobProcess& p = processes_[i];
    std::sort(p.family.begin(), p.family.end());
    p.family.erase(std::unique(p.family.begin(), p.family.end()), p.family.end());
    p.own_devices.clear();
    p.devices.clear();
    p.window_owner = -1;
    bool installer_ancestor = false;
    for (uint32_t a : ancestors[i])
      installer_ancestor = installer_ancestor || processes_[a].installer;
    // What an installer's children do (a build backend, a compiler, a download helper) is part
    // of the installation.
    p.in_installer = p.installer || installer_ancestor;
    // A worker runs its parent's program: forked and not exec'd since. An exec'd child starts a
    // trace of its own with its new command line and the same pid, so a forked file with such a
    // twin is only the moment between fork() and exec() (subprocess.run, os.system).
    p.worker = false;
    if (p.parent >= 0 && p.info.forked) {
      JobProcess& q = processes_[p.parent];
      bool execd = false;
      for (uint32_t j : by_pid[{p.info.host, p.info.pid}]) {
        execd = execd || (j != i && !processes_[j].info.forked);
      }
      if (!execd && p.info.exe == q.info.exe && p.info.cmdline == q.info.cmdline) {
        p.worker = true;
        q.has_workers = true;
      }
    }
    // Only the outermost installer gets a span: its descendants' lifetimes lie within it.
    if (p.installer && !installer_ancestor) {
      Candidate span;
      span.when = {p.info.start, kForever};
      span.cause = Cause::kLibraryInstallation;
      span.event_class = EventClass::kInstaller;
      span.process = i;
      installer_spans_.push_back(span);
    }
  }
  FindDeaths();
}

namespace {

// Whether `info`'s process died (the rule at DeathLabel), given the latest end of the job's
// other GPU processes.
bool Died(const ProcessInfo& info, Ns others_end) {
  const ProcessEnd& e = info.ending;
  if (!e.drove_gpu) return false;
  switch (e.reason) {
    case EXIT_SIGNAL:
      return e.status != SIGTERM && e.status != SIGINT;
    case EXIT_NORMAL:
    case EXIT_UNDERSCORE:
      return e.status != 0;
    case EXIT_UNSPECIFIED:
      return e.at > 0 && others_end > e.at + kVanishedAfter;
    default:
      return false;
  }
}

}  // namespace

void JobProcesses::FindDeaths() {
  death_span_ = Candidate();
  deaths_.clear();
  const uint32_t n = static_cast<uint32_t>(processes_.size());
  // The two latest ends of GPU processes: each process is compared with the latest of the others.
  Ns latest = 0, second = 0;
  uint32_t latest_at = n;
  for (uint32_t i = 0; i < n; ++i) {
    const ProcessEnd& e = processes_[i].info.ending;
    if (!e.drove_gpu) continue;
    if (e.at > latest) {
      second = latest;
      latest = e.at;
      latest_at = i;
    } else {
      second = std::max(second, e.at);
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (Died(processes_[i].info, i == latest_at ? second : latest)) deaths_.push_back(i);
  }
  std::stable_sort(deaths_.begin(), deaths_.end(), [&](uint32_t a, uint32_t b) {
    return processes_[a].info.ending.at < processes_[b].info.ending.at;
  });
  if (deaths_.empty()) return;
  const uint32_t first = deaths_.front();
  death_span_.when = {processes_[first].info.ending.at, kForever};
  death_span_.cause = Cause::kRankDied;
  death_span_.process = first;
  death_span_.tid = processes_[first].main_tid();
  death_span_.object = kDeathEvidence;
  death_span_.stack = processes_[first].info.ending.stack;
}

void JobProcesses::End(uint32_t process, Ns end) {
  JobProcess& p = processes_[process];
  p.ended = true;
  p.end = std::max(end, p.info.start);
}

Ns JobProcesses::JobStart() const {
  Ns start = kForever;
  for (const JobProcess& p : processes_) start = std::min(start, p.info.start);
  return start == kForever ? 0 : start;
}

Ns JobProcesses::JobEnd(Ns job_start) const {
  Ns end = job_start;
  for (const JobProcess& p : processes_) end = std::max(end, p.End());
  return end;
}

void JobProcesses::NoteDeviceUse(uint32_t process, uint32_t device) {
  std::vector<uint32_t>& own = processes_[process].own_devices;
  if (std::find(own.begin(), own.end(), device) != own.end()) return;
  own.push_back(device);
  // Only the family's members can change what they explain: their anchors are in it.
  for (uint32_t member : processes_[process].family) UpdateExplained(member);
}

void JobProcesses::UpdateExplained(uint32_t process) {
  JobProcess& p = processes_[process];
  p.devices = p.own_devices;
  p.window_owner = -1;
  if (!p.own_devices.empty()) {
    p.window_owner = process;
    return;
  }
  auto add = [&](const std::vector<uint32_t>& devices) {
    for (uint32_t d : devices) {
      if (std::find(p.devices.begin(), p.devices.end(), d) == p.devices.end()) {
        p.devices.push_back(d);
      }
    }
  };
  // The nearest ancestor that drives a device: the rank whose worker or helper this is.
  int64_t at = p.parent;
  for (size_t hops = 0; hops < processes_.size() && at >= 0; ++hops) {
    const JobProcess& ancestor = processes_[at];
    if (!ancestor.own_devices.empty()) {
      add(ancestor.own_devices);
      p.window_owner = at;
      break;
    }
    at = ancestor.parent;
  }
  // Its descendants' devices: a launcher explains the ranks it started (family members that are
  // not descendants are ancestors, already walked).
  for (uint32_t member : p.family) {
    if (member == process) continue;
    bool ancestor = false;
    int64_t up = p.parent;
    for (size_t hops = 0; hops < processes_.size() && up >= 0 && !ancestor; ++hops) {
      ancestor = up == member;
      up = processes_[up].parent;
    }
    if (ancestor || processes_[member].own_devices.empty()) continue;
    add(processes_[member].own_devices);
    p.window_owner = -1;  // explains devices of several processes
  }
}

uint32_t JobProcesses::ShellChild(const HostEvent& e) {
  const ProcessInfo& parent = processes_[e.process].info;
  // A process start is read in clock ticks (10 ms on Linux): it may read up to a tick early.
  constexpr Ns kTick = 10'000'000;
  uint32_t best = 0;
  Ns best_distance = 0;
  for (const JobProcess& child : processes_) {
    const ProcessInfo& info = child.info;
    if (info.ppid != parent.pid || info.host != parent.host || info.forked) continue;
    if (info.start < e.start - 2 * kTick || info.start > e.end + kTick) continue;
    if (shell_children_.contains(std::make_pair(info.host, info.pid))) continue;
    Ns distance = info.start > e.start ? info.start - e.start : e.start - info.start;
    if (best == 0 || distance < best_distance) {
      best = info.pid;
      best_distance = distance;
    }
  }
  if (best != 0) shell_children_.insert(std::make_pair(parent.host, best));
  return best;
}

void JobProcesses::NoteLaunch(const HostEvent& e) {
  // exec keeps the pid (the installer is the caller itself); fork and posix_spawn name the child;
  // popen and system do not (a spawn without a child pid): the shell they started is found.
  const JobProcess& p = processes_[e.process];
  uint32_t pid = e.type == PROC_EXEC ? p.info.pid : e.child_pid;
  if (pid == 0 && e.type == PROC_SPAWN && IsInstallerCommand(e.path, e.argv)) pid = ShellChild(e);
  if (pid == 0) return;
  bool names_installer = e.type != PROC_FORK && IsInstallerCommand(e.path, e.argv);
  auto key = std::make_pair(p.info.host, pid);
  auto it = launches_.find(key);
  if (it == launches_.end()) {
    // Only installers are kept: a job forks and execs many programs. (An installer's own exec of
    // itself is no launch of it: its first launch came before.)
    bool installer = names_installer || (installer_pids_.contains(key) && !p.installer);
    if (!installer) return;
    it = launches_.emplace(key, Launch{}).first;
  }
  Launch& launch = it->second;
  bool exec_like = e.type != PROC_FORK;
  // The first exec/spawn names the command (a later one is the installer re-exec'ing itself).
  if (exec_like && launch.command.empty()) launch.command = ProgramLabel(e.path, e.argv);
  if (e.stack != 0 && (launch.stack == 0 || (exec_like && !launch.exec_stack))) {
    launch.stack_process = e.process;
    launch.stack = e.stack;
    launch.exec_stack = exec_like;
  }
}

const JobProcesses::Launch* JobProcesses::LaunchOf(uint32_t process) const {
  const ProcessInfo& info = processes_[process].info;
  auto it = launches_.find(std::make_pair(info.host, info.pid));
  return it == launches_.end() ? nullptr : &it->second;
}

std::string JobProcesses::InstallerCommand(uint32_t process) const {
  const Launch* launch = LaunchOf(process);
  if (launch != nullptr && !launch->command.empty()) return launch->command;
  // Not seen started (its parent untraced): its own command line.
  return CommandLabel(processes_[process].info);
}

const JobProcess* JobProcesses::ImageParent(uint32_t process) const {
  const JobProcess* parent = nullptr;
  const ProcessInfo& info = processes_[process].info;
  for (uint32_t j = 0; j < processes_.size(); ++j) {
    const ProcessInfo& other = processes_[j].info;
    if (j != process && other.pid == info.ppid && other.host == info.host) {
      parent = &processes_[j];
    }
  }
  return parent;
}

}  // namespace idlescope
