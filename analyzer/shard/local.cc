#include "analyzer/shard/local.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "analyzer/read/inputs.h"
#include "analyzer/shard/map.h"
#include "analyzer/shard/merge.h"
#include "analyzer/shard/plan.h"

namespace idlescope {
namespace {

size_t Threads(size_t jobs, size_t work) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  return std::max<size_t>(1, std::min(jobs, work));
}

// Runs fn(i) for i in [0, n) on `jobs` threads.
template <typename Fn>
void ForEachParallel(size_t n, size_t jobs, Fn&& fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  const size_t threads = Threads(jobs, n);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

void Add(ReadStats& into, const ReadStats& from) {
  into.files += from.files;
  into.packets += from.packets;
  into.host_events += from.host_events;
  into.gpu_records += from.gpu_records;
  into.bytes += from.bytes;
  into.most_open_files = std::max(into.most_open_files, from.most_open_files);
  into.suspensions += from.suspensions;
}

}  // namespace

absl::StatusOr<std::vector<shard::FileIndex>> IndexJob(const std::vector<std::string>& inputs,
                                                       size_t jobs) {
  absl::StatusOr<std::vector<TraceInput>> paths = ExpandInputs(inputs);
  if (!paths.ok()) return paths.status();
  std::vector<shard::FileIndex> index(paths->size());
  ForEachParallel(paths->size(), jobs, [&](size_t i) { index[i] = IndexFile((*paths)[i], false); });
  if (SpansHosts(index)) {
    ForEachParallel(paths->size(), jobs,
                    [&](size_t i) { index[i] = IndexFile((*paths)[i], true); });
  }
  return index;
}

absl::StatusOr<ShardedJob> AnalyzeJobInShards(const std::vector<std::string>& inputs,
                                              const AnalysisOptions& options,
                                              const ReadOptions& read, size_t jobs) {
  absl::StatusOr<std::vector<shard::FileIndex>> index = IndexJob(inputs, jobs);
  if (!index.ok()) return index.status();
  absl::StatusOr<shard::Plan> plan = MakePlan(*index, options, read.reorder_window);
  if (!plan.ok()) return plan.status();
  index->clear();

  ShardedJob job;
  if (plan->shards_size() == 1) {
    job.one_shard = true;
    job.shards = 1;
    return job;
  }
  std::vector<std::unique_ptr<shard::Summary>> summaries;
  // Maps `which` shards of `plan`, replacing their summaries.
  auto map = [&](const shard::Plan& p, const std::vector<uint32_t>& which) -> absl::Status {
    std::vector<absl::StatusOr<shard::Summary>> out(which.size(), absl::UnknownError(""));
    std::vector<MapStats> stats(which.size());
    ForEachParallel(which.size(), jobs,
                    [&](size_t i) { out[i] = MapShard(p, which[i], &stats[i]); });
    for (size_t i = 0; i < which.size(); ++i) {
      if (!out[i].ok()) return out[i].status();
      Add(job.stats, stats[i].read);
      summaries.push_back(std::make_unique<shard::Summary>(std::move(*out[i])));
    }
    return absl::OkStatus();
  };
  std::vector<uint32_t> all(static_cast<size_t>(plan->shards_size()));
  for (uint32_t s = 0; s < all.size(); ++s) all[s] = s;
  if (absl::Status s = map(*plan, all); !s.ok()) return s;
  // Each round either builds the report or unites shards / moves the end hint to the job's end,
  // after which the same request cannot come again: a few rounds at most.
  for (int round = 0; round < 8; ++round) {
    std::vector<const shard::Summary*> view;
    for (const auto& s : summaries) view.push_back(s.get());
    absl::StatusOr<MergeResult> merged = MergeSummaries(*plan, view);
    if (!merged.ok()) return merged.status();
    if (merged->report) {
      job.report = std::move(*merged->report);
      job.shards = static_cast<uint32_t>(plan->shards_size());
      job.threads = static_cast<uint32_t>(Threads(jobs, all.size()));
      for (const auto& s : summaries) job.summary_bytes += s->ByteSizeLong();
      return job;
    }
    *plan = std::move(merged->replan);
    job.remapped += static_cast<uint32_t>(merged->remap.size());
    if (absl::Status s = map(*plan, merged->remap); !s.ok()) return s;
  }
  return absl::InternalError("the shards' summaries did not merge after 8 rounds");
}

}  // namespace idlescope
