#include "analyzer/analysis/job_merge.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analyzer/analysis/report_builder.h"

namespace idlescope {

JobMerge::JobMerge(const AnalysisOptions& options, JobInputs inputs)
    : options_(options), inputs_(std::move(inputs)) {
  if (options_.min_gap < 1) options_.min_gap = 1;
  processes_.Reserve(inputs_.processes.size());
  for (const ProcessInfo& info : inputs_.processes) processes_.Add(info);
  processes_.BuildFamilies();
}

void JobMerge::Add(PartResults part) {
  for (const ProcessResult& r : part.processes) {
    if (r.process >= processes_.size()) continue;
    JobProcess& p = processes_[r.process];
    p.last_seen = r.last_seen;
    p.end = r.end;
    p.ended = r.ended;
  }
  for (const InstallerLaunch& l : part.launches) processes_.RestoreLaunch(l.host, l.pid, l.launch);
  parts_.push_back(std::move(part));
}

Ns JobMerge::JobEnd() const { return processes_.JobEnd(processes_.JobStart()); }

JobMerge::Regroup JobMerge::Check() const {
  Regroup out;
  out.job_end = JobEnd();
  out.group_of.resize(parts_.size());
  std::iota(out.group_of.begin(), out.group_of.end(), 0);
  auto find = [&](uint32_t p) {
    while (out.group_of[p] != p) p = out.group_of[p] = out.group_of[out.group_of[p]];
    return p;
  };
  absl::flat_hash_map<std::string, uint32_t> part_of_device;
  for (uint32_t p = 0; p < parts_.size(); ++p) {
    bool remap = false;
    for (const DeviceResult& d : parts_[p].devices) {
      auto [it, inserted] = part_of_device.try_emplace(d.id, p);
      const uint32_t a = find(it->second), b = find(p);
      if (!inserted && a != b) {
        out.group_of[std::max(a, b)] = std::min(a, b);
        out.shared_devices = true;
      }
      remap = remap || TailChangeAt(d, out.job_end, options_.min_gap) == TailChange::kRemap;
    }
    if (remap) out.finish_later.push_back(p);
  }
  for (uint32_t p = 0; p < parts_.size(); ++p) out.group_of[p] = find(p);
  return out;
}

JobReport JobMerge::Build(const CrossRank& cross_rank, const SymbolSource& symbols) {
  const Ns job_start = processes_.JobStart();
  const Ns job_end = JobEnd();

  // Devices, each from the part that analyzed it, and the parts' longest gaps but the devices'
  // last ones, which come again run on to the job's end.
  std::vector<DeviceResult> devices;
  std::vector<ClosedGap> top_gaps;
  for (PartResults& part : parts_) {
    const uint32_t first = static_cast<uint32_t>(devices.size());
    for (ClosedGap& g : part.top_gaps) {
      if (g.device >= part.devices.size()) continue;
      const DeviceResult& d = part.devices[g.device];
      if (d.has_last_gap && d.last_gap.gap.start == g.gap.start && d.last_gap.kind == g.kind) {
        continue;
      }
      g.device += first;
      top_gaps.push_back(std::move(g));
    }
    for (DeviceResult& d : part.devices) devices.push_back(std::move(d));
  }
  for (uint32_t i = 0; i < devices.size(); ++i) {
    ExtendToJobEnd(devices[i], job_end, options_.min_gap);
    if (devices[i].has_last_gap) {
      ClosedGap g = devices[i].last_gap;
      g.device = i;
      top_gaps.push_back(std::move(g));
    }
  }
  // The longest (by length, then start, then device: the same whatever the split).
  std::sort(top_gaps.begin(), top_gaps.end(), [&](const ClosedGap& a, const ClosedGap& b) {
    if (a.gap.length() != b.gap.length()) return a.gap.length() > b.gap.length();
    if (a.gap.start != b.gap.start) return a.gap.start < b.gap.start;
    return devices[a.device].id < devices[b.device].id;
  });
  // A whole-span gap of an unused device is not listed (the report lists the device itself):
  // keep enough for the report's own choice.
  if (top_gaps.size() > options_.top_gaps + devices.size()) {
    top_gaps.resize(options_.top_gaps + devices.size());
  }

  // The stages' state, added up; the parts' counters.
  std::vector<uint32_t> visible(processes_.size(), 0);
  HostActivity host_activity(options_.top_evidence);
  Startup startup;
  for (uint32_t i = 0; i < processes_.size(); ++i) startup.AddProcess(i, processes_[i].info);
  CopyRates rates;
  DirectoryNames directories;
  uint64_t host_events = 0, gpu_records = 0, forgotten = 0, late = 0;
  std::vector<FileWarning> notices, read_warnings;
  std::vector<FileResult> files;
  for (PartResults& part : parts_) {
    for (const ProcessResult& r : part.processes) {
      if (r.process >= processes_.size()) continue;
      visible[r.process] = r.visible_devices;
      startup.Restore(r.process, r.startup);
    }
    host_activity.MergeFrom(part.host_activity);
    rates.MergeFrom(part.copy_rates);
    directories.MergeFrom(part.directories);
    host_events += part.host_events;
    gpu_records += part.gpu_records;
    forgotten += part.forgotten_candidates;
    late += part.late_candidates;
    for (FileWarning& w : part.warnings) {
      (w.warning.kind == WarningKind::kRecorderNotice ? notices : read_warnings)
          .push_back(std::move(w));
    }
    for (FileResult& f : part.files) files.push_back(std::move(f));
  }
  const UnusedVisibleByHost unused = UnusedVisibleOnHosts(inputs_.processes, visible, devices);

  // The reader's order: its notices, the skipped files, then each file's own warnings, by file.
  auto by_file = [](const auto& a, const auto& b) { return a.file < b.file; };
  std::stable_sort(notices.begin(), notices.end(), by_file);
  std::stable_sort(read_warnings.begin(), read_warnings.end(), by_file);
  std::stable_sort(files.begin(), files.end(), by_file);
  std::vector<ReportWarning> warnings;
  for (FileWarning& w : notices) warnings.push_back(std::move(w.warning));
  for (const ReportWarning& w : inputs_.skipped) warnings.push_back(w);
  for (FileWarning& w : read_warnings) warnings.push_back(std::move(w.warning));
  std::vector<FileReport> file_reports;
  for (FileResult& f : files) {
    if (f.file < processes_.size()) {
      f.report.ending = processes_[f.file].info.ending;
      if (f.report.ending.at != 0) f.report.ending.at -= job_start;
    }
    file_reports.push_back(std::move(f.report));
  }

  // The job's steps: chosen among every part's processes, in process order.
  std::vector<ProcessSteps> steps;
  for (PartResults& part : parts_) {
    for (ProcessSteps& s : part.steps) steps.push_back(std::move(s));
  }
  std::sort(steps.begin(), steps.end(),
            [](const ProcessSteps& a, const ProcessSteps& b) { return a.process < b.process; });

  JobReport report = AssembleReport({.options = options_,
                                     .job_start = job_start,
                                     .job_end = job_end,
                                     .processes = processes_,
                                     .devices = devices,
                                     .unused_visible = unused,
                                     .top_gaps = top_gaps,
                                     .late_candidates = late,
                                     .host_activity = host_activity,
                                     .collectives = cross_rank.collectives(),
                                     .blame = cross_rank.blame(),
                                     .collective_stats = cross_rank.stats(),
                                     .startup = startup,
                                     .copy_rates = rates,
                                     .directories = directories,
                                     .host_events = host_events,
                                     .gpu_records = gpu_records,
                                     .forgotten_candidates = forgotten,
                                     .warnings = warnings,
                                     .files = file_reports,
                                     .clocks = inputs_.clocks},
                                    symbols);
  bool from_markers = false;
  if (const ProcessSteps* chosen = ChooseSteps(steps, &from_markers)) {
    std::string anchor = chosen->marker;
    if (!from_markers) {
      anchor = ActivityTokenName(chosen->anchor);
      if (anchor.empty()) anchor = symbols.String(chosen->process, chosen->anchor);
      if (anchor.empty()) anchor = absl::StrCat("kernel#", chosen->anchor);
    }
    const uint32_t pid =
        chosen->process < processes_.size() ? processes_[chosen->process].info.pid : 0;
    report.steps = ReportSteps(*chosen, from_markers, std::move(anchor), pid, job_start,
                               report.top_gaps, chosen->devices);
  }
  return report;
}

}  // namespace idlescope
