#include "analyzer/analysis/evidence.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "analyzer/model/labels.h"

namespace idlescope {

StackId EvidenceResolver::Stack(uint32_t process, uint64_t stack_id) {
  std::vector<ReportFrame> frames;
  for (const SymbolFrame& f : symbols_.Stack(process, stack_id)) {
    if (f.module.find("libidlescope") != std::string_view::npos) continue;
    frames.push_back(
        {out_->Intern(f.function), out_->Intern(f.module), f.rel_pc, out_->Intern(f.file), f.line});
    if (frames.size() == kEvidenceStackFrames) break;
  }
  return out_->InternStack(frames);
}

StringId EvidenceResolver::String(uint32_t process, uint64_t id) {
  return out_->Intern(symbols_.String(process, id));
}

std::vector<EvidenceItem> EvidenceResolver::Heaviest(const TopEvidence& top, size_t n,
                                                     const Resolve& resolve) {
  std::vector<EvidenceItem> items;
  std::vector<std::string> labels;
  absl::flat_hash_map<std::string, size_t> index;
  for (const auto& [key, weight] : top.Top(n * 8)) {
    EvidenceItem resolved = resolve(key);
    std::string label = EvidenceLabel(resolved, *out_);
    auto [it, inserted] = index.try_emplace(label, items.size());
    if (inserted) {
      items.push_back(resolved);
      labels.push_back(std::move(label));
    }
    EvidenceItem& item = items[it->second];
    item.ns += weight.ns;
    item.bytes += weight.bytes;
    item.count += weight.count;
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return items[a].ns != items[b].ns ? items[a].ns > items[b].ns : labels[a] < labels[b];
  });
  std::vector<EvidenceItem> sorted;
  for (size_t i = 0; i < order.size() && i < n; ++i) sorted.push_back(items[order[i]]);
  return sorted;
}

uint64_t DirectoryNames::Of(const HostEvent& e) {
  if (e.type < FILE_OPEN || e.type > FILE_CLOSE) return 0;
  size_t slash = e.path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return 0;
  std::string_view directory = e.path.substr(0, slash);
  uint64_t hash = absl::HashOf(directory) | 1;
  if (!names_.contains(hash) && names_.size() < 65536) names_.emplace(hash, std::string(directory));
  return hash;
}

const std::string* DirectoryNames::Find(uint64_t key) const {
  auto it = names_.find(key);
  return it == names_.end() ? nullptr : &it->second;
}

}  // namespace idlescope
