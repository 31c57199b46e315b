#include "analyzer/shard/merge.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "analyzer/analysis/cross_rank.h"
#include "analyzer/analysis/devices.h"
#include "analyzer/analysis/evidence.h"
#include "analyzer/analysis/host_activity.h"
#include "analyzer/analysis/processes.h"
#include "analyzer/analysis/report_builder.h"
#include "analyzer/analysis/startup.h"
#include "analyzer/shard/plan.h"
#include "analyzer/shard/summary.h"

namespace idlescope {
namespace {

// Where a device's tail lay when its shard finished it, against the job's end.
enum class TailChange { kNone, kExtend, kRemap };

TailChange TailAt(const DeviceResult& d, Ns job_end, Ns min_gap) {
  if (job_end <= d.finished_at) return TailChange::kNone;
  if (d.first_kernel < 0) return TailChange::kExtend;  // a whole-span gap, always attributed
  const Ns before = d.finished_at - d.last_kernel_end;
  const Ns after = job_end - d.last_kernel_end;
  // A short tail that becomes long is attributed differently (short gaps: only the launching
  // threads' blocking host work): the shard must finish at the job's end.
  if (before > 0 && before < min_gap && after >= min_gap) return TailChange::kRemap;
  return TailChange::kExtend;
}

// The device's last gap runs to the job's end: the time after its shard's end had no candidate
// there (every process it read had ended), so it is the residual of the gap's kind.
void ExtendTail(DeviceResult& d, Ns job_end, Ns min_gap) {
  const Ns ext = job_end - d.finished_at;
  if (ext <= 0) return;
  const Ns before = d.finished_at - d.last_kernel_end;
  d.finished_at = job_end;
  if (d.first_kernel >= 0 && before == 0) {
    // No gap where the shard ended: a new one, short or long, that nothing explains.
    if (ext < min_gap) {
      ++d.short_gaps;
      d.short_gap_ns += ext;
      return;
    }
    ++d.long_gaps;
    d.has_last_gap = true;
    d.last_gap = ClosedGap{};
    d.last_gap.gap = {d.last_kernel_end, d.last_kernel_end};
    d.last_gap.kind = GapKind::kTail;
  } else if (d.first_kernel >= 0 && before < min_gap) {
    d.short_gap_ns += ext;  // still short (TailAt sent those that grow long back to be mapped)
    return;
  }
  if (!d.has_last_gap) return;
  ClosedGap& g = d.last_gap;
  const Cause residual = g.kind == GapKind::kTail ? Cause::kTail : Cause::kUnknown;
  g.gap.end += ext;
  g.cause_ns[Index(residual)] += ext;
  g.residual_ns += ext;
  g.has_main = g.main_found && g.main_ns >= g.residual_ns;
  d.causes[Index(residual)].ns += ext;
  if (g.kind == GapKind::kTail) d.causes[Index(Cause::kTail)].tail_ns += ext;
}

std::vector<uint32_t> Sorted(const google::protobuf::RepeatedField<uint32_t>& ids) {
  std::vector<uint32_t> v(ids.begin(), ids.end());
  std::sort(v.begin(), v.end());
  return v;
}

// The plan with the shards of each group (by shard index) made one; the unions' new indices.
shard::Plan Unite(const shard::Plan& plan, const std::vector<uint32_t>& group_of,
                  std::vector<uint32_t>* united) {
  shard::Plan out = plan;
  out.clear_shards();
  std::map<uint32_t, uint32_t> new_index;  // group -> index in `out`
  std::vector<uint32_t> sizes(group_of.size(), 0);
  for (uint32_t g : group_of) ++sizes[g];
  for (uint32_t s = 0; s < group_of.size(); ++s) {
    const uint32_t g = group_of[s];
    auto [it, inserted] = new_index.try_emplace(g, out.shards_size());
    if (inserted) {
      out.add_shards();
      if (sizes[g] > 1) united->push_back(it->second);
    }
    shard::Shard* into = out.mutable_shards(static_cast<int>(it->second));
    const shard::Shard& from = plan.shards(static_cast<int>(s));
    for (uint32_t i : from.owned()) {
      into->add_owned(i);
      out.mutable_files(static_cast<int>(i))->set_owner(it->second);
    }
    for (uint32_t i : from.guests()) into->add_guests(i);
  }
  for (shard::Shard& s : *out.mutable_shards()) {
    std::vector<uint32_t> owned = Sorted(s.owned());
    absl::flat_hash_set<uint32_t> own(owned.begin(), owned.end());
    std::vector<uint32_t> guests = Sorted(s.guests());
    guests.erase(std::unique(guests.begin(), guests.end()), guests.end());
    std::erase_if(guests, [&](uint32_t i) { return own.contains(i); });
    s.clear_owned();
    s.clear_guests();
    for (uint32_t i : owned) s.add_owned(i);
    for (uint32_t i : guests) s.add_guests(i);
  }
  return out;
}

// What a summary names must exist: its processes in the plan, its gaps' devices in it. (A summary
// is a file a user hands over: a corrupt one is an error, never a crash.)
absl::Status CheckSummary(const shard::Summary& s, uint32_t files) {
  auto bad = [&](const char* what) {
    return absl::InvalidArgumentError(
        absl::StrFormat("summary of shard %u is corrupt: %s out of range", s.shard(), what));
  };
  auto evidence = [&](const shard::Evidence& e) {
    for (uint32_t p : e.process()) {
      if (p >= files) return false;
    }
    return true;
  };
  for (const shard::ProcessResult& r : s.processes()) {
    if (r.process() >= files) return bad("a process");
  }
  for (const shard::DeviceResult& d : s.devices()) {
    for (const shard::CauseTotals& t : d.causes()) {
      if (!evidence(t.stacks()) || !evidence(t.objects())) return bad("an evidence process");
    }
    if (d.has_last_gap() && d.last_gap().main().process() >= files) return bad("a gap's process");
  }
  for (const shard::Gap& g : s.top_gaps()) {
    if (g.device() >= static_cast<uint32_t>(s.devices_size())) return bad("a gap's device");
    if (g.main().process() >= files) return bad("a gap's process");
  }
  for (const shard::ActivityTable& t : s.host_activity().tables()) {
    for (const shard::ActivityItem& item : t.items()) {
      if (item.process() >= files) return bad("a host activity process");
    }
  }
  for (const shard::Launch& l : s.launches()) {
    if (l.stack_process() >= files) return bad("a launch's process");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MergeResult> MergeSummaries(const shard::Plan& plan,
                                           const std::vector<const SummaryFile*>& summaries) {
  const uint32_t shards = static_cast<uint32_t>(plan.shards_size());
  const uint32_t files = static_cast<uint32_t>(plan.files_size());
  if (absl::Status s = CheckPlan(plan); !s.ok()) return s;
  // Each shard's summary, by the processes it owns and its guests.
  std::map<std::pair<std::vector<uint32_t>, std::vector<uint32_t>>, uint32_t> shard_of;
  for (uint32_t s = 0; s < shards; ++s) {
    const shard::Shard& sh = plan.shards(static_cast<int>(s));
    shard_of[{Sorted(sh.owned()), Sorted(sh.guests())}] = s;
  }
  std::vector<const shard::Summary*> of(shards, nullptr);
  std::vector<const SummaryFile*> file_of(shards, nullptr);
  for (const SummaryFile* file : summaries) {
    const shard::Summary* summary = &file->state();
    if (summary->format() != kShardFormat) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "summary of format %u, this idlescope reads format %u", summary->format(), kShardFormat));
    }
    if (absl::Status s = CheckCauses(*summary); !s.ok()) return s;
    auto it = shard_of.find({Sorted(summary->owned()), Sorted(summary->guests())});
    if (it == shard_of.end()) continue;
    if (absl::Status s = CheckSummary(*summary, files); !s.ok()) return s;
    // A shard mapped again to the job's end: its newer summary.
    const shard::Summary*& chosen = of[it->second];
    if (chosen == nullptr || summary->finished_at() >= chosen->finished_at()) {
      chosen = summary;
      file_of[it->second] = file;
    }
  }
  for (uint32_t s = 0; s < shards; ++s) {
    if (of[s] == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("no summary of shard %u of the plan", s));
    }
  }
  const AnalysisOptions options = ToAnalysisOptions(plan.options());

