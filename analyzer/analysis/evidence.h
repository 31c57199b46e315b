// Evidence as the report holds it: the per-process ids of the trace files (a file numbers its
// strings and stacks itself) turned into job-wide ids of the report's symbol table, and the
// heaviest items of a TopEvidence table resolved, merged and ordered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/analysis/attribution.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/report_symbols.h"
#include "analyzer/model/symbol_source.h"

namespace idlescope {

class EvidenceResolver {
 public:
  // `python_frames` false: stacks as they read without Python stacks (their native frames only).
  EvidenceResolver(const SymbolSource& symbols, ReportSymbols* out, bool python_frames = true)
      : symbols_(symbols), out_(out), python_frames_(python_frames) {}

  // The stack `stack_id` of `process` as evidence: its innermost kEvidenceStackFrames frames
  // outside the recorder (whose own frames say nothing about the program), Python frames merged,
  // and its first user frame (ChooseFirstUser, over all its frames); 0 when none are left.
  StackId Stack(uint32_t process, uint64_t stack_id);
  // The string `id` of `process`; 0 when the file does not define it (or it is empty).
  StringId String(uint32_t process, uint64_t id);
  StringId Intern(std::string_view s) { return out_->Intern(s); }

  // The `n` heaviest items of `top` (more are looked at, since items of several processes may
  // name the same thing and merge), each turned into an item by `resolve`; items naming the same
  // thing are one (stacks whose first user frame is the job's own code: that line, whatever
  // native path led from it; the item keeps the stack of its heaviest part); heaviest first, ties
  // by name.
  using Resolve = std::function<EvidenceItem(const EvidenceKey&)>;
  std::vector<EvidenceItem> Heaviest(const TopEvidence& top, size_t n, const Resolve& resolve);
  // `parts` (heaviest first: a merged item keeps its first part's stack) merged as Heaviest
  // merges them, heaviest first, at most `n`.
  std::vector<EvidenceItem> Merged(const std::vector<EvidenceItem>& parts, size_t n) const;

  const ReportSymbols& symbols() const { return *out_; }

 private:
  ReportFrame ToReportFrame(const SymbolFrame& frame);

  const SymbolSource& symbols_;
  ReportSymbols* out_;
  bool python_frames_;
};

// The directories of the files that evidence names, by a hash of their path: a cause explained by
// many files (a dataset of shards) is also shown by directory.
class DirectoryNames {
 public:
  // The directory of a file event's path as a key (0: no file event, or no directory).
  uint64_t Of(const HostEvent& event);
  // nullptr for a directory not named (past the bound of 65536: directories are few, files many).
  const std::string* Find(uint64_t key) const;
  // A name as Of made it (summaries, analyzer/shard/), and another part's names.
  void Add(uint64_t key, std::string name) { names_.try_emplace(key, std::move(name)); }
  void MergeFrom(const DirectoryNames& other) {
    for (const auto& [key, name] : other.names_) names_.try_emplace(key, name);
  }
  const absl::flat_hash_map<uint64_t, std::string>& names() const { return names_; }

 private:
  absl::flat_hash_map<uint64_t, std::string> names_;
};

}  // namespace idlescope
