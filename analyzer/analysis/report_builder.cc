#include "analyzer/analysis/report_builder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzer/model/labels.h"

namespace idlescope {
namespace {

// Per-cause figures over the devices that ran work (the job's causes are their sums).
// A used device that several ranks drive while visible devices of its host stay unused.
struct SharedDevice {
  std::string device;
  int32_t lowest_rank = -1;
  uint64_t ranks = 0;
  uint64_t unused = 0;  // visible devices of the host that no process used
};

struct JobTotals {
  std::array<CauseTotals, kCauseCount> causes;
  std::array<Ns, kCauseCount> ns{};
  std::array<JobSaving, kCauseCount> savings;  // over the used devices
  DeviceWork work;                             // of the used devices together (saving bases)
  uint32_t used_devices = 0;
  Interval working{0, 0};    // the used devices' first kernel start to last kernel end
  KernelStats kernels;       // compute kernels of the used devices (grids only where SMs are known)
  bool any_kernels = false;  // some device ran a kernel (NCCL ones too)
  // By short-gap cause: the launch gaps stretched by waits for a CPU its fix removes too.
  std::array<Ns, kCauseCount> stretched_ns{};
  std::array<uint64_t, kCauseCount> stretched_gaps{};
  std::vector<SharedDevice> shared_devices;
};

// The devices of `host` that processes of two or more ranks drive (a missing
// torch.cuda.set_device(local_rank), or every rank given the same CUDA_VISIBLE_DEVICES), when
// `unused` of the host's visible devices stayed unused. Processes without a rank, and a rank's
// own family (its forked workers carry its rank), do not count.
void FindSharedDevices(const AnalysisResults& in, const std::string& host, uint32_t unused,
                       std::vector<SharedDevice>* out) {
  for (const DeviceResult& d : in.devices) {
    const KernelStats& k = d.kernels;
    if (d.host != host || k.kernels + k.nccl_kernels == 0) continue;
    const std::vector<int32_t>& ranks = d.ranks;
    if (ranks.size() < 2) continue;
    out->push_back(
        {.device = d.id, .lowest_rank = ranks.front(), .ranks = ranks.size(), .unused = unused});
  }
  std::sort(out->begin(), out->end(),
            [](const SharedDevice& a, const SharedDevice& b) { return a.device < b.device; });
}

DeviceReport DeviceFigures(const DeviceResult& d, Ns span) {
  const KernelStats& k = d.kernels;
  DeviceReport r;
  r.id = d.id;
  r.host = d.host;
  r.name = d.props.name;
  r.rank = d.rank;
  r.processes = d.processes;
  r.used = k.kernels + k.nccl_kernels > 0;
  r.compute_ns = d.compute_ns;
  r.comm_ns = d.comm_ns;
  r.transfer_ns = d.transfer_ns;
  r.any_kernel_ns = d.any_kernel_ns;
  r.idle_ns = span - r.compute_ns;
  r.compute_util = span > 0 ? static_cast<double>(r.compute_ns) / static_cast<double>(span) : 0;
  r.kernel_active_util =
      span > 0 ? static_cast<double>(r.any_kernel_ns) / static_cast<double>(span) : 0;
  r.kernels = k.kernels;
  r.nccl_kernels = k.nccl_kernels;
  r.median_kernel_ns = k.MedianKernelNs();
  if (k.with_grid > 0 && d.props.sm_count > 0) {
    r.below_sm_fraction = static_cast<double>(k.below_sm_count) / static_cast<double>(k.with_grid);
  }
  r.long_gaps = d.long_gaps;
  r.short_gaps = d.short_gaps;
  r.short_gap_ns = d.short_gap_ns;
  r.peak_memory = d.peak_memory;
  r.total_memory = d.props.total_memory;
  return r;
}

// What the fixes would remove from used device `d`'s timeline (r: its figures, totals: its
// credited idle time), added to the job's savings.
// The launch gaps of `d` stretched past min_gap by waits for a CPU that a fix of its short gaps
// removes with them (docs/attribution.md, "Launch gaps stretched by waits for a CPU"): only where
// its launching threads' CPU time per kernel is that of a short gap (a launch loop), not where
// they compute between kernels (augmentation on the training thread, waiting for a CPU too).
Ns StretchedLaunchGaps(const DeviceResult& d, Ns min_gap) {
  const uint64_t kernels = d.kernels.kernels;
  if (d.stretched_ns <= 0 || kernels == 0) return 0;
  return d.launcher_cpu_ns / static_cast<Ns>(kernels) < min_gap ? d.stretched_ns : 0;
}

void DeviceSavings(const AnalysisResults& in, const DeviceResult& d, const DeviceReport& r,
                   const std::array<CauseTotals, kCauseCount>& totals, Cause short_cause,
                   JobTotals& job) {
  const KernelStats& k = d.kernels;
  DeviceWork work{.compute_ns = d.compute_ns,
                  .collective_wait_ns = d.rank >= 0 ? in.collectives.WaitedNs(d.rank) : 0,
                  .small_kernel_ns = k.below_sm_ns};
  if (k.below_sm_count > 0 && d.props.sm_count > 0) {
    work.small_kernel_fill = static_cast<double>(k.below_sm_blocks) /
                             (static_cast<double>(k.below_sm_count) * d.props.sm_count);
  }
  if (r.peak_memory > 0 && r.total_memory > 0) {
    work.memory_headroom = static_cast<double>(r.total_memory) / static_cast<double>(r.peak_memory);
  }
  const Ns stretched = StretchedLaunchGaps(d, in.options.min_gap);
  if (stretched > 0) {
    job.stretched_ns[Index(short_cause)] += stretched;
    job.stretched_gaps[Index(short_cause)] += d.stretched_gaps;
  }
  for (int c = 0; c < kCauseCount; ++c) {
    const Ns idle = r.cause_ns[c] + (c == Index(short_cause) ? stretched : 0);
    Saving s = EstimateSaving(static_cast<Cause>(c), idle, totals[c], in.copy_rates, work);
    // The rank's waits for other ranks doing this: fixing it there removes them here.
    if (d.rank >= 0) s.ns += in.blame.WaitedFor(d.rank, static_cast<Cause>(c));
    job.savings[c].AddDevice(s);
  }
  // The job's work, for the bases: sums, the kernels' mean fill, the least headroom.
  DeviceWork& w = job.work;
  const double small = static_cast<double>(w.small_kernel_ns);
  const double mine = static_cast<double>(work.small_kernel_ns);
  if (small + mine > 0) {
    w.small_kernel_fill =
        (w.small_kernel_fill * small + work.small_kernel_fill * mine) / (small + mine);
  }
  w.compute_ns += work.compute_ns;
  w.collective_wait_ns += work.collective_wait_ns;
  w.small_kernel_ns += work.small_kernel_ns;
  if (work.memory_headroom > 0) {
    w.memory_headroom = w.memory_headroom > 0 ? std::min(w.memory_headroom, work.memory_headroom)
                                              : work.memory_headroom;
  }
  const Interval working{d.first_kernel, d.last_kernel_end};
  if (job.used_devices++ == 0) {
    job.working = working;
  } else {
    job.working = {std::min(job.working.start, working.start),
                   std::max(job.working.end, working.end)};
  }
}

// The devices' reports (by id), the unused visible ones, utilization, and the job's totals.
void DeviceReports(const AnalysisResults& in, JobReport& report, JobTotals& job) {
  const Ns span = report.span;
  bool any_kernels = false;
  for (const DeviceResult& d : in.devices) {
    any_kernels = any_kernels || d.kernels.kernels + d.kernels.nccl_kernels > 0;
  }
  job.any_kernels = any_kernels;
  const Cause idle_device_cause = any_kernels ? Cause::kUnusedGpus : Cause::kNoGpuWork;
  std::vector<uint32_t> order(in.devices.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return in.devices[a].id < in.devices[b].id; });
  for (uint32_t index : order) {
    const DeviceResult& d = in.devices[index];
    DeviceReport r = DeviceFigures(d, span);
    if (!r.used) {
      r.cause_ns[Index(idle_device_cause)] = span;
      job.causes[Index(idle_device_cause)].ns += span;
    } else {
      const std::array<CauseTotals, kCauseCount>& totals = d.causes;
      for (int c = 0; c < kCauseCount; ++c) r.cause_ns[c] = totals[c].ns;
      Cause short_cause = ShortGapCause(r.compute_util, r.peak_memory, r.total_memory);
      Ns short_ns = d.short_gap_ns - d.short_explained_ns;  // the rest is in the totals
      r.cause_ns[Index(short_cause)] += short_ns;
      job.causes[Index(short_cause)].ns += short_ns;
      for (int c = 0; c < kCauseCount; ++c) job.causes[c].Add(totals[c]);
      DeviceSavings(in, d, r, totals, short_cause, job);
      const KernelStats& k = d.kernels;
      job.kernels.kernels += k.kernels;
      job.kernels.kernel_ns += k.kernel_ns;
      if (d.props.sm_count > 0) {
        job.kernels.with_grid += k.with_grid;
        job.kernels.below_sm_count += k.below_sm_count;
      }
    }
    for (int c = 0; c < kCauseCount; ++c) job.ns[c] += r.cause_ns[c];
    if (!r.used && d.launches > 0) {
      report.warnings.push_back(
          {.kind = WarningKind::kLaunchesWithoutGpuRecords, .subject = d.id, .count = d.launches});
    }
    if (d.late_records > 0) {
      report.warnings.push_back({.kind = WarningKind::kLateGpuRecords,
                                 .subject = d.id,
                                 .count = d.late_records,
                                 .ns = d.late_ns});
    }
    report.devices.push_back(std::move(r));
  }
  if (any_kernels) {
    for (const std::string& host : report.hosts) {
      auto found = in.unused_visible.find(host);
      const uint32_t unused = found == in.unused_visible.end() ? 0 : found->second;
      if (unused > 0) FindSharedDevices(in, host, unused, &job.shared_devices);
      for (uint32_t k = 0; k < unused; ++k) {
        DeviceReport r;
        r.id = absl::StrCat(host, "/visible-unused-", k);
        r.host = host;
        r.idle_ns = span;
        r.cause_ns[Index(Cause::kUnusedGpus)] = span;
        job.ns[Index(Cause::kUnusedGpus)] += span;
        job.causes[Index(Cause::kUnusedGpus)].ns += span;
        report.devices.push_back(std::move(r));
      }
    }
  }
  const size_t device_count = report.devices.size();
  if (device_count == 0) {
    // No device at all: the whole run is a non-DL job, measured against its wall time.
    job.ns[Index(Cause::kNoGpuWork)] = span;
    job.causes[Index(Cause::kNoGpuWork)].ns = span;
    report.gpu_time = span;
    return;
  }
  report.gpu_time = span * static_cast<Ns>(device_count);
  for (const DeviceReport& r : report.devices) {
    report.compute_util += r.compute_util;
    report.kernel_active_util += r.kernel_active_util;
  }
  report.compute_util /= static_cast<double>(device_count);
  report.kernel_active_util /= static_cast<double>(device_count);
}

// Evidence ids are per trace file, except an installer span's (kLaunchEvidence: how the
// installer was launched), a child wait's object (CommandEvidence: the child's command) and a
// death span's object (kDeathEvidence: how the process died).
class EvidenceOf {
 public:
  EvidenceOf(const JobProcesses& processes, EvidenceResolver& evidence)
      : processes_(processes), evidence_(evidence) {}
  StringId String(uint32_t process, uint64_t id) {
    if (id == kLaunchEvidence) return evidence_.Intern(processes_.InstallerCommand(process));
    if (id == kDeathEvidence) {
      return process < processes_.size() ? evidence_.Intern(DeathLabel(processes_[process].info))
                                         : 0;
    }
    if (IsCommandEvidence(id)) {
      const uint32_t child = static_cast<uint32_t>(id & ~kCommandEvidenceBit);
      if (child < processes_.size()) {
        return evidence_.Intern(CommandLabel(processes_[child].info));
      }
      return 0;
    }
    return evidence_.String(process, id);
  }
  StackId Stack(uint32_t process, uint64_t id) {
    if (id != kLaunchEvidence) return evidence_.Stack(process, id);
    const JobProcesses::Launch* launch = processes_.LaunchOf(process);
    if (launch == nullptr || launch->stack == 0) return 0;
    return evidence_.Stack(launch->stack_process, launch->stack);
  }
  EvidenceItem StackItem(const EvidenceKey& key) {
    EvidenceItem item{.kind = EvidenceKind::kStack, .id = Stack(key.process, key.id)};
    if (item.id != 0) return item;
    return {.kind = EvidenceKind::kUnresolvedStack, .process = key.process, .trace_id = key.id};
  }
  EvidenceItem ObjectItem(const EvidenceKey& key) {
    EvidenceItem item{.kind = EvidenceKind::kObject, .id = String(key.process, key.id)};
    if (item.id != 0) return item;
    return {.kind = EvidenceKind::kUnresolvedObject, .process = key.process, .trace_id = key.id};
  }