  // The job's processes, and its end: the latest end of any process (each is owned by a shard).
  JobProcesses processes;
  for (uint32_t i = 0; i < files; ++i) {
    const shard::PlannedFile& f = plan.files(static_cast<int>(i));
    processes.Add(ToProcessInfo(f.process(), f.path()));
  }
  processes.BuildFamilies();
  for (uint32_t s = 0; s < shards; ++s) {
    for (const shard::ProcessResult& r : of[s]->processes()) {
      if (r.process() >= files) continue;
      JobProcess& p = processes[r.process()];
      p.last_seen = r.last_seen();
      p.end = r.end();
      p.ended = r.ended();
    }
    for (const shard::Launch& l : of[s]->launches()) {
      processes.RestoreLaunch(l.host(), l.pid(),
                              {.command = l.command(),
                               .stack_process = l.stack_process(),
                               .stack = l.stack(),
                               .exec_stack = l.exec_stack()});
    }
  }
  const Ns job_start = plan.job_start();
  const Ns job_end = processes.JobEnd(job_start);

  // Devices: each analyzed by one shard; a device two shards drove sends them back as one.
  std::vector<DeviceResult> devices;
  std::vector<uint32_t> first_device(shards, 0);
  absl::flat_hash_map<std::string, uint32_t> shard_of_device;
  std::vector<uint32_t> group(shards);
  std::iota(group.begin(), group.end(), 0);
  auto find = [&](uint32_t s) {
    while (group[s] != s) s = group[s] = group[group[s]];
    return s;
  };
  bool crowded = false;
  std::vector<uint32_t> finish_later;  // shards whose short tails grow long
  for (uint32_t s = 0; s < shards; ++s) {
    first_device[s] = static_cast<uint32_t>(devices.size());
    bool remap = false;
    for (const shard::DeviceResult& m : of[s]->devices()) {
      DeviceResult d = FromMessage(m);
      auto [it, inserted] = shard_of_device.try_emplace(d.id, s);
      if (!inserted && find(it->second) != find(s)) {
        group[find(s)] = find(it->second);
        crowded = true;
      }
      remap = remap || TailAt(d, job_end, options.min_gap) == TailChange::kRemap;
      devices.push_back(std::move(d));
    }
    if (remap) finish_later.push_back(s);
  }
  if (crowded || !finish_later.empty()) {
    MergeResult result;
    std::vector<uint32_t> group_of(shards);
    for (uint32_t s = 0; s < shards; ++s) group_of[s] = find(s);
    result.replan = Unite(plan, group_of, &result.remap);
    if (!finish_later.empty()) {
      result.replan.set_job_end_hint(std::max(plan.job_end_hint(), job_end));
      for (uint32_t s : finish_later)
        result.remap.push_back(
            result.replan.files(static_cast<int>(plan.shards(static_cast<int>(s)).owned(0)))
                .owner());
    }
    std::sort(result.remap.begin(), result.remap.end());
    result.remap.erase(std::unique(result.remap.begin(), result.remap.end()), result.remap.end());
    result.why = crowded ? "shards that drove the same device are analyzed as one"
                         : "devices whose short tail grows long by the job's end are analyzed "
                           "again up to it";
    return result;
  }

