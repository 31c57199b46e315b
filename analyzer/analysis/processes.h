// The job's processes (one per trace file) and how they relate (docs/attribution.md, "Devices"
// and "Library installation"):
//   - a process's family: itself, its ancestors and its descendants on the same host;
//   - the devices its events may explain (`devices`): the ones it drives itself (launches,
//     copies, syncs or GPU activity naming them); a process that drives none (a DataLoader
//     worker, an installer, a launcher) explains those of its nearest driving ancestor and of
//     its descendants. Another process of the family that drives devices of its own (a rank
//     forked by rank 0) is no candidate for them: one rank reaches another's gaps only through
//     the cross-rank rules;
//   - workers: fork()ed children still running their parent's program (DataLoader workers);
//   - installers: processes whose own command line is a package installer, every descendant of
//     one, and how each installer was launched (the exec/spawn that named its command line, the
//     call whose stack says where the job did it).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "analyzer/analysis/attribution.h"
#include "analyzer/model/job_model.h"

namespace idlescope {

inline constexpr Ns kForever = std::numeric_limits<Ns>::max();
// Candidate.stack / Candidate.object of an installer process's span: not an id of its trace file
// but "how this process was launched" (JobProcesses::LaunchOf), resolved when the report is
// built. Real ids are small counters, never this.
inline constexpr uint64_t kLaunchEvidence = ~uint64_t{0};
// Candidate.object of a wait for a child process: not an id of its trace file but the command of
// the child (process `child`, a JobProcesses index), resolved when the report is built.
inline constexpr uint64_t kCommandEvidenceBit = uint64_t{1} << 62;
inline constexpr uint64_t CommandEvidence(uint32_t child) { return kCommandEvidenceBit | child; }
inline constexpr bool IsCommandEvidence(uint64_t id) {
  return id != kLaunchEvidence && (id & kCommandEvidenceBit) != 0;
}
// Candidate.object of a death span (DeathSpan below): not an id of its trace file but how the
// process ended (model/labels.h, DeathLabel), resolved when the report is built.
inline constexpr uint64_t kDeathEvidence = uint64_t{1} << 61;

// "program arg1 arg2" from a NUL-separated argv (the program path when argv is empty), the
// program by its base name, at most 200 characters: as the traced process's Header.cmdline is
// joined, so both name the same program the same way.
std::string ProgramLabel(std::string_view program, std::string_view argv);
// A process's own command line (Header.cmdline, joined by spaces) as a program label.
std::string CommandLabel(const ProcessInfo& info);

// Whether a process died, as the end of its file tells (ProcessInfo::ending): it drove a GPU and
// ended of a signal other than SIGTERM and SIGINT (which stop a job: a scheduler, Ctrl-C, a
// launcher stopping the others), exited with a non-zero status, or left no footer while another
// process that drove a GPU ran on for more than kVanishedAfter past its last record (a job still
// running has all its files ending within a flush interval of each other; SIGKILL leaves no
// footer). model/labels.h names a death (DeathLabel).
inline constexpr Ns kVanishedAfter = 1'000'000'000;

struct JobProcess {
  ProcessInfo info;
  Ns last_seen = 0;  // end of its last record
  Ns end = 0;        // Footer.end_ns
  bool ended = false;
  bool read = false;             // every record of its file was read: End() is final
  bool installer = false;        // a package installer (its own command line)
  bool in_installer = false;     // the installer or one of its descendants
  bool worker = false;           // fork()ed from its parent, no exec: a DataLoader-style worker
  bool has_workers = false;      // the parent of workers
  int64_t parent = -1;           // its parent's index (the first process with its ppid and host)
  std::vector<uint32_t> family;  // itself, its ancestors and descendants (same host)
  std::vector<uint32_t> own_devices;  // devices it drives itself
  std::vector<uint32_t> devices;      // devices whose gaps its events may explain (see above)
  // The process whose candidate window holds its events (analysis/candidate_window.h): itself
  // when it drives a device, else its nearest driving ancestor, or -1 (the shared window) when
  // it has none or when its descendants drive devices too.
  int64_t window_owner = -1;