 private:
  const JobProcesses& processes_;
  EvidenceResolver& evidence_;
};

// Blame across ranks: for each straggler finding's rank, what its activity explains of the others'
// waits, by cause (heaviest first, at least 1 ms), then the waits none of it covers.
std::vector<Finding> BlameFindings(const AnalysisResults& in,
                                   const std::vector<Finding>& stragglers, EvidenceOf& of) {
  constexpr Ns kMinBlameNs = 1'000'000;
  std::vector<Finding> out;
  auto waiting = [](Finding f, const absl::btree_set<int32_t>& waiters) {
    f.count = waiters.size();
    if (!waiters.empty()) {
      f.first_rank = *waiters.begin();
      f.last_rank = *waiters.rbegin();
    }
    return f;
  };
  for (const Finding& s : stragglers) {
    auto it = in.blame.stragglers().find(s.rank);
    if (it == in.blame.stragglers().end()) continue;
    const RankBlame::Straggler& b = it->second;
    std::vector<Finding> causes;
    for (int c = 0; c < kCauseCount; ++c) {
      const RankBlame::Blamed& blamed = b.causes[c];
      if (blamed.ns < kMinBlameNs) continue;
      Finding f{.kind = FindingKind::kBlamedActivity, .ns = blamed.ns, .rank = s.rank};
      f.cause = static_cast<Cause>(c);
      for (const auto& [key, weight] : blamed.stacks.Top(1))
        f.stack = of.Stack(key.process, key.id);
      for (const auto& [key, weight] : blamed.objects.Top(1)) {
        f.object = of.String(key.process, key.id);
      }
      causes.push_back(waiting(f, blamed.waiters));
    }
    std::sort(causes.begin(), causes.end(), [](const Finding& a, const Finding& b) {
      return a.ns != b.ns ? a.ns > b.ns : a.cause < b.cause;
    });
    out.insert(out.end(), causes.begin(), causes.end());
    if (b.unexplained_ns >= kMinBlameNs) {
      out.push_back(
          waiting({.kind = FindingKind::kBlamedCompute, .ns = b.unexplained_ns, .rank = s.rank},
                  b.waiters));
    }
  }
  return out;
}

void CauseReports(const AnalysisResults& in, const JobTotals& job, EvidenceResolver& evidence,
                  EvidenceOf& of, JobReport& report) {
  const size_t top = in.options.top_evidence;
  for (int c = 0; c < kCauseCount; ++c) {
    if (job.ns[c] <= 0) continue;
    const Cause cause = static_cast<Cause>(c);
    const CauseTotals& acc = job.causes[c];
    CauseReport r;
    r.cause = cause;
    r.ns = job.ns[c];
    r.share =
        report.gpu_time > 0 ? static_cast<double>(r.ns) / static_cast<double>(report.gpu_time) : 0;
    // The basis from the job's totals; the figures from the devices' timelines.
    Saving whole = EstimateSaving(cause, r.ns, acc, in.copy_rates, job.work);
    r.basis = whole.basis;
    if (cause == Cause::kUnusedGpus || cause == Cause::kNoGpuWork) {
      // Idle devices: released, they save all their time. The job's time: with the work spread
      // over every visible device, the used ones' working span shrinks to their share.
      r.saving_ns = whole.ns;
      const uint32_t visible = static_cast<uint32_t>(report.devices.size());
      if (cause == Cause::kUnusedGpus && job.used_devices > 0 && visible > job.used_devices) {
        r.basis = {.method = SavingMethod::kSpreadOverDevices,
                   .used_devices = job.used_devices,
                   .visible_devices = visible};
        r.job_saving_ns = job.working.length() * (visible - job.used_devices) / visible;
      }
    } else {
      r.saving_ns = job.savings[c].gpu_ns();
      r.job_saving_ns = job.savings[c].job_ns();
    }
    TotalsFindings(cause, r.ns, acc, job.kernels, &r.findings);
    if (job.stretched_ns[c] > 0) {
      r.findings.push_back({.kind = FindingKind::kStretchedLaunchGaps,
                            .ns = job.stretched_ns[c],
                            .count = job.stretched_gaps[c]});
    }
    if (cause == Cause::kStartup) in.startup.Findings(evidence, &r.findings);
    // An installer's span names the stack of the call that started it only when that call was
    // seen (JobAnalysis::Attribute).
    TopEvidence stacks;
    if (cause == Cause::kLibraryInstallation) {
      stacks = acc.stacks;
      for (uint32_t p = 0; p < in.processes.size(); ++p) {
        const JobProcesses::Launch* launch = in.processes.LaunchOf(p);
        if (launch == nullptr || launch->stack == 0) stacks.Erase({p, kLaunchEvidence});
      }
    }
    r.stacks = evidence.Heaviest(cause == Cause::kLibraryInstallation ? stacks : acc.stacks, top,
                                 [&](const EvidenceKey& k) { return of.StackItem(k); });
    r.objects =
        evidence.Heaviest(acc.objects, top, [&](const EvidenceKey& k) { return of.ObjectItem(k); });
    // Directories only say more than the files when there are many files.
    if (acc.objects.size() > top) {
      r.directories = evidence.Heaviest(acc.directories, top, [&](const EvidenceKey& key) {
        const std::string* name = in.directories.Find(key.id);
        return EvidenceItem{.kind = EvidenceKind::kDirectory,
                            .id = name == nullptr ? 0 : evidence.Intern(*name)};
      });
    }
    // A job without any kernel: what its threads did instead.
    if (cause == Cause::kNoGpuWork && !job.any_kernels) {
      PointAtHostActivity(report.host_activity, top, r);
      r.stacks = evidence.Merged(r.stacks, top);  // one item per user line, heaviest first
    }
    if (acc.stacks.evicted() || acc.objects.evicted()) {
      r.findings.push_back({.kind = FindingKind::kEvidenceApproximate});
    }
    report.causes.push_back(std::move(r));
  }
  // Unused GPUs: the devices several ranks crowd onto instead.
  for (CauseReport& c : report.causes) {
    if (c.cause != Cause::kUnusedGpus) continue;
    for (const SharedDevice& s : job.shared_devices) {
      c.findings.push_back({.kind = FindingKind::kRanksShareDevice,
                            .count = s.ranks,
                            .other_count = s.unused,
                            .rank = s.lowest_rank,
                            .api = evidence.Intern(s.device)});
    }
  }
  // A rank that died: every process that did, the first first (its death explains the rest).
  for (CauseReport& c : report.causes) {
    if (c.cause != Cause::kRankDied) continue;
    for (uint32_t p : in.processes.deaths()) {
      const ProcessInfo& info = in.processes[p].info;
      const ProcessEnd& e = info.ending;
      c.findings.push_back({.kind = FindingKind::kProcessDied,
                            .ns = e.at - in.job_start,
                            .count = e.footer() ? static_cast<uint64_t>(e.status) : 0,
                            .rank = info.rank,
                            .pid = info.pid,
                            .api = evidence.Intern(ProcessEndHow(e))});
    }
  }
  // Communication: the rank(s) the others waited for, and what they were doing meanwhile.
  std::vector<Finding> stragglers = in.collectives.Stragglers(3);
  std::vector<Finding> blamed = BlameFindings(in, stragglers, of);
  for (CauseReport& c : report.causes) {
    if (c.cause != Cause::kCommunication) continue;
    c.findings.insert(c.findings.end(), stragglers.begin(), stragglers.end());
    c.findings.insert(c.findings.end(), blamed.begin(), blamed.end());
  }
  std::sort(report.causes.begin(), report.causes.end(), [](const auto& a, const auto& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.cause < b.cause;
  });
  for (const CauseReport& c : report.causes) report.idle_ns += c.ns;
}

// The longest gaps. One gap, one story: a device that ran no kernel is one whole-span gap of the
// device's cause, as in the cause table (unused_gpus, or no_gpu_work when no device ran one), not
// the crediting's pieces between its copies or calls; a visible device no process used is one too.
void TopGaps(const AnalysisResults& in, const JobTotals& job, EvidenceOf& of, JobReport& report) {
  absl::flat_hash_set<std::string_view> whole;
  const Cause idle_device_cause = job.any_kernels ? Cause::kUnusedGpus : Cause::kNoGpuWork;
  for (const DeviceReport& d : report.devices) {
    if (d.used) continue;
    whole.insert(d.id);
    GapReport r;
    r.device = d.id;
    r.length = report.span;
    r.kind = GapKind::kWhole;
    r.causes = {{idle_device_cause, report.span}};
    report.top_gaps.push_back(std::move(r));
  }
  for (const ClosedGap& g : in.top_gaps) {
    if (whole.contains(in.devices[g.device].id)) continue;
    GapReport r;
    r.device = in.devices[g.device].id;
    r.start = g.gap.start - in.job_start;
    r.length = g.gap.length();
    r.kind = g.kind;
    for (int c = 0; c < kCauseCount; ++c) {
      if (g.cause_ns[c] > 0) r.causes.push_back({static_cast<Cause>(c), g.cause_ns[c]});
    }
    std::sort(r.causes.begin(), r.causes.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (g.has_main) {
      const Candidate& m = g.main;
      r.has_evidence = true;
      r.evidence = {.cause = m.cause,
                    .gpu_side = m.gpu_side,
                    .object = m.object != 0 ? of.String(m.process, m.object) : 0,
                    .bytes = m.bytes,
                    .stack = m.stack != 0 ? of.Stack(m.process, m.stack) : 0,
                    .pid = in.processes[m.process].info.pid,
                    .tid = m.tid};
    }
    report.top_gaps.push_back(std::move(r));
  }
  std::sort(report.top_gaps.begin(), report.top_gaps.end(),
            [](const GapReport& a, const GapReport& b) {
              if (a.length != b.length) return a.length > b.length;
              if (a.start != b.start) return a.start < b.start;
              return a.device < b.device;
            });
  if (report.top_gaps.size() > in.options.top_gaps) report.top_gaps.resize(in.options.top_gaps);
}

}  // namespace

void TotalsFindings(Cause cause, Ns idle_ns, const CauseTotals& acc, const KernelStats& kernels,
                    std::vector<Finding>* out) {
  auto note = [&](FindingKind kind, Ns ns) {
    if (ns > 0) out->push_back({.kind = kind, .ns = ns});
  };
  switch (cause) {
    case Cause::kHostGpuTransfer:
      out->push_back({.kind = FindingKind::kPageableCopies,
                      .ns = acc.pageable_ns,
                      .other_ns = idle_ns - acc.pageable_ns});
      note(FindingKind::kGpuOnlyCopies, acc.gpu_side_ns);
      return;
    case Cause::kCheckpointing:
      note(FindingKind::kSnapshotCopies, acc.snapshot_ns);
      note(FindingKind::kCheckpointWriterBehind, acc.writer_behind_ns);
      out->push_back({.kind = FindingKind::kCheckpointBytes,
                      .bytes = static_cast<uint64_t>(std::nearbyint(std::max(acc.bytes, 0.0)))});
      return;
    case Cause::kCommunication:
      for (size_t op = 1; op < acc.nccl_op_ns.size(); ++op) {
        if (acc.nccl_op_ns[op] <= 0) continue;
        Finding f{.kind = FindingKind::kNcclOpBlocked, .ns = acc.nccl_op_ns[op]};
        f.nccl_op = static_cast<NcclOp>(op);
        out->push_back(f);
      }
      note(FindingKind::kExposedNcclKernels, acc.gpu_side_ns);
      note(FindingKind::kPeerSocketTransfers, acc.socket_ns);
      return;
    case Cause::kDataLoading:
      note(FindingKind::kRemoteReads, acc.remote_ns);
      note(FindingKind::kWorkerQueueWaits, acc.worker_wait_ns);
      note(FindingKind::kWorkersComputing, acc.worker_cpu_ns);
      note(FindingKind::kWorkersReading, acc.worker_read_ns);
      note(FindingKind::kLauncherPreprocessing, acc.preprocess_ns);
      note(FindingKind::kStdinPipeWaits, acc.stdin_ns);
      return;
    case Cause::kSynchronization:
      note(FindingKind::kHostWorkAfterSync, acc.exposed_ns);
      return;
    case Cause::kCpuStarvation:
      note(FindingKind::kWorkersWaitingForCpu, acc.worker_cpu_wait_ns);
      return;
    case Cause::kSmallBatch:
    case Cause::kInsufficientMemory:
    case Cause::kLaunchBound:
      if (kernels.kernels > 0) {
        out->push_back({.kind = FindingKind::kComputeKernels,
                        .ns = kernels.kernel_ns,
                        .count = kernels.kernels});
      }
      if (kernels.with_grid > 0) {
        // A kernel with fewer blocks than SMs leaves SMs idle even while it runs.
        out->push_back({.kind = FindingKind::kKernelsBelowSmCount,
                        .count = kernels.below_sm_count,
                        .of_count = kernels.with_grid});
      }
      return;
    default:
      return;
  }
}

JobReport AssembleReport(const AnalysisResults& in, const SymbolSource& symbols) {
  JobReport report;
  EvidenceResolver evidence(symbols, &report.symbols, in.options.python_frames);
  EvidenceOf of(in.processes, evidence);
  report.min_gap = in.options.min_gap;
  report.processes = static_cast<uint32_t>(in.processes.size());
  report.span = in.job_end - in.job_start;
  report.events = in.host_events;
  report.gpu_activities = in.gpu_records;
  report.files = in.files;
  report.clocks = in.clocks;
  report.host_activity = in.host_activity.Build(in.processes, evidence);
  for (uint32_t i = 0; i < in.processes.size(); ++i) {
    const ProcessInfo& info = in.processes[i].info;
    if (info.rank >= 0) report.ranks.push_back(info.rank);
    report.hosts.push_back(info.host);
  }
  std::sort(report.ranks.begin(), report.ranks.end());
  report.ranks.erase(std::unique(report.ranks.begin(), report.ranks.end()), report.ranks.end());
  std::sort(report.hosts.begin(), report.hosts.end());
  report.hosts.erase(std::unique(report.hosts.begin(), report.hosts.end()), report.hosts.end());

  JobTotals job;
  DeviceReports(in, report, job);
  CauseReports(in, job, evidence, of, report);
  if (in.collectives.incomplete() > 0) {
    report.warnings.push_back({.kind = WarningKind::kIncompleteCollectives,
                               .count = in.collectives.incomplete(),
                               .other_count = in.processes.deaths().size()});
  }
  TopGaps(in, job, of, report);
  report.collectives = in.collective_stats.Summaries();
  report.slowest_collectives = in.collective_stats.Slowest(in.options.top_evidence, in.job_start);
  if (in.forgotten_candidates > 0) {
    report.warnings.push_back(
        {.kind = WarningKind::kForgottenCandidates, .count = in.forgotten_candidates});
  }
  if (in.late_candidates > 0) {
    report.warnings.push_back({.kind = WarningKind::kLateCandidates, .count = in.late_candidates});
  }
  for (const ReportWarning& w : in.warnings) report.warnings.push_back(w);
  return report;
}

}  // namespace idlescope
