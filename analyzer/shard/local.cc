#include "analyzer/shard/local.h"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analyzer/read/inputs.h"
#include "analyzer/shard/map.h"
#include "analyzer/shard/merge.h"
#include "analyzer/shard/plan.h"
#include "analyzer/shard/summary_file.h"
#include "google/protobuf/unknown_field_set.h"

namespace idlescope {
namespace {

// A directory of this process's own under $TMPDIR (else /tmp), removed with what it holds;
// made by `scratch`, when given, which is told of the removal.
class TemporaryDirectory {
 public:
  static absl::StatusOr<TemporaryDirectory> Create(const ScratchDirectory& scratch) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/idlescope-shards-XXXXXX");
    if (scratch.make ? !scratch.make(pattern) : mkdtemp(pattern.data()) == nullptr) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create a directory for the shards' summaries (", pattern,
                       "): ", std::strerror(errno), "; set TMPDIR, or --single-process"));
    }
    return TemporaryDirectory(std::move(pattern), scratch.removed);
  }
  TemporaryDirectory(TemporaryDirectory&& other) noexcept
      : path_(std::move(other.path_)), removed_(std::move(other.removed_)) {
    other.path_.clear();
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  ~TemporaryDirectory() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    if (removed_) removed_();
  }
  const std::string& path() const { return path_; }

 private:
  TemporaryDirectory(std::string path, std::function<void()> removed)
      : path_(std::move(path)), removed_(std::move(removed)) {}
  std::string path_;
  std::function<void()> removed_;
};

size_t Threads(size_t jobs, size_t work) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  return std::max<size_t>(1, std::min(jobs, work));
}

// Runs fn(i) for i in [0, n) on `jobs` threads.
template <typename Fn>
void ForEachParallel(size_t n, size_t jobs, Fn&& fn) {
  // libprotobuf makes its empty unknown-field set on first use, inside the library, where a
  // ThreadSanitizer build cannot see the guard that orders it with the threads' reads: made here,
  // before the threads, it is ordered by their start.
  (void)google::protobuf::UnknownFieldSet::default_instance();
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
  // Not identified (plan.h IndexFile): the shards are mapped right away, by this process, and a
  // job whose files are still being written is reported on as far as they go.
  std::vector<shard::FileIndex> index(paths->size());
  ForEachParallel(paths->size(), jobs,
                  [&](size_t i) { index[i] = IndexFile((*paths)[i], false, false); });
  if (SpansHosts(index)) {
    ForEachParallel(paths->size(), jobs,
                    [&](size_t i) { index[i] = IndexFile((*paths)[i], true, false); });
  }
  return index;
}

absl::StatusOr<ShardedJob> AnalyzeJobInShards(const std::vector<std::string>& inputs,
                                              const AnalysisOptions& options,
                                              const ReadOptions& read, size_t jobs,
                                              const ShardProgress& progress,
                                              const ScratchDirectory& scratch) {
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
  // Summaries go to files of a directory of their own (summary_file.h: bounded memory however
  // long the job), removed when done.
  absl::StatusOr<TemporaryDirectory> dir = TemporaryDirectory::Create(scratch);
  if (!dir.ok()) return dir.status();
  std::vector<std::unique_ptr<SummaryFile>> summaries;
  int round = 0;
  // Maps `which` shards of `plan`; their summaries join the others.
  auto map = [&](const shard::Plan& p, const std::vector<uint32_t>& which) -> absl::Status {
    std::vector<absl::StatusOr<MapStats>> out(which.size(), absl::UnknownError(""));
    std::vector<std::string> paths(which.size());
    for (size_t i = 0; i < which.size(); ++i) {
      paths[i] = absl::StrCat(dir->path(), "/summary-", round, "-", which[i]);
    }
    std::mutex progress_mutex;
    MapTick tick;
    if (progress) {
      tick = [&](uint64_t bytes, uint64_t records) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        progress(p.total_bytes(), bytes, records);
      };
    }
    ForEachParallel(which.size(), jobs,
                    [&](size_t i) { out[i] = MapShard(p, which[i], paths[i], tick); });
    for (size_t i = 0; i < which.size(); ++i) {
      if (!out[i].ok()) return out[i].status();
      Add(job.stats, out[i]->read);
      absl::StatusOr<std::unique_ptr<SummaryFile>> file = SummaryFile::Open(paths[i]);
      if (!file.ok()) return file.status();
      summaries.push_back(std::move(*file));
    }
    ++round;
    return absl::OkStatus();
  };
  std::vector<uint32_t> all(static_cast<size_t>(plan->shards_size()));
  for (uint32_t s = 0; s < all.size(); ++s) all[s] = s;
  if (absl::Status s = map(*plan, all); !s.ok()) return s;
  // Each round either builds the report or unites shards / moves the end hint to the job's end,
  // after which the same request cannot come again: a few rounds at most.
  for (int rounds = 0; rounds < 8; ++rounds) {
    std::vector<const SummaryFile*> view;
    for (const auto& s : summaries) view.push_back(s.get());
    absl::StatusOr<MergeResult> merged = MergeSummaries(*plan, view);
    if (!merged.ok()) return merged.status();
    if (merged->report) {
      job.report = std::move(*merged->report);
      job.shards = static_cast<uint32_t>(plan->shards_size());
      job.threads = static_cast<uint32_t>(Threads(jobs, all.size()));
      for (const auto& s : summaries) job.summary_bytes += s->bytes();
      return job;
    }
    *plan = std::move(merged->replan);
    job.remapped += static_cast<uint32_t>(merged->remap.size());
    if (absl::Status s = map(*plan, merged->remap); !s.ok()) return s;
  }
  return absl::InternalError("the shards' summaries did not merge after 8 rounds");
}

}  // namespace idlescope