  uint32_t main_tid() const { return info.main_tid != 0 ? info.main_tid : info.pid; }
  // When it ended: its footer, or its last record when it has none.
  Ns End() const { return ended ? std::max(end, last_seen) : last_seen; }
};

class JobProcesses {
 public:
  // How an installer was launched.
  struct Launch {
    std::string command;  // "pip install -r requirements.txt" ("" until an exec/spawn is seen)
    uint32_t stack_process = 0;
    uint64_t stack = 0;       // per-process StackNode id in stack_process (0: none)
    bool exec_stack = false;  // the stack is the exec/spawn call's (preferred to the fork's)
  };

  void Add(const ProcessInfo& info);
  void Reserve(size_t n) { processes_.reserve(n); }
  // Families, workers and installers of the processes known now (again when one comes late).
  // Clears every process's `devices`: the caller links the devices again (NoteDeviceUse).
  void BuildFamilies();

  size_t size() const { return processes_.size(); }
  JobProcess& operator[](uint32_t i) { return processes_[i]; }
  const JobProcess& operator[](uint32_t i) const { return processes_[i]; }

  void Seen(uint32_t process, Ns t) {
    JobProcess& p = processes_[process];
    p.last_seen = std::max(p.last_seen, t);
  }
  void End(uint32_t process, Ns end);
  // The earliest process start (0 when there is none), the latest end.
  Ns JobStart() const;
  Ns JobEnd(Ns job_start) const;

  // `process` drives `device`: it, and the members of its family that drive no device of their
  // own, may explain the device's gaps.
  void NoteDeviceUse(uint32_t process, uint32_t device);

  // A fork, exec or spawn: remembered when it starts an installer.
  void NoteLaunch(const HostEvent& event);
  // The shell a spawn without a child pid (system(), popen) started (ShellChild below); 0 when
  // none is traced. A shell is found for one spawn only.
  uint32_t ShellChildOf(const HostEvent& event) { return ShellChild(event); }
  const Launch* LaunchOf(uint32_t process) const;
  // Every launch kept, by the installer's (host, pid), for summaries (analyzer/shard/); and one
  // put back (the first one given for a key stays).
  const absl::flat_hash_map<std::pair<std::string, uint32_t>, Launch>& launches() const {
    return launches_;
  }
  void RestoreLaunch(const std::string& host, uint32_t pid, const Launch& launch) {
    launches_.try_emplace({host, pid}, launch);
  }
  // What started installer `process`: the exec/spawn's command line, else its own.
  std::string InstallerCommand(uint32_t process) const;
  // One candidate per outermost installer process, covering its lifetime (kInstaller; its end
  // is set when it is used, since the process may still be running).
  std::vector<Candidate>& installer_spans() { return installer_spans_; }
  // The first death of a process that drove a GPU (the rule at kVanishedAfter), as a candidate from
  // its time on (rank_died; object kDeathEvidence, stack where a fatal signal landed); nullptr
  // when no such process died. Every later death is its aftermath, or a failure of its own that
  // the report lists (Deaths).
  const Candidate* death_span() const { return deaths_.empty() ? nullptr : &death_span_; }
  // Every process that died, by the time of its death.
  const std::vector<uint32_t>& deaths() const { return deaths_; }

  // The parent image of `process` for the programs of the host activity report: the last
  // process with its ppid and host (an exec'd twin comes after the forked copy it replaced).
  const JobProcess* ImageParent(uint32_t process) const;

 private:
  // The shell a spawn without a child pid (popen, system) started: the caller's child on its
  // host, not a fork()ed copy, started during the call (its start is read in 10 ms ticks), not
  // matched before, the closest to the call's start; 0 when none is traced.
  uint32_t ShellChild(const HostEvent& e);
  // death_span_ and deaths_ from the processes' ends.
  void FindDeaths();
  // Sets `devices` of `process` from the own devices of its family (the rule above).
  void UpdateExplained(uint32_t process);

  std::vector<JobProcess> processes_;
  std::vector<Candidate> installer_spans_;
  Candidate death_span_;  // when deaths_ has one
  std::vector<uint32_t> deaths_;
  // Keyed by (host, pid) of the installer; only installers are kept.
  absl::flat_hash_map<std::pair<std::string, uint32_t>, Launch> launches_;
  absl::flat_hash_set<std::pair<std::string, uint32_t>> installer_pids_;
  absl::flat_hash_set<std::pair<std::string, uint32_t>> shell_children_;  // ShellChild's finds
};

}  // namespace idlescope
