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
#include "analyzer/analysis/job_merge.h"
#include "analyzer/shard/plan.h"
#include "analyzer/shard/summary.h"

namespace idlescope {
namespace {

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

absl::Status OutOfRangeError(const shard::Summary& s, const char* what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("summary of shard %u is corrupt: %s out of range", s.shard(), what));
}

// What a summary names must exist: its processes in the plan, its gaps' devices in it. (A summary
// is a file a user hands over: a corrupt one is an error, never a crash.)
absl::Status CheckSummary(const shard::Summary& s, uint32_t files) {
  auto evidence = [&](const shard::Evidence& e) {
    for (uint32_t p : e.process()) {
      if (p >= files) return false;
    }
    return true;
  };
  for (const shard::ProcessResult& r : s.processes()) {
    if (r.process() >= files) return OutOfRangeError(s, "a process");
  }
  for (const shard::DeviceResult& d : s.devices()) {
    for (const shard::CauseTotals& t : d.causes()) {
      if (!evidence(t.stacks()) || !evidence(t.objects()))
        return OutOfRangeError(s, "an evidence process");
    }
    if (d.has_last_gap() && d.last_gap().main().process() >= files)
      return OutOfRangeError(s, "a gap's process");
  }
  for (const shard::Gap& g : s.top_gaps()) {
    if (g.device() >= static_cast<uint32_t>(s.devices_size()))
      return OutOfRangeError(s, "a gap's device");
    if (g.main().process() >= files) return OutOfRangeError(s, "a gap's process");
  }
  for (const shard::ActivityTable& t : s.host_activity().tables()) {
    for (const shard::ActivityItem& item : t.items()) {
      if (item.process() >= files) return OutOfRangeError(s, "a host activity process");
    }
  }
  for (const shard::Launch& l : s.launches()) {
    if (l.stack_process() >= files) return OutOfRangeError(s, "a launch's process");
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
  std::map<std::pair<std::vector<uint32_t>, std::vector<uint32_t>>, uint32_t> shard_index;
  for (uint32_t s = 0; s < shards; ++s) {
    const shard::Shard& sh = plan.shards(static_cast<int>(s));
    shard_index[{Sorted(sh.owned()), Sorted(sh.guests())}] = s;
  }
  std::vector<const SummaryFile*> summary_of(shards, nullptr);
  for (const SummaryFile* file : summaries) {
    const shard::Summary& summary = file->state();
    if (summary.format() != kShardFormat) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "summary of format %u, this idlescope reads format %u", summary.format(), kShardFormat));
    }
    if (absl::Status s = CheckCauses(summary); !s.ok()) return s;
    // Of this plan, or of the plans its merges made (the same job digest: integrity.h).
    if (summary.job() != plan.job()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s is the summary of another plan: other trace files or analysis options (job "
          "%016x, the plan's %016x)",
          file->path(), summary.job(), plan.job()));
    }
    auto it = shard_index.find({Sorted(summary.owned()), Sorted(summary.guests())});
    if (it == shard_index.end()) continue;
    if (absl::Status s = CheckSummary(summary, files); !s.ok()) return s;
    // A shard mapped again to the job's end: its newer summary.
    const SummaryFile*& chosen = summary_of[it->second];
    if (chosen == nullptr || summary.finished_at() >= chosen->state().finished_at()) {
      chosen = file;
    }
  }
  for (uint32_t s = 0; s < shards; ++s) {
    if (summary_of[s] == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("no summary of shard %u of the plan", s));
    }
  }
  const AnalysisOptions options = ToAnalysisOptions(plan.options());

  JobInputs inputs;
  inputs.processes.reserve(files);
  for (const shard::PlannedFile& f : plan.files()) {
    inputs.processes.push_back(ToProcessInfo(f.process(), f.path()));
  }
  for (const shard::Skipped& skipped : plan.skipped()) {
    inputs.skipped.push_back(
        {.kind = WarningKind::kSkippedFile, .subject = skipped.path(), .text = skipped.why()});
  }
  for (const shard::HostClock& c : plan.clocks()) inputs.clocks.push_back(FromMessage(c));
  const std::vector<ProcessInfo> processes = inputs.processes;
  JobMerge merge(options, std::move(inputs));
  for (uint32_t s = 0; s < shards; ++s) {
    merge.Add(PartOf(summary_of[s]->state(), processes, options.top_evidence));
  }

  // Shards that drove one device become one; shards whose short tails grow long are mapped again
  // up to the job's end.
  if (JobMerge::Regroup regroup = merge.Check(); !regroup.empty()) {
    MergeResult result;
    result.replan = Unite(plan, regroup.group_of, &result.remap);
    if (!regroup.finish_later.empty()) {
      result.replan.set_job_end_hint(std::max(plan.job_end_hint(), regroup.job_end));
      for (uint32_t s : regroup.finish_later) {
        result.remap.push_back(
            result.replan.files(static_cast<int>(plan.shards(static_cast<int>(s)).owned(0)))
                .owner());
      }
    }
    std::sort(result.remap.begin(), result.remap.end());
    result.remap.erase(std::unique(result.remap.begin(), result.remap.end()), result.remap.end());
    result.why =
        regroup.shared_devices ? MergeResult::Why::kSharedDevice : MergeResult::Why::kTailGrowsLong;
    return result;
  }

  // Collectives and blame across ranks: every shard's records in the order of the analysis
  // window's position (`at`), shards in plan order at equal positions.
  CrossRank cross_rank;
  {
    std::vector<CrossRankReplay> replays;
    replays.reserve(shards);
    for (uint32_t s = 0; s < shards; ++s) replays.emplace_back(*summary_of[s]);
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

  SummarySymbols symbols;
  for (uint32_t s = 0; s < shards; ++s) symbols.Add(summary_of[s]->state());
  MergeResult result;
  result.report = merge.Build(cross_rank, symbols);
  return result;
}

}  // namespace idlescope