  // Every device's last gap to the job's end; the longest gaps with the extended ones.
  std::vector<ClosedGap> top_gaps;
  for (uint32_t s = 0; s < shards; ++s) {
    for (const shard::Gap& m : of[s]->top_gaps()) {
      ClosedGap g = FromMessage(m);
      g.device += first_device[s];
      const DeviceResult& d = devices[g.device];
      // The device's last gap comes again below, extended.
      if (d.has_last_gap && d.last_gap.gap.start == g.gap.start && d.last_gap.kind == g.kind) {
        continue;
      }
      top_gaps.push_back(g);
    }
  }
  for (uint32_t i = 0; i < devices.size(); ++i) {
    ExtendTail(devices[i], job_end, options.min_gap);
    if (devices[i].has_last_gap) {
      ClosedGap g = devices[i].last_gap;
      g.device = i;
      top_gaps.push_back(g);
    }
  }
  // The longest (by length, then start, then device: any order of shards gives the same).
  std::sort(top_gaps.begin(), top_gaps.end(), [&](const ClosedGap& a, const ClosedGap& b) {
    if (a.gap.length() != b.gap.length()) return a.gap.length() > b.gap.length();
    if (a.gap.start != b.gap.start) return a.gap.start < b.gap.start;
    return devices[a.device].id < devices[b.device].id;
  });
  // A whole-span gap of an unused device is not listed (the report lists the device itself);
  // keep enough for the report's own choice.
  if (top_gaps.size() > options.top_gaps + devices.size()) {
    top_gaps.resize(options.top_gaps + devices.size());
  }

  // Visible devices no process used, by host.
  UnusedVisibleByHost unused;
  {
    absl::flat_hash_map<std::string, uint32_t> most_visible, used;
    absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> tokens;
    for (uint32_t i = 0; i < files; ++i) {
      const ProcessInfo& info = processes[i].info;
      most_visible.try_emplace(info.host, 0);
      for (absl::string_view t :
           absl::StrSplit(info.cuda_visible_devices, ',', absl::SkipWhitespace())) {
        tokens[info.host].insert(std::string(t));
      }
    }
    for (uint32_t s = 0; s < shards; ++s) {
      for (const shard::ProcessResult& r : of[s]->processes()) {
        if (r.process() >= files) continue;
        uint32_t& v = most_visible[processes[r.process()].info.host];
        v = std::max(v, r.visible_devices());
      }
    }
    for (const DeviceResult& d : devices) ++used[d.host];
    for (const auto& [host, visible] : most_visible) {
      auto t = tokens.find(host);
      auto u = used.find(host);
      unused[host] = UnusedVisibleDevices(visible, t == tokens.end() ? 0 : t->second.size(),
                                          u == used.end() ? 0 : u->second);
    }
  }

