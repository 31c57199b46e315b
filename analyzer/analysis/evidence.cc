#include "analyzer/analysis/evidence.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
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

}  // namespace idlescope
