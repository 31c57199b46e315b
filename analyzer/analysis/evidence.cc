#include "analyzer/analysis/evidence.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "analyzer/analysis/python_frames.h"
#include "analyzer/model/labels.h"

namespace idlescope {

ReportFrame EvidenceResolver::ToReportFrame(const SymbolFrame& f) {
  return {out_->Intern(f.function),
          out_->Intern(f.module),
          f.rel_pc,
          out_->Intern(f.file),
          f.line,
          f.kind};
}

StackId EvidenceResolver::Stack(uint32_t process, uint64_t stack_id) {
  std::vector<SymbolFrame> all =
      python_frames_ ? symbols_.Stack(process, stack_id) : symbols_.NativeStack(process, stack_id);
  std::erase_if(all, [](const SymbolFrame& f) {
    return f.module.find("libidlescope") != std::string_view::npos;
  });
  std::optional<FirstUserFrame> first_user;
  if (std::optional<FirstUserChoice> choice = ChooseFirstUser(all)) {
    first_user = FirstUserFrame{ToReportFrame(all[choice->index]),
                                static_cast<uint32_t>(choice->index), choice->user_code};
  }
  std::vector<ReportFrame> frames;
  for (size_t i = 0; i < all.size() && i < kEvidenceStackFrames; ++i) {
    frames.push_back(ToReportFrame(all[i]));
  }
  return out_->InternStack(frames, first_user);
}

StringId EvidenceResolver::String(uint32_t process, uint64_t id) {
  return out_->Intern(symbols_.String(process, id));
}

std::vector<EvidenceItem> EvidenceResolver::Heaviest(const TopEvidence& top, size_t n,
                                                     const Resolve& resolve) {
  std::vector<EvidenceItem> items;
  for (const auto& [key, weight] : top.Top(n * 8)) {
    EvidenceItem item = resolve(key);
    item.ns = weight.ns;
    item.bytes = weight.bytes;
    item.count = weight.count;
    items.push_back(item);
  }
  return Merged(items, n);
}

std::vector<EvidenceItem> EvidenceResolver::Merged(const std::vector<EvidenceItem>& parts,
                                                   size_t n) const {
  std::vector<EvidenceItem> items;
  std::vector<std::string> labels;
  absl::flat_hash_map<std::string, size_t> index;
  for (const EvidenceItem& part : parts) {
    std::string label = EvidenceLabel(part, *out_);
    const FirstUserFrame* first_user =
        part.kind == EvidenceKind::kStack ? out_->FirstUser(part.id) : nullptr;
    // "\n" cannot be in a label: a first user frame's key is no other item's.
    std::string group = first_user != nullptr && first_user->user_code
                            ? absl::StrCat("\n", out_->FirstUserLabel(part.id))
                            : label;
    auto [it, inserted] = index.try_emplace(std::move(group), items.size());
    if (inserted) {
      items.push_back(part);
      labels.push_back(std::move(label));
      continue;
    }
    EvidenceItem& item = items[it->second];
    item.ns += part.ns;
    item.bytes += part.bytes;
    item.count += part.count;
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
  // The same key in every process (absl's hash is seeded per process): the parts of a job analyzed
  // in separate processes (analyzer/shard/) merge their directories by key.
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (char c : directory) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  hash |= 1;
  if (!names_.contains(hash) && names_.size() < 65536) names_.emplace(hash, std::string(directory));
  return hash;
}

const std::string* DirectoryNames::Find(uint64_t key) const {
  auto it = names_.find(key);
  return it == names_.end() ? nullptr : &it->second;
}

}  // namespace idlescope