  // What the owned processes did, and the job's counters.
  HostActivity host_activity(options.top_evidence);
  Startup startup;
  for (uint32_t i = 0; i < files; ++i) startup.AddProcess(i, processes[i].info);
  CopyRates rates;
  DirectoryNames directories;
  uint64_t host_events = 0, gpu_records = 0, forgotten = 0, late = 0;
  std::vector<std::pair<uint32_t, ReportWarning>> notices, read_warnings;
  std::vector<std::pair<uint32_t, FileReport>> file_reports;
  SummarySymbols symbols;
  for (uint32_t s = 0; s < shards; ++s) {
    const shard::Summary& summary = *of[s];
    MergeHostActivity(summary.host_activity(), host_activity);
    for (const shard::ProcessResult& r : summary.processes()) {
      if (r.process() >= files) continue;
      startup.Restore(r.process(), FromMessage(r.startup(), processes[r.process()].info));
      host_activity.RestoreReads(
          r.process(),
          {.reads = r.reads().reads(), .bytes = r.reads().bytes(), .ns = r.reads().ns()});
    }
    const CopyRates part = FromMessage(summary.copy_rates());
    for (auto [into, from] :
         {std::pair{&rates.pinned, &part.pinned}, std::pair{&rates.d2h_pinned, &part.d2h_pinned},
          std::pair{&rates.d2h, &part.d2h}}) {
      into->bytes += from->bytes;
      into->ns += from->ns;
    }
    for (const shard::Directory& d : summary.directories()) directories.Add(d.key(), d.name());
    host_events += summary.host_events();
    gpu_records += summary.gpu_records();
    forgotten += summary.forgotten_candidates();
    late += summary.late_candidates();
    for (const shard::Warning& w : summary.warnings()) {
      ReportWarning warning = FromMessage(w);
      (warning.kind == WarningKind::kRecorderNotice ? notices : read_warnings)
          .push_back({w.file(), std::move(warning)});
    }
    for (const shard::FileReport& f : summary.files())
      file_reports.push_back({f.file(), FromMessage(f)});
    symbols.Add(summary);
  }
  // The reader's order: notices, skipped files, then each file's own warnings, by file.
  auto by_file = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(notices.begin(), notices.end(), by_file);
  std::stable_sort(read_warnings.begin(), read_warnings.end(), by_file);
  std::stable_sort(file_reports.begin(), file_reports.end(), by_file);
  std::vector<ReportWarning> warnings;
  for (auto& [file, w] : notices) warnings.push_back(std::move(w));
  for (const shard::Skipped& skipped : plan.skipped()) {
    warnings.push_back(
        {.kind = WarningKind::kSkippedFile, .subject = skipped.path(), .text = skipped.why()});
  }
  for (auto& [file, w] : read_warnings) warnings.push_back(std::move(w));
  std::vector<FileReport> file_list;
  for (auto& [file, f] : file_reports) file_list.push_back(std::move(f));
  std::vector<HostClock> clocks;
  for (const shard::HostClock& c : plan.clocks()) clocks.push_back(FromMessage(c));

  // Collectives and blame across ranks: every shard's records in the order of the analysis
  // window's position (`at`), shards in plan order at equal positions.
  CrossRank cross_rank;
  {
    std::vector<CrossRankReplay> replays;
    replays.reserve(shards);
    for (uint32_t s = 0; s < shards; ++s) replays.emplace_back(*file_of[s]);
    using Head = std::pair<Ns, uint32_t>;
    std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
    for (uint32_t s = 0; s < shards; ++s) {
      replays[s].LimitProcesses(files);
      if (!replays[s].done()) heads.push({replays[s].at(), s});
    }
    Ns at = std::numeric_limits<Ns>::min();
    while (!heads.empty()) {
      auto [t, s] = heads.top();
      heads.pop();
      if (t > at) {
        at = t;
        cross_rank.AdvanceTo(at);
      }
      // The shard's records made at this position, in its own order.
      CrossRankReplay& r = replays[s];
      while (!r.done() && r.at() <= at) r.Next(cross_rank);
      if (!r.done()) heads.push({r.at(), s});
    }
    cross_rank.Finish();
    for (uint32_t s = 0; s < shards; ++s) {
      if (replays[s].corrupt()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("summary of shard %u is corrupt: a cross-rank record out of range", s));
      }
    }
  }

  MergeResult result;
  result.report = BuildReport({.options = options,
                               .job_start = job_start,
                               .job_end = job_end,
                               .processes = processes,
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
                               .files = file_list,
                               .clocks = clocks},
                              symbols);
  return result;
}

}  // namespace idlescope
